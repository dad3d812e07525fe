"""Answers a run must not act on: more calls than one answer may make (``too_many_calls``), and an answer
that leaves out the token counts a token budget needs (``budget.unmetered``)."""

from __future__ import annotations

import pytest

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import LoopSettings, RunBudget, RunFinished, ToolLoop, ToolRun
from application.tools.registry import BUDGET_EXCEEDED
from domain import ChatMessage, ChatOptions, ToolSpec, Usage
from tests.support.doubles import RecordingTools

USER = (ChatMessage.user("Summarize the meeting, please."),)
OPTIONS = ChatOptions(instructions="Record what was decided.", tools=(ToolSpec("record"),))
METERED = Usage(input_tokens=40, output_tokens=10, total_tokens=50)


def _calls(count: int, usage: Usage | None = METERED, turn: int = 1) -> ScriptedTurn:
    return ScriptedTurn(calls=tuple((f"call_{turn}_{n}", "record", "{}") for n in range(count)), usage=usage)


def _final(usage: Usage | None = METERED) -> ScriptedTurn:
    return ScriptedTurn(text="All recorded.", usage=usage)


def _codes(run: ToolRun) -> list[object]:
    return [
        record.result.result.get("error") if isinstance(record.result.result, dict) else None
        for record in run.tool_calls
    ]


async def _run(chat: ScriptedChat, settings: LoopSettings, tools: RecordingTools) -> ToolRun:
    return await ToolLoop(chat, settings).run(USER, OPTIONS, tools)


@pytest.mark.parametrize(("limit", "count"), [(3, 4), (1, 2), (128, 129)])
async def test_an_answer_with_more_calls_than_the_limit_runs_none_of_them_and_ends_the_run(
    limit: int, count: int
) -> None:
    chat, tools = ScriptedChat(_calls(count), _final()), RecordingTools()

    run = await _run(chat, LoopSettings(max_calls_per_response=limit), tools)

    assert tools.calls == []
    assert run.stop_reason == "too_many_calls"
    assert not run.complete
    assert len(chat.requests) == 1
    # The answer is kept, each of its calls answered with the stop, so the history could go back whole.
    assert run.responses[-1].function_calls == run.responses[0].function_calls
    assert len(run.responses[0].function_calls) == count
    assert _codes(run) == [BUDGET_EXCEEDED] * count
    assert run.messages[-1].role == "tool"


async def test_an_answer_at_the_limit_runs_every_call() -> None:
    chat, tools = ScriptedChat(_calls(128), _final()), RecordingTools()

    run = await _run(chat, LoopSettings(), tools)

    assert len(tools.calls) == 128
    assert run.stop_reason is None


async def test_the_events_of_a_run_with_too_many_calls_end_with_the_stopped_run() -> None:
    chat, tools = ScriptedChat(_calls(5), _final()), RecordingTools()

    events = [event async for event in ToolLoop(chat, LoopSettings(max_calls_per_response=4)).run_events(
        USER, OPTIONS, tools
    )]  # fmt: skip

    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.stop_reason == "too_many_calls"
    assert tools.calls == []


def test_the_limit_is_a_positive_whole_number() -> None:
    with pytest.raises(ValueError, match="max_calls_per_response"):
        LoopSettings(max_calls_per_response=0)


@pytest.mark.parametrize(
    ("budget", "usage"),
    [
        (RunBudget(input_tokens=10_000), None),
        (RunBudget(input_tokens=10_000), Usage(output_tokens=10)),
        (RunBudget(output_tokens=10_000), Usage(input_tokens=40)),
        (RunBudget(input_tokens=10_000, requests=5), Usage(cost_usd=0.01)),
    ],
)
async def test_a_token_budget_stops_the_run_at_an_answer_that_does_not_report_its_tokens(
    budget: RunBudget, usage: Usage | None
) -> None:
    chat, tools = ScriptedChat(_calls(2, usage), _calls(1, turn=2), _final()), RecordingTools()

    run = await _run(chat, LoopSettings(run_budget=budget), tools)

    assert run.stop_reason == "budget.unmetered"
    assert tools.calls == []
    assert len(chat.requests) == 1
    assert _codes(run) == [BUDGET_EXCEEDED, BUDGET_EXCEEDED]


async def test_a_host_that_allows_unmetered_answers_runs_on() -> None:
    budget = RunBudget(input_tokens=10_000, allow_unmetered=True)
    chat, tools = ScriptedChat(_calls(2, None), _calls(1, None, turn=2), _final(None)), RecordingTools()

    run = await _run(chat, LoopSettings(run_budget=budget), tools)

    assert run.stop_reason is None
    assert len(tools.calls) == 3
    assert len(chat.requests) == 3


async def test_without_a_token_budget_an_unmetered_answer_runs_on() -> None:
    budget = RunBudget(requests=5, tool_calls=5)
    chat, tools = ScriptedChat(_calls(2, None), _final(None)), RecordingTools()

    run = await _run(chat, LoopSettings(run_budget=budget), tools)

    assert run.stop_reason is None
    assert len(tools.calls) == 2


async def test_a_final_answer_without_usage_ends_the_run_as_finished() -> None:
    # Nothing more would be spent: the run is over either way, so it is not cut short.
    chat, tools = ScriptedChat(_calls(1), _final(None)), RecordingTools()

    run = await _run(chat, LoopSettings(run_budget=RunBudget(input_tokens=10_000)), tools)

    assert run.stop_reason is None
    assert len(tools.calls) == 1


def test_allow_unmetered_is_not_a_limit() -> None:
    assert not RunBudget(allow_unmetered=True)
    assert RunBudget(input_tokens=1, allow_unmetered=True)
