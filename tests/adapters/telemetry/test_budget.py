"""Telemetry of a run's budget: the calls a stop leaves unrun have their tool spans, and the agent span
carries the run's cost and its stop reason."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import LoopSettings, MeetingSummary, RunBudget, RunFinished
from domain import Usage
from tests.support.telemetry import TRANSCRIPT, Otel, attributes_of, traced_summary_agent


def three_calls() -> ScriptedChat:
    return ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "list_participants", "{}"),
                ("c2", "record_decision", '{"decision": "Ship on Monday", "lines": [2]}'),
                ("c3", "list_participants", "{}"),
            ),
            usage=Usage(10, 2, 12),
        ),
        ScriptedTurn(text="never asked"),
    )


async def _summarize(
    otel: Otel, chat: ScriptedChat, settings: LoopSettings, *, events: bool
) -> MeetingSummary:
    agent = traced_summary_agent(chat, otel.telemetry(), settings)
    if not events:
        return await agent.summarize(TRANSCRIPT)
    last = [event async for event in agent.summarize_events(TRANSCRIPT)][-1]
    assert isinstance(last, RunFinished)
    return last.result


@pytest.mark.parametrize("events", [False, True], ids=["whole", "events"])
async def test_calls_a_budget_stop_leaves_unrun_have_tool_spans_marked_budget_exceeded(
    otel: Otel, events: bool
) -> None:
    settings = LoopSettings(run_budget=RunBudget(tool_calls=1))

    summary = await _summarize(otel, three_calls(), settings, events=events)

    assert summary.stop_reason == "budget.tool_calls"
    (run,) = otel.named("invoke_agent")
    tools = {attributes_of(span)["gen_ai.tool.call.id"]: span for span in otel.named("execute_tool ")}
    assert sorted(tools) == ["c1", "c2", "c3"]
    assert "error.type" not in attributes_of(tools["c1"])
    for call_id, name in (("c2", "record_decision"), ("c3", "list_participants")):
        span = tools[call_id]
        assert span.name == f"execute_tool {name}"
        assert attributes_of(span)["gen_ai.tool.name"] == name
        assert attributes_of(span)["gen_ai.operation.name"] == "execute_tool"
        assert attributes_of(span)["error.type"] == "budget_exceeded"
        assert span.status.status_code is StatusCode.ERROR
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id
        assert span.context.trace_id == run.context.trace_id
    assert run.status.status_code is StatusCode.UNSET


async def test_a_run_within_its_budget_has_one_tool_span_per_call_and_none_more(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"), ("c2", "list_participants", "{}"))),
        ScriptedTurn(text="Done."),
    )

    summary = await _summarize(otel, chat, LoopSettings(run_budget=RunBudget(tool_calls=5)), events=False)

    assert summary.stop_reason is None
    spans = otel.named("execute_tool ")
    assert sorted(attributes_of(span)["gen_ai.tool.call.id"] for span in spans) == ["c1", "c2"]
    assert not any("error.type" in attributes_of(span) for span in spans)


# ---------------------------------------------------------------- the agent span's cost and stop reason


async def test_a_finished_run_carries_its_summed_cost_and_no_stop_reason(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"),), usage=Usage(10, 2, 12, cost_usd=0.00125)),
        ScriptedTurn(text="Done.", usage=Usage(30, 5, 35, cost_usd=0.0025)),
    )

    summary = await _summarize(otel, chat, LoopSettings(), events=False)

    assert summary.stop_reason is None
    (run,) = otel.named("invoke_agent")
    found = attributes_of(run)
    assert found["gen_ai.usage.cost"] == pytest.approx(0.00375)
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (40, 7)
    assert "meeting_agents.run.stop_reason" not in found


async def test_the_agent_span_and_each_chat_span_say_how_much_input_the_prompt_cache_served(
    otel: Otel,
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"),), usage=Usage(1000, 2, cached_input_tokens=0)),
        ScriptedTurn(text="Done.", usage=Usage(1000, 5, cached_input_tokens=800)),
    )

    await _summarize(otel, chat, LoopSettings(), events=False)

    (run,) = otel.named("invoke_agent")
    found = attributes_of(run)
    assert found["gen_ai.usage.cache_read.input_tokens"] == 800
    assert found["gen_ai.usage.cache_read.share"] == pytest.approx(0.4)
    shares = [attributes_of(span)["gen_ai.usage.cache_read.share"] for span in otel.named("chat ")]
    assert shares == [0.0, pytest.approx(0.8)]


async def test_a_run_without_a_reported_cost_has_no_cost_attribute(otel: Otel) -> None:
    chat = ScriptedChat(ScriptedTurn(text="Done.", usage=Usage(10, 2, 12)))

    await _summarize(otel, chat, LoopSettings(), events=False)

    (run,) = otel.named("invoke_agent")
    assert "gen_ai.usage.cost" not in attributes_of(run)


@pytest.mark.parametrize("events", [False, True], ids=["whole", "events"])
async def test_a_budget_stopped_run_carries_its_stop_reason_and_what_it_spent(
    otel: Otel, events: bool
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"),), usage=Usage(10, 2, 12, cost_usd=0.004)),
        ScriptedTurn(calls=(("c2", "list_participants", "{}"),), usage=Usage(20, 3, 23, cost_usd=0.005)),
        ScriptedTurn(text="never asked", usage=Usage(30, 4, 34, cost_usd=0.006)),
    )

    summary = await _summarize(otel, chat, LoopSettings(run_budget=RunBudget(requests=2)), events=events)

    assert (summary.stop_reason, summary.complete) == ("budget.requests", False)
    assert chat.remaining == 1
    (run,) = otel.named("invoke_agent")
    found = attributes_of(run)
    assert found["meeting_agents.run.stop_reason"] == "budget.requests"
    assert found["gen_ai.usage.cost"] == pytest.approx(0.009)
    assert run.status.status_code is StatusCode.UNSET
