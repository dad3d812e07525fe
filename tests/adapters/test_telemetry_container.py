"""The container adds the telemetry when ``agent.telemetry`` is on (the default), and nothing when off."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from dependency_injector import providers
from opentelemetry.trace import StatusCode

from adapters.container import Container, telemetry_key
from adapters.responses import ResponsesSseAdapter
from adapters.telemetry import (
    InstrumentedChat,
    InstrumentedSummaryAgent,
    InstrumentedWorkflowEditorAgent,
)
from application import SummaryAgent, ToolRegistry, WorkflowEditorAgent
from domain import ChatMessage, ChatOptions, Workflow, WorkflowStep
from tests.adapters.telemetry_support import Otel, every_text
from tests.support.gateway import (
    JSON,
    SSE,
    Recorder,
    answer,
    call_item,
    message_item,
    response_document,
    sse,
    stream_events,
)

KEY = "sk-container-telemetry-KEY-5e1f"
GATEWAY = {"base_url": "http://127.0.0.1:9/v1", "api_key": KEY, "model": "gpt-configured", "max_retries": 1}
TRANSCRIPT = "Ana: TRANSCRIPT-MARKER-2b7c. Ben: agreed."


@pytest.fixture
def otel() -> Iterator[Otel]:
    recorded = Otel()
    yield recorded
    recorded.shutdown()


@pytest.fixture
async def container(otel: Otel) -> AsyncIterator[Container]:
    built = Container()
    built.environ.override(providers.Object({}))
    built.tracer_provider.override(providers.Object(otel.tracer_provider))
    built.meter_provider.override(providers.Object(otel.meter_provider))
    yield built
    await built.aclose()
    built.reset_override()


def body(document: dict[str, Any], streaming: bool) -> httpx.Response:
    return answer(sse(stream_events(document)), SSE) if streaming else answer(json.dumps(document), JSON)


def summary_gateway(streaming: bool) -> Recorder:
    """A busy answer first (retried), then one tool round with a malformed call, then text echoing the key."""
    calls = response_document(
        [
            call_item("fc_1", "c1", "record_decision", '{"decision": "ARGS-MARKER-4d0a"'),
            call_item("fc_2", "c2", "record_decision", '{"decision": "ARGS-MARKER-4d0a"}'),
        ],
        response_id="resp_1",
    )
    final = response_document([message_item("msg_1", f"Summary. Key: {KEY}")], response_id="resp_2")
    return Recorder(
        [answer('{"error": {"message": "busy"}}', status=503), body(calls, streaming), body(final, streaming)]
    )


async def summarize(container: Container, recorder: Recorder, **agent: Any) -> None:
    container.config.from_dict({"agent": {**GATEWAY, **agent}})
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as client:
        with container.http_client.override(client):
            summary = await container.summary_agent().summarize(TRANSCRIPT)
    assert summary.decisions == ("ARGS-MARKER-4d0a",)


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_by_default_a_summary_run_is_traced_from_the_agent_down_to_each_http_attempt(
    container: Container, otel: Otel, streaming: bool
) -> None:
    await summarize(container, summary_gateway(streaming), use_streaming=streaming)

    assert isinstance(container.summary_agent(), InstrumentedSummaryAgent)
    (agent,) = otel.named("invoke_agent meeting_summary")
    chats, tools = otel.named("chat gpt-configured"), otel.named("execute_tool record_decision")
    assert (len(chats), len(tools), len(otel.spans())) == (2, 2, 5)
    assert all(
        span.parent is not None and span.parent.span_id == agent.context.span_id for span in chats + tools
    )
    first = dict(chats[0].attributes or {})
    assert (first["server.address"], first["server.port"]) == ("127.0.0.1", 9)
    assert first["gen_ai.request.model"] == "gpt-configured"
    assert first["gen_ai.response.id"] == "resp_1"
    assert [dict(e.attributes or {}).get("http.response.status_code") for e in chats[0].events] == [503, 200]
    guarded = [
        span for span in tools if dict(span.attributes or {}).get("error.type") == "invalid_tool_arguments"
    ]
    assert len(guarded) == 1
    assert guarded[0].status.status_code is StatusCode.ERROR
    assert dict(agent.attributes or {})["gen_ai.usage.input_tokens"] == 22
    assert otel.metric_names() == {"gen_ai.client.operation.duration", "gen_ai.client.token.usage"}
    for text in every_text(otel):
        assert KEY not in text
        assert "MARKER" not in text


async def test_with_capture_on_content_is_recorded_and_the_key_is_still_cut(
    container: Container, otel: Otel
) -> None:
    await summarize(container, summary_gateway(True), telemetry_capture_content=True)

    texts = list(every_text(otel))
    assert any("TRANSCRIPT-MARKER-2b7c" in text for text in texts)
    assert any("ARGS-MARKER-4d0a" in text for text in texts)
    assert any("Key: [REDACTED]" in text for text in texts)
    assert all(KEY not in text for text in texts)


async def test_with_telemetry_off_there_is_no_span_no_metric_and_no_decorator(
    container: Container, otel: Otel
) -> None:
    recorder = summary_gateway(True)
    await summarize(container, recorder, telemetry="false")

    assert telemetry_key(container.settings()) == "off"
    assert type(container.summary_agent()) is SummaryAgent
    assert type(container.workflow_editor_agent()) is WorkflowEditorAgent
    assert container.traced_chat() is container.chat()
    assert otel.spans() == ()
    assert otel.metric_names() == set()
    async with httpx.AsyncClient() as client:
        with container.http_client.override(client):
            container.openai_client.reset()
            container.openai_client()
            assert client.event_hooks == {"request": [], "response": []}


async def test_chat_stays_the_configured_chain_while_the_pipelines_talk_through_the_traced_one(
    container: Container,
) -> None:
    container.config.from_dict({"agent": GATEWAY})

    assert isinstance(container.chat(), ResponsesSseAdapter)
    traced = container.traced_chat()
    assert isinstance(traced, InstrumentedChat)
    assert traced.inner is container.chat()
    assert isinstance(container.workflow_editor_agent(), InstrumentedWorkflowEditorAgent)


async def test_a_host_tool_loop_gets_chat_and_tool_spans_with_host_decorators_inside_them(
    container: Container, otel: Otel
) -> None:
    registry = ToolRegistry()

    @registry.tool()
    def ping() -> dict[str, object]:
        """Answer pong."""
        return {"pong": True}

    seen: list[str] = []

    class Seeing:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def invoke(self, call: Any) -> Any:
            seen.append(call.call_id)
            return await self.inner.invoke(call)

    calls = response_document([call_item("fc_1", "p1", "ping", "{}")], response_id="resp_1")
    final = response_document([message_item("msg_1", "pong")], response_id="resp_2")
    recorder = Recorder([body(calls, True), body(final, True)])
    container.config.from_dict({"agent": GATEWAY})
    container.tool_invoker_decorators.add_args(Seeing)
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as client:
        with container.http_client.override(client):
            run = await container.tool_loop().run(
                (ChatMessage.user("ping"),), ChatOptions(tools=registry.specs), registry
            )

    assert run.text == "pong"
    assert seen == ["p1"]
    assert [span.name for span in otel.spans()] == [
        "chat gpt-configured",
        "execute_tool ping",
        "chat gpt-configured",
    ]
    assert otel.named("invoke_agent") == []


async def test_the_workflow_editor_run_is_traced_as_workflow_editor(container: Container, otel: Otel) -> None:
    final = response_document([message_item("msg_1", "Nothing to change.")], response_id="resp_1")
    container.config.from_dict({"agent": GATEWAY})
    async with httpx.AsyncClient(transport=httpx.MockTransport(Recorder([body(final, False)]))) as client:
        with container.http_client.override(client):
            await container.workflow_editor_agent().edit(
                Workflow("w", (WorkflowStep("s1", "Build", "build"),)), "ok"
            )

    assert [span.name for span in otel.spans()] == ["chat gpt-configured", "invoke_agent workflow_editor"]


@pytest.mark.parametrize("telemetry", ["true", "false"])
async def test_a_pipeline_built_with_its_own_options_runs_them_and_its_span_names_their_model(
    container: Container, otel: Otel, telemetry: str
) -> None:
    final = response_document([message_item("msg_1", "Nothing to change.")], response_id="resp_1")
    recorder = Recorder([body(final, False), body(final, False)])
    container.config.from_dict({"agent": {**GATEWAY, "telemetry": telemetry}})
    options = ChatOptions(model="gpt-per-run")
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as client:
        with container.http_client.override(client):
            await container.summary_agent(options=options).summarize(TRANSCRIPT)
            await container.workflow_editor_agent(options=options).edit(
                Workflow("w", (WorkflowStep("s1", "Build", "build"),)), "ok"
            )

    assert [json.loads(request.content)["model"] for request in recorder.requests] == ["gpt-per-run"] * 2
    runs = otel.named("invoke_agent")
    assert [dict(span.attributes or {})["gen_ai.request.model"] for span in runs] == (
        ["gpt-per-run"] * 2 if telemetry == "true" else []
    )
    assert [span.name for span in otel.named("chat ")] == (
        ["chat gpt-per-run"] * 2 if telemetry == "true" else []
    )
