"""Both pipelines as events: the whole call's result, every piece of text, every call, and a stop."""

from __future__ import annotations

from collections.abc import AsyncIterator

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    LoopSettings,
    RoundStarted,
    RunEvent,
    RunFinished,
    SummaryAgent,
    TextDelta,
    ToolCallFinished,
    WorkflowEditorAgent,
)
from domain import Workflow, WorkflowStep
from tests.strategies import PlannedCall, call_turns, planned_chat, summary_calls, workflow_calls, workflows
from tests.support.doubles import CallLog
from tests.support.examples import examples
from tests.support.runs import leave_at

TRANSCRIPT = "Ann: I will send the notes by Friday.\nBob: Agreed, we ship on Monday.\n"
RELEASE = Workflow("release", (WorkflowStep("build", "Build", "task"), WorkflowStep("ship", "Ship", "task")))
# Enough room that generated runs of refused calls keep their tools to the end.
SETTINGS = LoopSettings(max_consecutive_tool_errors=10)


def script(turns: list[list[PlannedCall]], texts: list[str]) -> ScriptedChat:
    """A model that says ``texts[i]`` with the calls of turn ``i``, then the last text alone."""
    return planned_chat(turns, texts, final_text=texts[-1])[0]


async def collect(events: AsyncIterator[RunEvent[object]]) -> list[RunEvent[object]]:
    return [event async for event in events]


def check_events(events: list[RunEvent[object]], *, text: str, answered_calls: int) -> object:
    """The stream's promises; returns the result its RunFinished carries."""
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert sum(isinstance(event, RunFinished) for event in events) == 1
    # The pieces after the last round started, in order, are the final answer's text.
    final_round = max(i for i, event in enumerate(events) if isinstance(event, RoundStarted))
    assert "".join(e.text for e in events[final_round:] if isinstance(e, TextDelta)) == text
    assert sum(isinstance(event, ToolCallFinished) for event in events) == answered_calls
    return last.result


texts = st.lists(st.text(max_size=30), min_size=5, max_size=5)


@settings(max_examples=examples(50))
@given(turns=call_turns(summary_calls), said=texts, concurrent=st.booleans())
async def test_summary_events_end_with_what_summarize_returns(
    turns: list[list[PlannedCall]], said: list[str], concurrent: bool
) -> None:
    loop_settings = LoopSettings(max_consecutive_tool_errors=10, concurrent_tool_calls=concurrent)
    whole = await SummaryAgent(script(turns, said), loop_settings).summarize(TRANSCRIPT)

    events = await collect(SummaryAgent(script(turns, said), loop_settings).summarize_events(TRANSCRIPT))

    result = check_events(events, text=whole.text, answered_calls=len(whole.tool_calls))
    assert result == whole
    guarded = [e.record for e in events if isinstance(e, ToolCallFinished) and e.record.guarded]
    assert len(guarded) == sum(r.guarded for r in whole.tool_calls)


@settings(max_examples=examples(50))
@given(workflow=workflows, turns=call_turns(workflow_calls), said=texts, concurrent=st.booleans())
async def test_edit_events_end_with_what_edit_returns(
    workflow: Workflow, turns: list[list[PlannedCall]], said: list[str], concurrent: bool
) -> None:
    loop_settings = LoopSettings(max_consecutive_tool_errors=10, concurrent_tool_calls=concurrent)
    whole = await WorkflowEditorAgent(script(turns, said), loop_settings).edit(workflow, "tidy it up")

    events = await collect(
        WorkflowEditorAgent(script(turns, said), loop_settings).edit_events(workflow, "tidy it up")
    )

    assert check_events(events, text=whole.text, answered_calls=len(whole.tool_calls)) == whole


async def test_an_abandoned_edit_runs_no_further_tool() -> None:
    seen = CallLog()
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_steps", "{}"), ("c2", "remove_step", '{"step_id": "ship"}'))),
        ScriptedTurn(calls=(("c3", "remove_step", '{"step_id": "build"}'),)),
        ScriptedTurn(text="Removed both."),
    )
    agent = WorkflowEditorAgent(
        chat, LoopSettings(concurrent_tool_calls=False), decorators=(seen,), approval_required_tools=()
    )
    await leave_at(agent.edit_events(RELEASE, "remove everything"), ToolCallFinished)

    assert [c.name for c in seen.calls] == ["list_steps"]
    assert len(chat.requests) == 1


async def test_a_summary_abandoned_while_the_model_writes_runs_no_tool() -> None:
    seen = CallLog()
    chat = ScriptedChat(
        ScriptedTurn(text="Let me record that.", calls=(("c1", "record_decision", '{"decision": "Ship."}'),)),
        ScriptedTurn(text="Done."),
    )
    await leave_at(SummaryAgent(chat, SETTINGS, decorators=(seen,)).summarize_events(TRANSCRIPT), TextDelta)

    assert [c.name for c in seen.calls] == []
    assert len(chat.requests) == 1
