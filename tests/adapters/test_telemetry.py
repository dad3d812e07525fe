"""Telemetry decorators: GenAI spans, attributes and metrics, over fakes and over the real adapters."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from adapters.redaction import Redactor
from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import (
    InstrumentedChat,
    InstrumentedSummaryAgent,
    InstrumentedToolInvoker,
    InstrumentedWorkflowEditorAgent,
    Telemetry,
    instrument_chat,
    instrument_http_client,
)
from application import LoopSettings, SummaryAgent, WorkflowEditorAgent
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatTransportError,
    FunctionCallContent,
    FunctionResultContent,
    ResponseFailedError,
    ToolInvokerPort,
    Usage,
    Workflow,
    WorkflowStep,
)
from tests.adapters.telemetry_support import Otel, every_text, real_adapter, served
from tests.support.gateway import (
    API_KEY,
    BASE_URL,
    Recorder,
    answer,
    call_item,
    message_item,
    response_document,
)

MODEL = "gpt-test"
TRANSCRIPT = "Ana: I will send the report by Friday.\nBen: We ship on Monday."
MALFORMED = '{"decision": "Ship on Monday"'
VALID = '{"decision": "Ship on Monday"}'


@pytest.fixture
def otel() -> Iterator[Otel]:
    recorded = Otel()
    yield recorded
    recorded.shutdown()


def summary_agent(chat: ChatPort, telemetry: Telemetry, **settings: Any) -> InstrumentedSummaryAgent:
    return InstrumentedSummaryAgent(
        instrument_chat(chat, telemetry, model=MODEL),
        LoopSettings(**settings),
        telemetry=telemetry,
        model=MODEL,
        decorators=(InstrumentedToolInvoker.decorator(telemetry),),
    )


def malformed_then_valid(**turn: Any) -> ScriptedChat:
    return ScriptedChat(
        ScriptedTurn(calls=(("c1", "record_decision", MALFORMED), ("c2", "record_decision", VALID)), **turn),
        ScriptedTurn(text="We agreed to ship on Monday.", **turn),
    )


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# ---------------------------------------------------------------- one run: the span tree


async def test_a_run_with_one_malformed_and_one_valid_call_is_one_agent_span_over_two_chats_and_two_tools(
    otel: Otel,
) -> None:
    telemetry = otel.telemetry(base_url="http://gateway.test:4000/v1")
    summary = await summary_agent(malformed_then_valid(), telemetry).summarize(TRANSCRIPT)

    assert summary.decisions == ("Ship on Monday",)
    (agent,) = otel.named("invoke_agent")
    chats, tools = otel.named("chat "), otel.named("execute_tool ")
    assert len(otel.spans()) == 5
    assert (len(chats), len(tools)) == (2, 2)
    assert agent.name == "invoke_agent meeting_summary"
    assert agent.parent is None
    assert agent.kind is SpanKind.INTERNAL
    assert attributes(agent) | {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "meeting_summary",
        "gen_ai.provider.name": "openai",
    } == attributes(agent)
    for child in (*chats, *tools):
        assert child.parent is not None
        assert child.parent.span_id == agent.context.span_id
        assert child.context.trace_id == agent.context.trace_id
    for chat in chats:
        assert chat.name == f"chat {MODEL}"
        assert chat.kind is SpanKind.CLIENT
        found = attributes(chat)
        assert found["gen_ai.operation.name"] == "chat"
        assert found["gen_ai.provider.name"] == "openai"
        assert found["gen_ai.request.model"] == MODEL
        assert found["gen_ai.response.model"] == "scripted"
        assert found["server.address"] == "gateway.test"
        assert found["server.port"] == 4000
    assert [attributes(chat)["gen_ai.response.id"] for chat in chats] == [
        "resp_scripted_1",
        "resp_scripted_2",
    ]
    assert [attributes(chat)["gen_ai.response.finish_reasons"] for chat in chats] == [
        ("tool_calls",),
        ("stop",),
    ]
    by_call = {attributes(tool)["gen_ai.tool.call.id"]: tool for tool in tools}
    guarded, valid = by_call["c1"], by_call["c2"]
    for tool in (guarded, valid):
        assert tool.name == "execute_tool record_decision"
        assert tool.kind is SpanKind.INTERNAL
        assert attributes(tool)["gen_ai.operation.name"] == "execute_tool"
        assert attributes(tool)["gen_ai.tool.name"] == "record_decision"
        assert attributes(tool)["gen_ai.tool.type"] == "function"
    assert attributes(guarded)["error.type"] == "invalid_tool_arguments"
    assert guarded.status.status_code is StatusCode.ERROR
    assert "error.type" not in attributes(valid)
    assert valid.status.status_code is StatusCode.UNSET


async def test_the_workflow_editor_run_is_an_invoke_agent_workflow_editor_span(otel: Otel) -> None:
    telemetry = otel.telemetry()
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "list_steps", ""),)), ScriptedTurn(text="Nothing to do."))
    agent = InstrumentedWorkflowEditorAgent(
        instrument_chat(chat, telemetry, model=MODEL),
        telemetry=telemetry,
        model=MODEL,
        decorators=(InstrumentedToolInvoker.decorator(telemetry),),
    )
    workflow = Workflow("release", (WorkflowStep("s1", "Build", "build"),))

    edit = await agent.edit(workflow, "Tidy up")

    assert edit.workflow == workflow
    assert isinstance(agent, WorkflowEditorAgent)
    (run,) = otel.named("invoke_agent")
    assert run.name == "invoke_agent workflow_editor"
    assert attributes(run)["gen_ai.agent.name"] == "workflow_editor"
    assert [span.name for span in otel.named("execute_tool")] == ["execute_tool list_steps"]
    assert len(otel.named("chat ")) == 2


async def test_a_failed_run_marks_its_agent_span_and_the_failed_chat_span(otel: Otel) -> None:
    telemetry = otel.telemetry()
    failure = ChatTransportError("HTTP 503 from the gateway", status_code=503, attempts=3)
    agent = summary_agent(ScriptedChat(failure), telemetry)

    with pytest.raises(ChatTransportError):
        await agent.summarize(TRANSCRIPT)

    (run,) = otel.named("invoke_agent")
    (chat,) = otel.named("chat ")
    for span in (run, chat):
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["error.type"] == "ChatTransportError"
    assert attributes(chat)["http.response.status_code"] == 503
    assert isinstance(agent, SummaryAgent)
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes or {})["error.type"] == "ChatTransportError"


# ---------------------------------------------------------------- the chat span and the metrics


@given(
    input_tokens=st.integers(min_value=0, max_value=10**9),
    output_tokens=st.integers(min_value=0, max_value=10**9),
)
async def test_usage_attributes_and_token_histograms_match_the_response_usage(
    input_tokens: int, output_tokens: int
) -> None:
    otel = Otel()
    usage = Usage(input_tokens, output_tokens, input_tokens + output_tokens)
    chat = InstrumentedChat(ScriptedChat(ScriptedTurn(text="ok", usage=usage)), otel.telemetry(), model=MODEL)

    await chat.get_response([ChatMessage.user("hi")])

    (span,) = otel.spans()
    assert attributes(span)["gen_ai.usage.input_tokens"] == input_tokens
    assert attributes(span)["gen_ai.usage.output_tokens"] == output_tokens
    tokens = {
        dict(p.attributes or {})["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")
    }
    assert (tokens["input"].sum, tokens["input"].count) == (input_tokens, 1)
    assert (tokens["output"].sum, tokens["output"].count) == (output_tokens, 1)
    for point in tokens.values():
        assert dict(point.attributes or {})["gen_ai.operation.name"] == "chat"
        assert dict(point.attributes or {})["gen_ai.request.model"] == MODEL
        assert dict(point.attributes or {})["gen_ai.response.model"] == "scripted"
    otel.shutdown()


async def test_the_histograms_use_the_conventions_units_and_bucket_boundaries(otel: Otel) -> None:
    chat = InstrumentedChat(
        ScriptedChat(ScriptedTurn(text="ok", usage=Usage(3, 4, 7))), otel.telemetry(), model=MODEL
    )

    await chat.get_response([ChatMessage.user("hi")])

    data = otel.reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    duration, tokens = metrics["gen_ai.client.operation.duration"], metrics["gen_ai.client.token.usage"]
    assert (duration.unit, tokens.unit) == ("s", "{token}")
    assert tuple(duration.data.data_points[0].explicit_bounds) == (  # type: ignore[union-attr]
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.64,
        1.28,
        2.56,
        5.12,
        10.24,
        20.48,
        40.96,
        81.92,
    )
    assert tuple(tokens.data.data_points[0].explicit_bounds) == (  # type: ignore[union-attr]
        1,
        4,
        16,
        64,
        256,
        1024,
        4096,
        16384,
        65536,
        262144,
        1048576,
        4194304,
        16777216,
        67108864,
    )


async def test_options_name_the_request_model_and_limits(otel: Otel) -> None:
    chat = InstrumentedChat(ScriptedChat(ScriptedTurn(text="ok")), otel.telemetry(), model=MODEL)
    options = ChatOptions(model="gpt-other", max_output_tokens=64, temperature=0.5)

    await chat.get_response([ChatMessage.user("hi")], options)

    (span,) = otel.spans()
    assert span.name == "chat gpt-other"
    assert attributes(span)["gen_ai.request.model"] == "gpt-other"
    assert attributes(span)["gen_ai.request.max_tokens"] == 64
    assert attributes(span)["gen_ai.request.temperature"] == 0.5
    assert "usage" not in repr(attributes(span))
    assert otel.points("gen_ai.client.token.usage") == []


async def test_a_provider_failure_keeps_what_had_arrived_on_the_span(otel: Otel) -> None:
    partial = ScriptedTurn(text="half", usage=Usage(5, 1, 6), response_id="resp_partial").response(1)
    failure = ResponseFailedError(
        "the provider failed", code="server_error", partial=partial, response_id="resp_partial"
    )
    chat = InstrumentedChat(ScriptedChat(failure), otel.telemetry(), model=MODEL)

    with pytest.raises(ResponseFailedError) as raised:
        await chat.get_response([ChatMessage.user("hi")])

    assert raised.value is failure
    (span,) = otel.spans()
    assert attributes(span)["error.type"] == "ResponseFailedError"
    assert attributes(span)["gen_ai.response.id"] == "resp_partial"
    assert attributes(span)["gen_ai.usage.input_tokens"] == 5
    assert span.status.description == "ResponseFailedError"
    assert "http.response.status_code" not in attributes(span)


async def test_an_error_that_is_not_a_chat_error_still_ends_the_span(otel: Otel) -> None:
    chat = InstrumentedChat(ScriptedChat(), otel.telemetry(), model=MODEL)

    with pytest.raises(AssertionError):
        await chat.get_response([ChatMessage.user("one request more than scripted")])

    (span,) = otel.spans()
    assert attributes(span)["error.type"] == "ScriptExhaustedError"
    assert "gen_ai.response.id" not in attributes(span)
    assert repr(chat) == f"InstrumentedChat({chat.inner!r})"


# ---------------------------------------------------------------- real adapters: JSON and streaming paths


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_real_adapter_request_after_a_retry_is_one_span_with_one_event_per_attempt(
    otel: Otel, streaming: bool
) -> None:
    document = response_document([message_item("msg_1", "Done.")], response_id="resp_real", usage=(11, 7, 18))
    recorder = Recorder(
        [answer('{"error": {"message": "busy"}}', status=503), served(document, streaming=streaming)]
    )
    adapter, _ = real_adapter(recorder, streaming=streaming, max_retries=1)
    chat = InstrumentedChat(adapter, otel.telemetry(base_url=BASE_URL), model=MODEL)

    response = await chat.get_response([ChatMessage.user("hi")])

    assert response.text == "Done."
    (span,) = otel.spans()
    found = attributes(span)
    assert found["gen_ai.response.id"] == "resp_real"
    assert found["gen_ai.response.model"] == "gpt-test-2026"
    assert found["gen_ai.response.finish_reasons"] == ("stop",)
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (11, 7)
    assert (found["server.address"], found["server.port"]) == ("gateway.test", 80)
    attempts = [dict(event.attributes or {}) for event in span.events if event.name == "http.attempt"]
    assert attempts == [
        {"attempt": 1, "http.request.resend_count": 0, "http.response.status_code": 503},
        {"attempt": 2, "http.request.resend_count": 1, "http.response.status_code": 200},
    ]
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_real_adapter_request_that_fails_marks_its_span_and_its_last_attempt(
    otel: Otel, streaming: bool
) -> None:
    recorder = Recorder([httpx.ConnectError("refused"), httpx.ConnectError("refused")])
    adapter, _ = real_adapter(recorder, streaming=streaming, max_retries=1)
    chat = InstrumentedChat(adapter, otel.telemetry(), model=MODEL)

    with pytest.raises(ChatTransportError):
        await chat.get_response([ChatMessage.user("hi")])

    (span,) = otel.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert attributes(span)["error.type"] == "ChatTransportError"
    attempts = [dict(event.attributes or {}) for event in span.events if event.name == "http.attempt"]
    assert attempts == [
        {"attempt": 1, "http.request.resend_count": 0, "error.type": "no_response"},
        {"attempt": 2, "http.request.resend_count": 1, "error.type": "ChatTransportError"},
    ]


async def test_the_attempt_hooks_are_added_once_and_ignore_requests_no_chat_span_traces(otel: Otel) -> None:
    recorder = Recorder([answer("{}")])
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    assert instrument_http_client(instrument_http_client(client)) is client
    assert len(client.event_hooks["request"]) == len(client.event_hooks["response"]) == 1

    response = await client.get("http://gateway.test/health")

    assert response.status_code == 200
    assert otel.spans() == ()
    await client.aclose()


# ---------------------------------------------------------------- content: only with capture on

SECRET_MARKERS = ("TRANSCRIPT-MARKER-7f3a", "ARGS-MARKER-91c2", "INSTRUCTION-MARKER-0d4e")


def echoing_gateway() -> Recorder:
    """A gateway that runs one tool round, then answers with text echoing the API key."""
    calls = response_document(
        [
            call_item("fc_1", "c1", "record_decision", '{"decision": "ARGS-MARKER-91c2"}'),
            call_item("fc_2", "c2", "record_decision", '{"decision": "ARGS-MARKER-91c2'),
        ],
        response_id="resp_1",
    )
    final = response_document(
        [message_item("msg_2", f"Summary; your key is {API_KEY}.")], response_id="resp_2"
    )
    return Recorder([served(calls, streaming=True), served(final, streaming=True)])


async def run_marked_summary(otel: Otel, *, capture_content: bool) -> None:
    adapter, _ = real_adapter(echoing_gateway(), streaming=True)
    telemetry = otel.telemetry(
        capture_content=capture_content, redactor=Redactor([API_KEY]), base_url=BASE_URL
    )
    await summary_agent(adapter, telemetry).summarize(f"Ana: {SECRET_MARKERS[0]}. Ben: agreed.")


async def test_by_default_no_content_and_no_key_reaches_any_attribute_event_or_metric(otel: Otel) -> None:
    await run_marked_summary(otel, capture_content=False)

    texts = list(every_text(otel))
    assert len(otel.spans()) == 5
    for text in texts:
        assert API_KEY not in text
        assert not any(marker in text for marker in SECRET_MARKERS)
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system_instr")) for key in texts)
    assert "gen_ai.tool.call.arguments" not in texts
    assert "gen_ai.tool.call.result" not in texts


async def test_with_capture_on_content_is_recorded_in_the_conventions_attributes_and_the_key_never(
    otel: Otel,
) -> None:
    await run_marked_summary(otel, capture_content=True)

    assert all(API_KEY not in text for text in every_text(otel))
    first, last = otel.named("chat ")
    sent = json.loads(attributes(first)["gen_ai.input.messages"])
    assert sent[0]["role"] == "user"
    assert SECRET_MARKERS[0] in sent[0]["parts"][0]["content"]
    assert json.loads(attributes(first)["gen_ai.system_instructions"])[0]["type"] == "text"
    answered = json.loads(attributes(first)["gen_ai.output.messages"])
    assert answered[0]["finish_reason"] == "tool_call"
    assert [part["type"] for part in answered[0]["parts"]] == ["tool_call", "tool_call"]
    assert answered[0]["parts"][0]["arguments"] == {"decision": "ARGS-MARKER-91c2"}
    assert answered[0]["parts"][1]["arguments"] == '{"decision": "ARGS-MARKER-91c2'
    history = json.loads(attributes(last)["gen_ai.input.messages"])
    assert [message["role"] for message in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"][0]["type"] == "tool_call_response"
    final = json.loads(attributes(last)["gen_ai.output.messages"])
    assert final[0]["parts"] == [{"type": "text", "content": "Summary; your key is [REDACTED]."}]
    tools = {attributes(tool)["gen_ai.tool.call.id"]: attributes(tool) for tool in otel.named("execute_tool")}
    assert tools["c1"]["gen_ai.tool.call.arguments"] == '{"decision": "ARGS-MARKER-91c2"}'
    assert json.loads(tools["c1"]["gen_ai.tool.call.result"]) == {"recorded": "decision", "count": 1}
    assert json.loads(tools["c2"]["gen_ai.tool.call.result"])["error"] == "invalid_tool_arguments"


async def test_a_key_in_a_tool_name_or_call_id_is_cut_from_the_span(otel: Otel) -> None:
    telemetry = otel.telemetry(redactor=Redactor([API_KEY]))
    invoker = InstrumentedToolInvoker(Answering(FunctionResultContent(f"id-{API_KEY}", "ok")), telemetry)

    await invoker.invoke(FunctionCallContent.parse(call_id=f"id-{API_KEY}", name=API_KEY, raw_arguments="{}"))

    (span,) = otel.spans()
    assert span.name == "execute_tool [REDACTED]"
    assert all(API_KEY not in text for text in every_text(otel))


# ---------------------------------------------------------------- the tool span on its own


class Answering:
    """A tool invoker that answers every call with one prepared result."""

    def __init__(self, result: FunctionResultContent) -> None:
        self.result = result

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        return self.result


class Raising:
    """A tool invoker that breaks its port's promise and raises."""

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        raise RuntimeError("the tool broke")


CALL = FunctionCallContent.parse(call_id="c9", name="lookup", raw_arguments="{}")


@pytest.mark.parametrize(
    ("result", "error_type"),
    [
        ({"error": "unknown_tool", "message": "no such tool"}, "unknown_tool"),
        ({"error": "duplicate_call_id", "message": "answered before"}, "duplicate_call_id"),
        ("the tool failed", "_OTHER"),
        ({"error": ""}, "_OTHER"),
    ],
)
async def test_an_error_result_marks_the_tool_span_with_its_code(
    otel: Otel, result: Any, error_type: str
) -> None:
    invoker: ToolInvokerPort = InstrumentedToolInvoker(
        Answering(FunctionResultContent("c9", result, True)), otel.telemetry()
    )

    answered = await invoker.invoke(CALL)

    assert answered.result == result
    (span,) = otel.spans()
    assert attributes(span)["error.type"] == error_type
    assert span.status.status_code is StatusCode.ERROR


async def test_a_raising_invoker_marks_the_span_and_the_error_propagates(otel: Otel) -> None:
    invoker = InstrumentedToolInvoker(Raising(), otel.telemetry())

    with pytest.raises(RuntimeError, match="the tool broke"):
        await invoker.invoke(CALL)

    (span,) = otel.spans()
    assert attributes(span)["error.type"] == "RuntimeError"
    assert repr(invoker) == f"InstrumentedToolInvoker({invoker._inner!r})"
