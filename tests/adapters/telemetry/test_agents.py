"""The instrumented pipelines: one ``invoke_agent`` span per run over its chat and tool spans, whole or as
run events (``summarize_events``, ``edit_events``), however the run ends or the caller stops."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import AgentTracing, InstrumentedToolInvoker, instrument_chat
from application import (
    ChunkSettings,
    Decision,
    Deny,
    MeetingSummary,
    RunEvent,
    RunFinished,
    SummaryAgent,
    TextDelta,
    ToolCallFinished,
    Transcript,
    WorkflowEdit,
    WorkflowEditorAgent,
)
from application.meetings.chunking import chunk_transcript
from application.meetings.grounding import transcript_lines
from domain import ChatMessage, ChatResponse, ChatTransportError, Usage, Workflow, WorkflowStep
from tests.application.meetings.test_chunking import ReadingChat, long_meeting
from tests.support.runs import leave_at
from tests.support.telemetry import MODEL, TRANSCRIPT, Otel, attributes_of, traced_summary_agent

WORKFLOW = Workflow("release", (WorkflowStep("s1", "Build", "build"),))


def two_rounds() -> ScriptedChat:
    """A malformed and a valid call in the first round, the summary in the second."""
    return ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "record_decision", '{"decision": "Ship on Monday"'),
                ("c2", "record_decision", '{"decision": "Ship on Monday", "lines": [2]}'),
            ),
            usage=Usage(10, 2, 12),
        ),
        ScriptedTurn(text="We agreed to ship on Monday.", usage=Usage(20, 8, 28)),
    )


def assert_one_run_over(otel: Otel, *, chats: int, tools: int) -> ReadableSpan:
    """The one run span, with every chat and tool span its child in its trace; returns the run span."""
    (run,) = otel.named("invoke_agent")
    children = otel.named("chat ") + otel.named("execute_tool ")
    assert (len(otel.named("chat ")), len(otel.named("execute_tool ")), len(otel.spans())) == (
        chats,
        tools,
        1 + chats + tools,
    )
    for child in children:
        assert child.parent is not None
        assert child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    return run


# ---------------------------------------------------------------- a whole run


async def test_a_run_with_one_malformed_and_one_valid_call_is_one_agent_span_over_two_chats_and_two_tools(
    otel: Otel,
) -> None:
    telemetry = otel.telemetry(base_url="http://gateway.test:4000/v1")
    summary = await traced_summary_agent(two_rounds(), telemetry).summarize(TRANSCRIPT)

    assert summary.decisions == (Decision("Ship on Monday", (2,)),)
    agent = assert_one_run_over(otel, chats=2, tools=2)
    chats, tools = otel.named("chat "), otel.named("execute_tool ")
    assert agent.name == "invoke_agent meeting_summary"
    assert agent.parent is None
    assert agent.kind is SpanKind.INTERNAL
    assert attributes_of(agent) | {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "meeting_summary",
        "gen_ai.provider.name": "openai",
    } == attributes_of(agent)
    for chat in chats:
        assert chat.name == f"chat {MODEL}"
        assert chat.kind is SpanKind.CLIENT
        found = attributes_of(chat)
        assert found["gen_ai.operation.name"] == "chat"
        assert found["gen_ai.provider.name"] == "openai"
        assert found["gen_ai.request.model"] == MODEL
        assert found["gen_ai.response.model"] == "scripted"
        assert found["server.address"] == "gateway.test"
        assert found["server.port"] == 4000
    assert [attributes_of(chat)["gen_ai.response.id"] for chat in chats] == [
        "resp_scripted_1",
        "resp_scripted_2",
    ]
    assert [attributes_of(chat)["gen_ai.response.finish_reasons"] for chat in chats] == [
        ("tool_calls",),
        ("stop",),
    ]
    by_call = {attributes_of(tool)["gen_ai.tool.call.id"]: tool for tool in tools}
    guarded, valid = by_call["c1"], by_call["c2"]
    for tool in (guarded, valid):
        assert tool.name == "execute_tool record_decision"
        assert tool.kind is SpanKind.INTERNAL
        assert attributes_of(tool)["gen_ai.operation.name"] == "execute_tool"
        assert attributes_of(tool)["gen_ai.tool.name"] == "record_decision"
        assert attributes_of(tool)["gen_ai.tool.type"] == "function"
    assert attributes_of(guarded)["error.type"] == "invalid_tool_arguments"
    assert guarded.status.status_code is StatusCode.ERROR
    assert "error.type" not in attributes_of(valid)
    assert valid.status.status_code is StatusCode.UNSET


async def test_the_workflow_editor_run_is_an_invoke_agent_workflow_editor_span(otel: Otel) -> None:
    telemetry = otel.telemetry()
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "list_steps", ""),)), ScriptedTurn(text="Nothing to do."))
    agent = WorkflowEditorAgent(
        instrument_chat(chat, telemetry, model=MODEL),
        decorators=(InstrumentedToolInvoker.decorator(telemetry),),
        hooks=AgentTracing(telemetry, MODEL),
    )

    edit = await agent.edit(WORKFLOW, "Tidy up")

    assert edit.workflow == WORKFLOW
    assert isinstance(agent, WorkflowEditorAgent)
    run = assert_one_run_over(otel, chats=2, tools=1)
    assert run.name == "invoke_agent workflow_editor"
    assert attributes_of(run)["gen_ai.agent.name"] == "workflow_editor"
    assert [span.name for span in otel.named("execute_tool")] == ["execute_tool list_steps"]


async def test_a_failed_run_marks_its_agent_span_and_the_failed_chat_span(otel: Otel) -> None:
    failure = ChatTransportError("HTTP 503 from the gateway", status_code=503, attempts=3)
    agent = traced_summary_agent(ScriptedChat(failure), otel.telemetry())

    with pytest.raises(ChatTransportError):
        await agent.summarize(TRANSCRIPT)

    (run,) = otel.named("invoke_agent")
    (chat,) = otel.named("chat ")
    for span in (run, chat):
        assert span.status.status_code is StatusCode.ERROR
        assert attributes_of(span)["error.type"] == "ChatTransportError"
    assert attributes_of(chat)["http.response.status_code"] == 503
    assert isinstance(agent, SummaryAgent)
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes or {})["error.type"] == "ChatTransportError"


async def test_a_run_whose_final_answer_names_nothing_still_ends_its_span(otel: Otel) -> None:
    bare = ChatResponse(messages=(ChatMessage.assistant("Nothing to record."),))

    summary = await traced_summary_agent(ScriptedChat(bare), otel.telemetry()).summarize(TRANSCRIPT)

    assert summary.text == "Nothing to record."
    (run,) = otel.named("invoke_agent")
    assert not {"gen_ai.response.id", "gen_ai.response.model", "gen_ai.usage.input_tokens"} & set(
        run.attributes or {}
    )


async def test_a_repeated_call_id_has_a_tool_span_with_its_refusal(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"), ("c1", "list_participants", "{}"))),
        ScriptedTurn(calls=(("c1", "list_participants", "{}"),)),  # and again in the next round
        ScriptedTurn(text="Done."),
    )

    summary = await traced_summary_agent(chat, otel.telemetry()).summarize(TRANSCRIPT)

    assert [record.result.is_error for record in summary.tool_calls] == [False, True, True]
    (run,) = otel.named("invoke_agent")
    tools = otel.named("execute_tool ")
    common = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "list_participants",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
    }
    # In the order they ended: a repeat is answered (and its span ended) as its answer is read, before
    # the round's calls run; so the first round's repeat, the call that ran, the next round's repeat.
    assert [dict(span.attributes or {}) for span in tools] == [
        {**common, "error.type": "duplicate_call_id"},
        common,
        {**common, "error.type": "duplicate_call_id"},
    ]
    assert all(span.parent is not None and span.parent.span_id == run.context.span_id for span in tools)
    assert list(run.events) == []


# ---------------------------------------------------------------- a run read as events


async def test_streamed_run_events_make_the_same_tree_as_a_whole_run(otel: Otel) -> None:
    events: list[RunEvent[MeetingSummary]] = [
        e async for e in traced_summary_agent(two_rounds(), otel.telemetry()).summarize_events(TRANSCRIPT)
    ]

    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.decisions == (Decision("Ship on Monday", (2,)),)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "We agreed to ship on Monday."
    run = assert_one_run_over(otel, chats=2, tools=2)
    assert all("gen_ai.response.time_to_first_chunk" in attributes_of(span) for span in otel.named("chat "))
    found = attributes_of(run)
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (30, 10)
    assert found["gen_ai.response.id"] == "resp_scripted_2"
    assert run.status.status_code is StatusCode.UNSET


async def test_a_caller_that_stops_reading_ends_the_run_span_and_no_further_tool_runs(otel: Otel) -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "record_decision", '{"decision": "Ship", "lines": [2]}'),
                ("c2", "list_participants", "{}"),
            )
        ),
        ScriptedTurn(calls=(("c3", "record_decision", '{"decision": "Ship on Monday", "lines": [2]}'),)),
        ScriptedTurn(text="Done."),
    )

    await leave_at(
        traced_summary_agent(chat, otel.telemetry()).summarize_events(TRANSCRIPT), ToolCallFinished
    )

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
        async for _ in traced_summary_agent(failing, otel.telemetry()).summarize_events(TRANSCRIPT):
            pass

    (run,) = otel.named("invoke_agent")
    assert attributes_of(run)["error.type"] == "ChatTransportError"
    assert run.status.status_code is StatusCode.ERROR


async def test_the_workflow_editor_events_are_one_workflow_editor_run(otel: Otel) -> None:
    telemetry = otel.telemetry()
    editor = WorkflowEditorAgent(
        instrument_chat(ScriptedChat(ScriptedTurn(text="Nothing to change.")), telemetry, model=MODEL),
        hooks=AgentTracing(telemetry, MODEL),
    )

    events = [e async for e in editor.edit_events(WORKFLOW, "ok")]

    assert isinstance(events[-1], RunFinished)
    assert [span.name for span in otel.spans()] == [f"chat {MODEL}", "invoke_agent workflow_editor"]


async def test_a_run_method_built_on_another_of_the_same_agent_opens_one_span(otel: Otel) -> None:
    class SummarizingFromEvents(SummaryAgent):
        """A host's agent whose whole-run method reads its own (traced) event stream to the end."""

        async def summarize(self, transcript: str | Transcript) -> MeetingSummary:
            return await self._observed(self._from_events(transcript), lambda summary: summary.run)

        async def _from_events(self, transcript: str | Transcript) -> MeetingSummary:
            events = [event async for event in self.summarize_events(transcript)]
            finished = events[-1]
            assert isinstance(finished, RunFinished)
            return finished.result

    class Retrying(WorkflowEditorAgent):
        """A host's agent that wraps the traced run method in a run of its own."""

        async def edit(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
            return await self._observed(super().edit(workflow, instruction), lambda edit: edit.run)

    telemetry = otel.telemetry()
    host = SummarizingFromEvents(
        instrument_chat(two_rounds(), telemetry, model=MODEL), hooks=AgentTracing(telemetry, MODEL)
    )
    editor = Retrying(ScriptedChat(ScriptedTurn(text="ok")), hooks=AgentTracing(telemetry, MODEL))

    summary = await host.summarize(TRANSCRIPT)
    await editor.edit(WORKFLOW, "ok")

    assert summary.decisions == (Decision("Ship on Monday", (2,)),)
    assert [span.name for span in otel.named("invoke_agent")] == [
        "invoke_agent meeting_summary",
        "invoke_agent workflow_editor",
    ]


# ---------------------------------------------------------------- long meetings


async def test_each_chunk_of_a_long_meeting_is_a_span_inside_the_run_holding_its_chats_and_tools(
    otel: Otel,
) -> None:
    lines, planted = long_meeting(800, 6_000)
    transcript = "\n".join(lines)
    chunks = chunk_transcript(transcript_lines(transcript), 6_000)
    chat = ReadingChat(failing=frozenset({chunks[1].first}))
    agent = traced_summary_agent(chat, otel.telemetry())
    agent.chunking = ChunkSettings(chunk_chars=6_000, chunk_concurrency=2)

    summary = await agent.summarize(transcript)

    assert summary.failed_chunks == ((chunks[1].first, chunks[1].last),)
    [run] = otel.named("invoke_agent ")
    spans = otel.named("chunk ")
    assert sorted(span.name for span in spans) == sorted(f"chunk L{c.first}-{c.last}" for c in chunks)
    by_id = {span.context.span_id: span for span in otel.spans()}
    for span in spans:
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id
        found = attributes_of(span)
        assert found["gen_ai.agent.name"] == "meeting_summary"
        assert (found["meeting_agents.chunk.first_line"], found["meeting_agents.chunk.last_line"]) in {
            (c.first, c.last) for c in chunks
        }
        failed = found["meeting_agents.chunk.first_line"] == chunks[1].first
        assert (found.get("error.type") == "ChatTransportError") is failed
        assert (span.status.status_code is StatusCode.ERROR) is failed
    # Every chat and tool span sits inside one chunk's span.
    chunk_ids = {span.context.span_id for span in spans}
    for inner in [*otel.named("chat "), *otel.named("execute_tool ")]:
        assert inner.parent is not None
        assert by_id[inner.parent.span_id].context.span_id in chunk_ids
    assert len(otel.named("execute_tool ")) == len(summary.tool_calls)
    assert planted


# ---------------------------------------------------------------- approval


async def test_a_denied_call_has_its_tool_span_in_the_resumed_run(otel: Otel) -> None:
    telemetry = otel.telemetry()

    def editor(chat: ScriptedChat) -> WorkflowEditorAgent:
        return WorkflowEditorAgent(
            instrument_chat(chat, telemetry, model=MODEL),
            decorators=(InstrumentedToolInvoker.decorator(telemetry),),
            hooks=AgentTracing(telemetry, MODEL),
        )

    removal = ScriptedTurn(calls=(("c1", "remove_step", '{"step_id": "s1"}'),))
    paused = await editor(ScriptedChat(removal)).edit(WORKFLOW, "remove Build")
    assert paused.state is not None
    # The pause ran nothing: the paused run's span holds its one chat and no tool span.
    assert [span.name for span in otel.spans()] == [f"chat {MODEL}", "invoke_agent workflow_editor"]

    edit = await editor(ScriptedChat(ScriptedTurn(text="Kept it."))).resume(paused.state, {"c1": Deny()})

    assert edit.workflow == WORKFLOW
    (tool,) = otel.named("execute_tool")
    assert tool.name == "execute_tool remove_step"
    assert attributes_of(tool)["error.type"] == "approval_denied"
    assert tool.status.status_code is StatusCode.ERROR
    runs = otel.named("invoke_agent")
    assert len(runs) == 2
    assert tool.parent is not None
    assert tool.parent.span_id == runs[-1].context.span_id
