"""What both agent pipelines share: one tool loop, base options, and a guarded run per prompt."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import ClassVar, Protocol, TypedDict, TypeVar

import attrs

from application.runs.budget import Ledger
from application.runs.events import RunEvent, RunFinished
from application.runs.loop import LoopSettings, ToolInvokerDecorator, ToolLoop
from application.runs.run import RunState, ToolRun
from application.tools.approval import Approver, Decisions
from application.tools.registry import ToolRegistry
from domain import ChatMessage, ChatOptions, ChatPort

__all__ = ["UNOBSERVED", "Part", "PipelineOptions", "RunHooks", "ToolPipeline"]

ResultT = TypeVar("ResultT")
_Events = TypeVar("_Events")


class Part(Protocol):
    """A part of a long input run on its own (a long meeting's chunk): its place among the parts and the
    first and last lines (1-based, inclusive) of the whole input it holds."""

    @property
    def index(self) -> int: ...

    @property
    def first(self) -> int: ...

    @property
    def last(self) -> int: ...


class RunHooks(Protocol):
    """What a pipeline tells of its runs as they happen, for an observer to wrap them (telemetry's
    ``invoke_agent`` spans). ``agent`` is the pipeline's :attr:`ToolPipeline.agent_name`. No method
    raises, and none changes what the run does or returns."""

    def run(self, agent: str) -> AbstractContextManager[Callable[[ToolRun], None]]:
        """Around one whole run (``summarize``, ``edit``, ``resume``), which calls what the block is
        handed with the run it produced; an exception leaving the block propagates unchanged."""
        ...

    def events(
        self,
        agent: str,
        events: AsyncGenerator[RunEvent[ResultT], None],
        run_of: Callable[[ResultT], ToolRun],
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        """``events`` (one run as it happens), passed on unchanged; ``run_of`` reads the run out of
        the ``RunFinished`` result."""
        ...

    def chunk(self, agent: str, chunk: Part) -> AbstractContextManager[Callable[[bool], None]]:
        """Around one chunk of a long meeting's run, which calls what the block is handed with whether
        the chunk's summary is complete."""
        ...


def _ignored(_: object) -> None:
    return None


class _Unobserved:
    """The hooks of a pipeline nobody observes: nothing is added."""

    @contextlib.contextmanager
    def run(self, agent: str) -> Iterator[Callable[[ToolRun], None]]:
        yield _ignored

    def events(self, agent: str, events: _Events, run_of: object) -> _Events:
        return events

    @contextlib.contextmanager
    def chunk(self, agent: str, chunk: Part) -> Iterator[Callable[[bool], None]]:
        yield _ignored


UNOBSERVED: RunHooks = _Unobserved()


class PipelineOptions(TypedDict, total=False):
    """The keyword arguments every pipeline takes (see :class:`ToolPipeline`)."""

    options: ChatOptions | None
    decorators: Sequence[ToolInvokerDecorator]
    approver: Approver | None
    hooks: RunHooks | None


class ToolPipeline:
    """Base of the agent pipelines: each run hands a per-run registry to the tool loop, which guards it.

    ``options`` are the base request options (model, reasoning, ...); a pipeline sets the
    instructions and the tools itself. ``decorators`` wrap the tool-invoker chain as in
    :class:`ToolLoop`, and ``approver`` decides held calls as there. A failed request raises a
    :class:`ToolRunError` of the adapter error's class. Each pipeline offers its run whole and as
    events (``RunEvent``, ending with ``RunFinished`` whose ``result`` is what the whole call returns).
    ``hooks`` are told of each run as it happens (:class:`RunHooks`; telemetry's spans).
    """

    agent_name: ClassVar[str] = "agent"

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        *,
        options: ChatOptions | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
        approver: Approver | None = None,
        hooks: RunHooks | None = None,
    ) -> None:
        self._loop = ToolLoop(chat, settings, decorators, approver=approver)
        self._options = options or ChatOptions()
        self._hooks = hooks or UNOBSERVED

    async def _observed(self, work: Awaitable[ResultT], run_of: Callable[[ResultT], ToolRun]) -> ResultT:
        """``work`` (one whole run) inside the hooks' :meth:`RunHooks.run`."""
        with self._hooks.run(self.agent_name) as finished:
            result = await work
            finished(run_of(result))
        return result

    def _observed_events(
        self, events: AsyncGenerator[RunEvent[ResultT], None], run_of: Callable[[ResultT], ToolRun]
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        """``events`` (one run as it happens) through the hooks' :meth:`RunHooks.events`."""
        return self._hooks.events(self.agent_name, events, run_of)

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
