"""Run events (``summarize_events``, ``edit_events``): a whole run's span tree, however the caller stops."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.trace import StatusCode

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import (
    InstrumentedSummaryAgent,
    InstrumentedToolInvoker,
    InstrumentedWorkflowEditorAgent,
    Telemetry,
    instrument_chat,
)
from application import MeetingSummary, RunEvent, RunFinished, TextDelta, ToolCallFinished, WorkflowEdit
from domain import ChatMessage, ChatPort, ChatResponse, ChatTransportError, Usage, Workflow, WorkflowStep
from tests.adapters.telemetry_support import Otel

MODEL = "gpt-test"
TRANSCRIPT = "Ana: I will send the report by Friday.\nBen: We ship on Monday."


@pytest.fixture
def otel() -> Iterator[Otel]:
    recorded = Otel()
    yield recorded
    recorded.shutdown()


def agent(chat: ChatPort, telemetry: Telemetry) -> InstrumentedSummaryAgent:
    return InstrumentedSummaryAgent(
        instrument_chat(chat, telemetry, model=MODEL),
        telemetry=telemetry,
        model=MODEL,
        decorators=(InstrumentedToolInvoker.decorator(telemetry),),
    )


def two_rounds() -> ScriptedChat:
    return ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "record_decision", '{"decision": '),
                ("c2", "record_decision", '{"decision": "Ship"}'),
            ),
            usage=Usage(10, 2, 12),
        ),
        ScriptedTurn(text="We agreed to ship on Monday.", usage=Usage(20, 8, 28)),
    )


async def test_streamed_run_events_make_the_same_tree_as_a_whole_run(otel: Otel) -> None:
    events: list[RunEvent[MeetingSummary]] = [
        e async for e in agent(two_rounds(), otel.telemetry()).summarize_events(TRANSCRIPT)
    ]

    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.decisions == ("Ship",)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "We agreed to ship on Monday."
    (run,) = otel.named("invoke_agent meeting_summary")
    chats, tools = otel.named("chat "), otel.named("execute_tool ")
    assert (len(chats), len(tools), len(otel.spans())) == (2, 2, 5)
    assert all(
        span.parent is not None and span.parent.span_id == run.context.span_id for span in chats + tools
    )
    assert all("gen_ai.response.time_to_first_chunk" in (span.attributes or {}) for span in chats)
    found = dict(run.attributes or {})
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (30, 10)
    assert found["gen_ai.response.id"] == "resp_scripted_2"
    assert run.status.status_code is StatusCode.UNSET


async def test_a_caller_that_stops_reading_ends_the_run_span_and_no_further_tool_runs(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(("c1", "record_decision", '{"decision": "Ship"}'), ("c2", "list_participants", "{}"))
        ),
        ScriptedTurn(calls=(("c3", "record_decision", '{"decision": "Later"}'),)),
        ScriptedTurn(text="Done."),
    )
    events = agent(chat, otel.telemetry()).summarize_events(TRANSCRIPT)

    async for event in events:
        if isinstance(event, ToolCallFinished):
            break
    await events.aclose()

    (run,) = otel.named("invoke_agent")
    assert [event.name for event in run.events] == ["run.abandoned"]
    assert run.status.status_code is StatusCode.UNSET
    # The first round's calls ran together; the second round never started.
    assert sorted(span.name for span in otel.named("execute_tool ")) == [
        "execute_tool list_participants",
        "execute_tool record_decision",
    ]
    assert len(otel.named("chat ")) == 1
    assert all(span.end_time is not None for span in otel.spans())


async def test_a_failed_run_of_events_marks_its_span(otel: Otel) -> None:
    failing = ScriptedChat(ChatTransportError("HTTP 502", status_code=502))

    with pytest.raises(ChatTransportError):
        async for _ in agent(failing, otel.telemetry()).summarize_events(TRANSCRIPT):
            pass

    (run,) = otel.named("invoke_agent")
    assert dict(run.attributes or {})["error.type"] == "ChatTransportError"
    assert run.status.status_code is StatusCode.ERROR


async def test_the_workflow_editor_events_are_one_workflow_editor_run(otel: Otel) -> None:
    telemetry = otel.telemetry()
    editor = InstrumentedWorkflowEditorAgent(
        instrument_chat(ScriptedChat(ScriptedTurn(text="Nothing to change.")), telemetry, model=MODEL),
        telemetry=telemetry,
        model=MODEL,
    )

    events = [
        e async for e in editor.edit_events(Workflow("w", (WorkflowStep("s1", "Build", "build"),)), "ok")
    ]

    assert isinstance(events[-1], RunFinished)
    assert [span.name for span in otel.spans()] == [f"chat {MODEL}", "invoke_agent workflow_editor"]


async def test_a_run_method_built_on_another_of_the_same_agent_opens_one_span(otel: Otel) -> None:
    class SummarizingFromEvents(InstrumentedSummaryAgent):
        """A host's agent whose whole-run method reads its own event stream to the end."""

        async def summarize(self, transcript: str) -> MeetingSummary:
            with self._agent_run():
                events = [event async for event in self.summarize_events(transcript)]
            finished = events[-1]
            assert isinstance(finished, RunFinished)
            return finished.result

    class Retrying(InstrumentedWorkflowEditorAgent):
        """A host's agent that wraps the traced run method in a run of its own."""

        async def edit(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
            with self._agent_run():
                return await super().edit(workflow, instruction)

    telemetry = otel.telemetry()
    host = SummarizingFromEvents(
        instrument_chat(two_rounds(), telemetry, model=MODEL), telemetry=telemetry, model=MODEL
    )
    editor = Retrying(ScriptedChat(ScriptedTurn(text="ok")), telemetry=telemetry, model=MODEL)

    summary = await host.summarize(TRANSCRIPT)
    await editor.edit(Workflow("w", (WorkflowStep("s1", "Build", "build"),)), "ok")

    assert summary.decisions == ("Ship",)
    assert [span.name for span in otel.named("invoke_agent")] == [
        "invoke_agent meeting_summary",
        "invoke_agent workflow_editor",
    ]


async def test_a_run_whose_final_answer_names_nothing_still_ends_its_span(otel: Otel) -> None:
    bare = ChatResponse(messages=(ChatMessage.assistant("Nothing to record."),))

    summary = await agent(ScriptedChat(bare), otel.telemetry()).summarize(TRANSCRIPT)

    assert summary.text == "Nothing to record."
    (run,) = otel.named("invoke_agent")
    assert not {"gen_ai.response.id", "gen_ai.response.model", "gen_ai.usage.input_tokens"} & set(
        run.attributes or {}
    )


async def test_a_repeated_call_id_answered_by_the_loop_is_an_event_on_the_run(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"), ("c1", "list_participants", "{}"))),
        ScriptedTurn(text="Done."),
    )

    summary = await agent(chat, otel.telemetry()).summarize(TRANSCRIPT)

    assert [record.result.is_error for record in summary.tool_calls] == [False, True]
    (run,) = otel.named("invoke_agent")
    assert [(event.name, dict(event.attributes or {})) for event in run.events] == [
        (
            "tool_call.duplicate",
            {
                "gen_ai.tool.name": "list_participants",
                "gen_ai.tool.call.id": "c1",
                "error.type": "duplicate_call_id",
            },
        )
    ]
    assert len(otel.named("execute_tool ")) == 1
