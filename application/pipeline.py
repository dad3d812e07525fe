"""What both agent pipelines share: one tool loop, base options, and a guarded run per prompt."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import TypeVar

import attrs

from application.approval import Approver, Decisions
from application.budget import Ledger
from application.events import RunEvent, RunFinished
from application.loop import LoopSettings, ToolInvokerDecorator, ToolLoop
from application.run import RunState, ToolRun
from application.tools import ToolRegistry
from domain import ChatMessage, ChatOptions, ChatPort

__all__ = ["ToolPipeline"]

ResultT = TypeVar("ResultT")


class ToolPipeline:
    """Base of the agent pipelines: each run hands a per-run registry to the tool loop, which guards it.

    ``options`` are the base request options (model, reasoning, ...); a pipeline sets the
    instructions and the tools itself. ``decorators`` wrap the tool-invoker chain as in
    :class:`ToolLoop`, and ``approver`` decides held calls as there. A failed request raises a
    :class:`ToolRunError` of the adapter error's class. Each pipeline offers its run whole and as
    events (``RunEvent``, ending with ``RunFinished`` whose ``result`` is what the whole call returns).
    """

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        *,
        options: ChatOptions | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
        approver: Approver | None = None,
    ) -> None:
        self._loop = ToolLoop(chat, settings, decorators, approver=approver)
        self._options = options or ChatOptions()

    @property
    def settings(self) -> LoopSettings:
        return self._loop.settings

    async def _run(
        self, prompt: str, instructions: str, registry: ToolRegistry, ledger: Ledger | None = None
    ) -> ToolRun:
        """One guarded run; ``ledger`` shares a budget and deadline with other runs (else its own)."""
        options = attrs.evolve(self._options, instructions=instructions, tools=registry.specs)
        return await self._loop.run((ChatMessage.user(prompt),), options, registry, ledger=ledger)

    async def _resume(self, state: RunState, decisions: Decisions, registry: ToolRegistry) -> ToolRun:
        return await self._loop.resume(state, decisions, registry)

    def _resume_events(
        self,
        state: RunState,
        decisions: Decisions,
        registry: ToolRegistry,
        finish: Callable[[ToolRun], ResultT],
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        """The loop's events for a resumed run, its ``RunFinished`` carrying ``finish(run)`` instead."""
        return self._finished(self._loop.resume_events(state, decisions, registry), finish)

    def _run_events(
        self, prompt: str, instructions: str, registry: ToolRegistry, finish: Callable[[ToolRun], ResultT]
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        """The loop's events for one run, its ``RunFinished`` carrying ``finish(run)`` instead."""
        options = attrs.evolve(self._options, instructions=instructions, tools=registry.specs)
        return self._finished(self._loop.run_events((ChatMessage.user(prompt),), options, registry), finish)

    @staticmethod
    async def _finished(
        loop_events: AsyncGenerator[RunEvent[ToolRun], None], finish: Callable[[ToolRun], ResultT]
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        # Closing this generator closes the loop's at once, so an abandoned run starts no further tool.
        async with contextlib.aclosing(loop_events) as events:
            async for event in events:
                yield RunFinished(finish(event.result)) if isinstance(event, RunFinished) else event
