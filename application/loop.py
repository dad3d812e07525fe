"""The function-invocation loop: ask the model, run its tool calls through the guard, repeat."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TypeAlias

import attrs

from application.guard import GuardedToolInvoker
from application.run import ToolCallRecord, ToolRun, ToolRunError
from application.tools import DUPLICATE_CALL_ID, error_result
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    ToolInvokerPort,
)

__all__ = ["LoopSettings", "ToolInvokerDecorator", "ToolLoop"]

ToolInvokerDecorator: TypeAlias = Callable[[ToolInvokerPort], ToolInvokerPort]
"""Wraps a tool invoker in another (telemetry, approval, rate limits): see :class:`ToolLoop`."""


@attrs.frozen
class LoopSettings:
    """Limits of one run, with the defaults of Microsoft.Extensions.AI's function invoker.

    After ``max_iterations`` rounds of tool calls, one last request is sent without tools. After
    ``max_consecutive_errors`` rounds in a row in which some call answered with an error (invalid
    arguments included), tools are no longer offered and the model answers as it can.
    ``concurrent_invocation`` runs the calls of one response concurrently; results keep call order.
    ``detailed_errors`` adds exception type and text to ``tool_failed`` results (for debugging only).
    """

    max_iterations: int = attrs.field(default=40, validator=attrs.validators.ge(1))
    max_consecutive_errors: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    concurrent_invocation: bool = True
    detailed_errors: bool = False


class ToolLoop:
    """Runs a conversation to a final answer, answering every tool call through the guard.

    Each round appends the model's output exactly as the ``ChatPort`` returned it (so function
    calls keep their raw argument strings) and one ``tool`` message with one result per call, in
    call order. A call id runs at most once per run: a call whose id was already answered (earlier
    in the same response or in an earlier round) gets a ``duplicate_call_id`` error result and
    never reaches the invoker chain. The first request of a run goes with initiator ``user``, every
    later one with ``agent``. When a request fails, the adapter's :class:`ChatError` is re-raised with ``run``
    set to the run so far.

    The invoker chain: hand :meth:`run` the raw tools (a :class:`ToolRegistry` or any
    ``ToolInvokerPort``); each run builds ``decorators[-1](... decorators[0](GuardedToolInvoker(tools)))``
    itself. The guard is therefore always there, exactly once, directly around the tools, and every
    decorator (the first innermost, the last outermost) sees every call the guard sees, refused ones
    included. A decorator is any ``Callable[[ToolInvokerPort], ToolInvokerPort]``; it is applied
    once per run, so it may keep per-run state. What a decorator raises ends the run.
    """

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
    ) -> None:
        self._chat = chat
        self._settings = settings or LoopSettings()
        self._decorators = tuple(decorators)

    @property
    def settings(self) -> LoopSettings:
        return self._settings

    async def run(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        invoker: ToolInvokerPort,
    ) -> ToolRun:
        """Send ``messages`` with ``options`` and keep going while the model calls tools.

        ``invoker`` runs the tools; the loop puts the guard and its decorators around it.
        """
        guard = GuardedToolInvoker(invoker)
        chain: ToolInvokerPort = guard
        for decorate in self._decorators:
            chain = decorate(chain)
        base = options or ChatOptions()
        settings = self._settings
        produced: list[ChatMessage] = []
        responses: list[ChatResponse] = []
        records: list[ToolCallRecord] = []
        answered: set[str] = set()
        iterations = 0
        consecutive_errors = 0
        offer_tools = bool(base.tools)
        while True:
            request = attrs.evolve(base, initiator="agent" if responses else "user")
            if not offer_tools:
                request = attrs.evolve(request, tools=(), tool_choice=None)
            try:
                response = await self._chat.get_response((*messages, *produced), request)
            except ChatError as error:
                run = ToolRun(tuple(produced), tuple(responses), tuple(records), iterations)
                raise ToolRunError.from_error(error, run) from error
            responses.append(response)
            produced.extend(response.messages)
            calls = response.function_calls
            # Calls made when no tools were offered are left unanswered, as the last answer.
            if not calls or not offer_tools:
                break
            answers = await self._answer(chain, guard, calls, answered)
            produced.append(ChatMessage("tool", tuple(answer.result for answer in answers)))
            records.extend(answers)
            iterations += 1
            consecutive_errors = consecutive_errors + 1 if any(a.result.is_error for a in answers) else 0
            if iterations >= settings.max_iterations or consecutive_errors >= settings.max_consecutive_errors:
                offer_tools = False
        return ToolRun(tuple(produced), tuple(responses), tuple(records), iterations)

    async def _answer(
        self,
        chain: ToolInvokerPort,
        guard: GuardedToolInvoker,
        calls: Sequence[FunctionCallContent],
        answered: set[str],
    ) -> tuple[ToolCallRecord, ...]:
        """One record per call, in call order; a call id already answered in the run is not run again."""
        first: dict[int, FunctionCallContent] = {}
        for position, call in enumerate(calls):
            if call.call_id not in answered:
                answered.add(call.call_id)
                first[position] = call
        if self._settings.concurrent_invocation and len(first) > 1:
            results = await asyncio.gather(*(chain.invoke(call) for call in first.values()))
        else:
            results = [await chain.invoke(call) for call in first.values()]
        ran = dict(zip(first, results, strict=True))
        return tuple(
            ToolCallRecord(call, _for_call(call, ran[position]), guarded=call.call_id in guard.refused)
            if position in ran
            else ToolCallRecord(call, _duplicate(call), guarded=True)
            for position, call in enumerate(calls)
        )


def _for_call(call: FunctionCallContent, result: FunctionResultContent) -> FunctionResultContent:
    # The guard holds the tools to this already; a decorator outside it might not.
    return result if result.call_id == call.call_id else attrs.evolve(result, call_id=call.call_id)


def _duplicate(call: FunctionCallContent) -> FunctionResultContent:
    return error_result(
        call.call_id,
        DUPLICATE_CALL_ID,
        "The tool was not run: a call with this call id was already answered in this conversation.",
    )
