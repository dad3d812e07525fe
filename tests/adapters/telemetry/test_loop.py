"""A bare ``ToolLoop`` with the telemetry decorator in its chain: every answered call has its tool span,
the calls the loop answers itself (a repeated call id, a call a budget stop leaves unrun) and the
calls a person denied included, with no agent span around the run."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import InstrumentedToolInvoker
from adapters.telemetry.tools import error_code
from application import (
    AnsweredByLoop,
    Deny,
    LoopSettings,
    RunBudget,
    RunFinished,
    ToolLoop,
    ToolRegistry,
    ToolRun,
)
from domain import ChatMessage, ChatOptions, FunctionCallContent, FunctionResultContent, ToolInvokerPort
from tests.support.telemetry import Otel

ASK = (ChatMessage.user("go"),)


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool()
    def ping() -> dict[str, object]:
        """Answer pong."""
        return {"pong": True}

    @tools.tool(needs_approval=True)
    def wipe() -> dict[str, object]:
        """Wipe everything."""
        return {"wiped": True}

    return tools


def loop(otel: Otel, chat: ScriptedChat, settings: LoopSettings | None = None) -> ToolLoop:
    return ToolLoop(chat, settings, decorators=(InstrumentedToolInvoker.decorator(otel.telemetry()),))


async def run(tool_loop: ToolLoop, tools: ToolRegistry, *, events: bool) -> ToolRun:
    options = ChatOptions(tools=tools.specs)
    if not events:
        return await tool_loop.run(ASK, options, tools)
    last = [event async for event in tool_loop.run_events(ASK, options, tools)][-1]
    assert isinstance(last, RunFinished)
    return last.result


def codes(otel: Otel) -> list[tuple[str, str]]:
    """Each tool span's call id and error type ("" for none), sorted (concurrent calls end in any order)."""
    return sorted(
        (attributes(span)["gen_ai.tool.call.id"], attributes(span).get("error.type", ""))
        for span in otel.named("execute_tool ")
    )


def answered(tool_run: ToolRun) -> list[tuple[str, str]]:
    """The same pairs read from the run's records: one span per answered call, each with its code."""
    return sorted(
        (record.call.call_id, error_code(record.result.result) if record.result.is_error else "")
        for record in tool_run.tool_calls
    )


@pytest.mark.parametrize("events", [False, True], ids=["whole", "events"])
async def test_a_repeated_call_id_has_its_tool_span_in_a_bare_loop(otel: Otel, events: bool) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "ping", "{}"), ("c1", "ping", "{}"))),
        ScriptedTurn(calls=(("c1", "ping", "{}"),)),  # and again in the next round
        ScriptedTurn(text="Done."),
    )

    tool_run = await run(loop(otel, chat), registry(), events=events)

    assert codes(otel) == answered(tool_run)
    assert codes(otel) == [("c1", ""), ("c1", "duplicate_call_id"), ("c1", "duplicate_call_id")]
    for span in otel.named("execute_tool "):
        assert span.name == "execute_tool ping"
        assert attributes(span)["gen_ai.operation.name"] == "execute_tool"
        assert attributes(span)["gen_ai.tool.type"] == "function"
        failed = "error.type" in attributes(span)
        assert (span.status.status_code is StatusCode.ERROR) is failed


@pytest.mark.parametrize("events", [False, True], ids=["whole", "events"])
async def test_calls_a_budget_stop_leaves_unrun_have_their_tool_spans_in_a_bare_loop(
    otel: Otel, events: bool
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "ping", "{}"), ("c2", "ping", "{}"), ("c3", "ping", "{}"))),
        ScriptedTurn(text="never asked"),
    )
    settings = LoopSettings(run_budget=RunBudget(tool_calls=1))

    tool_run = await run(loop(otel, chat, settings), registry(), events=events)

    assert tool_run.stop_reason == "budget.tool_calls"
    assert codes(otel) == answered(tool_run)
    assert codes(otel) == [("c1", ""), ("c2", "budget_exceeded"), ("c3", "budget_exceeded")]


async def test_the_loops_own_answers_sit_in_the_hosts_current_span(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "ping", "{}"), ("c1", "ping", "{}"))),
        ScriptedTurn(text="Done."),
    )
    tracer = otel.tracer_provider.get_tracer("host")

    with tracer.start_as_current_span("host request") as host:
        await run(loop(otel, chat), registry(), events=False)

    tools = otel.named("execute_tool ")
    assert len(tools) == 2
    for span in tools:
        assert span.parent is not None
        assert span.parent.span_id == host.get_span_context().span_id


async def test_a_denied_call_has_its_tool_span_in_a_bare_loop(otel: Otel) -> None:
    tools = registry()
    wiping = ScriptedChat(ScriptedTurn(calls=(("w1", "wipe", "{}"),)))
    paused = await run(loop(otel, wiping), tools, events=False)
    assert paused.state is not None
    assert otel.named("execute_tool ") == []  # the pause ran nothing

    resumed = await loop(otel, ScriptedChat(ScriptedTurn(text="Kept it."))).resume(
        paused.state, {"w1": Deny("not today")}, tools
    )

    assert resumed.text == "Kept it."
    (span,) = otel.named("execute_tool ")
    assert span.name == "execute_tool wipe"
    assert attributes(span)["error.type"] == "approval_denied"
    assert span.status.status_code is StatusCode.ERROR


async def test_a_host_link_that_hears_of_the_loops_answers_is_told_in_chain_order() -> None:
    heard: list[tuple[str, str, object]] = []

    class Listening:
        def __init__(self, inner: ToolInvokerPort, name: str) -> None:
            self._inner, self._name = inner, name

        async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
            return await self._inner.invoke(call)

        def answered_by_loop(self, call: FunctionCallContent, result: FunctionResultContent) -> None:
            heard.append((self._name, call.call_id, result.result))

    class Deaf:  # a link without the method hears nothing, and the chain still runs through it
        def __init__(self, inner: ToolInvokerPort) -> None:
            self._inner = inner

        async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
            return await self._inner.invoke(call)

    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "ping", "{}"), ("c1", "ping", "{}"))),
        ScriptedTurn(text="Done."),
    )
    tool_loop = ToolLoop(
        chat,
        decorators=(lambda inner: Listening(inner, "inner"), Deaf, lambda inner: Listening(inner, "outer")),
    )

    tool_run = await tool_loop.run(ASK, ChatOptions(tools=registry().specs), registry())

    duplicate = tool_run.tool_calls[1].result.result
    assert isinstance(duplicate, dict)
    assert duplicate["error"] == "duplicate_call_id"
    assert heard == [("inner", "c1", duplicate), ("outer", "c1", duplicate)]
    assert isinstance(Listening(registry(), "x"), AnsweredByLoop)
    assert not isinstance(Deaf(registry()), AnsweredByLoop)
