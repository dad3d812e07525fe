"""What both agent pipelines share: one tool loop, base options, and a run per prompt through the guard."""

from __future__ import annotations

import attrs

from application.guard import GuardedToolInvoker
from application.loop import LoopSettings, ToolLoop, ToolRun
from application.tools import ToolRegistry
from domain import ChatMessage, ChatOptions, ChatPort

__all__ = ["ToolPipeline"]


class ToolPipeline:
    """Base of the agent pipelines: each run offers a per-run registry, always wrapped in the guard.

    ``options`` are the base request options (model, reasoning, ...); a pipeline sets the
    instructions and the tools itself. Runs raise the adapter's :class:`ChatError`, with ``run`` set.
    """

    def __init__(self, chat: ChatPort, settings: LoopSettings, *, options: ChatOptions | None = None) -> None:
        self._loop = ToolLoop(chat, settings)
        self._options = options or ChatOptions()

    @property
    def settings(self) -> LoopSettings:
        return self._loop.settings

    async def _run(self, prompt: str, instructions: str, registry: ToolRegistry) -> ToolRun:
        options = attrs.evolve(self._options, instructions=instructions, tools=registry.specs)
        return await self._loop.run((ChatMessage.user(prompt),), options, GuardedToolInvoker(registry))
