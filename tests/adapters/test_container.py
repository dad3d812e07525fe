"""The composition root: adapter selection, configuration layers, overrides, the chains, closing, and the
telemetry switch (``agent.telemetry``: everything traced when on, the default, and nothing added when off)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
import uvicorn
from dependency_injector import providers
from opentelemetry.trace import StatusCode

from adapters.container import HTTP_LIMITS, Container, chat_key, telemetry_key
from adapters.offline import OfflineResponsesServer
from adapters.offline.render import call_item, message_item
from adapters.responses import ResponsesJsonAdapter, ResponsesSseAdapter
from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.settings import ConfigurationError, load_config_file
from adapters.telemetry import AgentTracing, InstrumentedChat
from application import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Decision,
    RunFinished,
    SummaryAgent,
    TextDelta,
    ToolLoop,
    ToolRegistry,
    ToolRun,
    WorkflowEditorAgent,
)
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    FunctionCallContent,
    FunctionResultContent,
    ToolInvokerPort,
    Workflow,
    WorkflowStep,
)
from tests.strategies import MARKER
from tests.support.doubles import CallLog, RequestLog
from tests.support.gateway import Recorder, answer, response_document, served
from tests.support.telemetry import Otel, every_text

KEY = "sk-container-test"
GATEWAY = {"base_url": "http://127.0.0.1:9/v1", "api_key": KEY}


@pytest.fixture
async def container(otel: Otel) -> AsyncIterator[Container]:
    built = Container()
    built.environ.override(providers.Object({}))  # the test's own environment must not leak in
    # Telemetry is on by default: its spans and metrics go to the test's own providers.
    built.tracer_provider.override(providers.Object(otel.tracer_provider))
    built.meter_provider.override(providers.Object(otel.meter_provider))
    yield built
    await built.aclose()
    built.reset_override()


@pytest.mark.parametrize(
    ("spelling", "adapter"),
    [
        (True, ResponsesSseAdapter), (False, ResponsesJsonAdapter),
        ("true", ResponsesSseAdapter), ("false", ResponsesJsonAdapter),
        ("1", ResponsesSseAdapter), ("0", ResponsesJsonAdapter),
        ("yes", ResponsesSseAdapter), ("no", ResponsesJsonAdapter),
        (1, ResponsesSseAdapter), (0, ResponsesJsonAdapter),
    ],
)  # fmt: skip
def test_chat_selects_the_adapter_for_every_spelling(
    container: Container, spelling: object, adapter: type[object]
) -> None:
    container.config.from_dict({"agent": {**GATEWAY, "use_streaming": spelling}})
    chat = container.chat_adapter()
    assert isinstance(chat, adapter)
    assert chat is container.chat_adapter()


def test_streaming_is_the_default(container: Container) -> None:
    container.config.from_dict({"agent": GATEWAY})
    assert chat_key(container.settings()) == "streaming"
    assert isinstance(container.chat_adapter(), ResponsesSseAdapter)


@pytest.mark.parametrize("spelling", ["false", "0", "no", "NO"])
def test_environment_beats_the_config(container: Container, spelling: str) -> None:
    container.config.from_dict({"agent": {**GATEWAY, "use_streaming": True, "model": "from-config"}})
    container.environ.override(providers.Object({"AGENT_USE_STREAMING": spelling, "AGENT_MODEL": "from-env"}))
    assert isinstance(container.chat_adapter(), ResponsesJsonAdapter)
    assert container.settings().agent.model == "from-env"


def test_yaml_file_and_defaults(container: Container, tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(
        "agent:\n  base_url: http://127.0.0.1:9/v1\n  api_key: sk-file\n  use_streaming: 'no'\n",
        encoding="utf-8",
    )
    container.config.from_yaml(path)
    agent = container.settings().agent
    assert isinstance(container.chat_adapter(), ResponsesJsonAdapter)
    assert (agent.model, agent.max_tool_iterations) == ("offline", 40)


def test_a_bad_value_fails_when_first_used(container: Container) -> None:
    container.config.from_dict({"agent": {**GATEWAY, "use_streaming": "sometimes"}})
    with pytest.raises(
        ConfigurationError, match=r"agent\.use_streaming: expected one of true/false/1/0/yes/no"
    ):
        container.chat()


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"api_key": "sk-x"}, "agent.base_url: not set"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "agent.api_key: not set"),
    ],
)
def test_a_gateway_address_and_key_are_required(
    container: Container, agent: dict[str, str], message: str
) -> None:
    container.config.from_dict({"agent": agent})
    with pytest.raises(ConfigurationError, match=message):
        container.chat()


def test_the_client_lets_an_idle_connection_go_before_a_uvicorn_gateway_closes_it(
    container: Container,
) -> None:
    # LiteLLM's proxy runs on uvicorn, whose idle timeout equals httpx's default keep-alive expiry (5 s).
    gateway_idle = uvicorn.Config(app="gateway:app").timeout_keep_alive
    assert HTTP_LIMITS.keepalive_expiry is not None
    assert HTTP_LIMITS.keepalive_expiry < gateway_idle
    assert httpx.Limits().keepalive_expiry == gateway_idle  # why the container sets its own
    container.config.from_dict({"agent": GATEWAY})
    # httpx keeps the limits on its connection pool (private names: read them, never rely on them elsewhere).
    pool = getattr(getattr(container.http_client(), "_transport", None), "_pool", None)
    assert getattr(pool, "_keepalive_expiry", None) == HTTP_LIMITS.keepalive_expiry


def test_clients_are_shared_singletons(container: Container) -> None:
    container.config.from_dict({"agent": {**GATEWAY, "max_retries": 4, "timeout_seconds": 7}})
    client = container.openai_client()
    assert client is container.openai_client()
    assert container.http_client() is container.http_client()
    assert client.max_retries == 4
    assert str(client.base_url) == "http://127.0.0.1:9/v1/"
    assert "sk-container-test" not in repr(container.settings())


async def test_overriding_chat_swaps_the_model_for_both_pipelines(container: Container) -> None:
    scripted = ScriptedChat(ScriptedTurn(text="Nothing was decided."), ScriptedTurn(text="No change."))
    with container.chat.override(scripted):
        summary_agent = container.summary_agent()
        editor = container.workflow_editor_agent()
        assert isinstance(summary_agent, SummaryAgent)
        assert isinstance(editor, WorkflowEditorAgent)
        summary = await summary_agent.summarize("Ana: hello")
        edit = await editor.edit(Workflow("w", (WorkflowStep("s1", "Build", "task"),)), "nothing")
    assert summary.text == "Nothing was decided."
    assert edit.text == "No change."
    assert len(scripted.requests) == 2


async def test_overriding_the_http_client_swaps_the_transport(container: Container) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = {
            "id": "resp_t", "object": "response", "created_at": 1, "model": "m", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "via mock", "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        }  # fmt: skip
        return httpx.Response(200, json=body)

    container.config.from_dict({"agent": {**GATEWAY, "use_streaming": False}})
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as mock_client:
        with container.http_client.override(mock_client):
            response = await container.chat().get_response([ChatMessage.user("hi")])
    assert response.text == "via mock"
    assert [r.url.path for r in seen] == ["/v1/responses"]
    assert json.loads(seen[0].content)["stream"] is False


@pytest.mark.parametrize("streaming", [True, False])
async def test_closing_leaves_no_open_connection(
    offline_server: OfflineResponsesServer, streaming: bool
) -> None:
    server = offline_server
    async with Container() as container:
        container.environ.override(providers.Object({}))
        container.config.from_dict(
            {"agent": {"base_url": server.base_url, "api_key": "sk-offline", "use_streaming": streaming}}
        )
        summary = await container.summary_agent().summarize("Ana: I'll write the notes by Friday.\n")
        http_client = container.http_client()
        assert summary.action_items
        if not streaming:
            # A streamed answer's connection is closed at response.completed (what follows is never read),
            # so only the JSON path leaves a kept-alive connection for the container to close.
            assert server.open_connections >= 1
    assert http_client.is_closed
    assert server.wait_for_connections(0, timeout=30.0), f"{server.open_connections} connections still open"


async def test_the_readme_swap_example_holds(container: Container) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("call_1", "record_decision", '{"decision": "Ship it"'),)),
        ScriptedTurn(text="Summary: nothing shipped yet."),
    )
    with container.chat.override(chat):
        summary = await container.summary_agent().summarize("Ana: we decided to ship it")
    assert summary.decisions == ()
    assert chat.requests[0].options is not None
    assert chat.requests[0].options.initiator == "user"
    assert chat.requests[1].options is not None
    assert chat.requests[1].options.initiator == "agent"
    assert [record.guarded for record in summary.tool_calls] == [True]


def test_both_adapters_satisfy_the_chat_port(container: Container) -> None:
    # mypy --strict checks these assignments: an adapter that drifted from ChatPort fails the build.
    container.config.from_dict({"agent": GATEWAY})
    client = container.openai_client()
    settings = container.responses_settings()
    ports: tuple[ChatPort, ChatPort] = (
        ResponsesSseAdapter(client, settings),
        ResponsesJsonAdapter(client, settings),
    )
    assert [type(port).__name__ for port in ports] == ["ResponsesSseAdapter", "ResponsesJsonAdapter"]
    assert "sk-container-test" not in repr(ports)


def test_a_toml_file_configures_the_container(container: Container, tmp_path: Path) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(
        '[agent]\nbase_url = "http://127.0.0.1:9/v1"\napi_key = "sk-toml"\nuse_streaming = false\n',
        encoding="utf-8",
    )
    container.config.from_dict(load_config_file(path))
    assert isinstance(container.chat_adapter(), ResponsesJsonAdapter)
    assert container.settings().agent.api_key.reveal() == "sk-toml"


def test_the_loop_keys_reach_the_containers_tool_loop(container: Container) -> None:
    agent = {
        "base_url": "http://127.0.0.1:9/v1",
        "api_key": "sk-test",
        "max_output_retries": 3,
        "conversation_state": "server",
        "prompt_cache_retention": "24h",
    }
    container.config.from_dict({"agent": agent})
    settings = container.tool_loop().settings
    assert (settings.max_output_retries, settings.conversation_state, settings.prompt_cache_retention) == (
        3,
        "server",
        "24h",
    )


# ---------------------------------------------------------------- the chains


@attrs.frozen
class Room:
    room: str = attrs.field(metadata={"description": "The room's name."})


async def test_a_host_tool_runs_guarded_through_the_container_loop_and_a_host_decorator_sees_every_call(
    container: Container,
) -> None:
    ran: list[str] = []
    registry = ToolRegistry()

    @registry.tool()
    def room_capacity(params: Room) -> dict[str, object]:
        """How many people a meeting room holds."""
        ran.append(params.room)
        return {"room": params.room, "capacity": 12}

    script = ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "room_capacity", f'{{"room": "{MARKER}"'),
                ("c2", "room_capacity", '{"room": "Fjord"}'),
            )
        ),
        ScriptedTurn(text="Fjord holds 12."),
    )
    seen = CallLog()
    with (
        container.chat_adapter.override(script),
        container.tool_invoker_decorators.override(providers.List(seen)),
    ):
        loop = container.tool_loop()
        run = await loop.run(
            [ChatMessage.user("Which room fits 12?")], ChatOptions(tools=registry.specs), registry
        )

    assert isinstance(loop, ToolLoop)
    assert isinstance(run, ToolRun)
    assert run.text == "Fjord holds 12."
    assert ran == ["Fjord"]  # the malformed call never reached the tool
    assert [c.call_id for c in seen.calls] == [
        "c1",
        "c2",
    ]  # but the host's decorator saw it, refused by the guard
    assert [(r.call.call_id, r.guarded) for r in run.tool_calls] == [("c1", True), ("c2", False)]
    assert run.tool_calls[1].result.result == {"room": "Fjord", "capacity": 12}


async def test_both_pipelines_run_their_tools_through_the_containers_invoker_chain(
    container: Container,
) -> None:
    seen = CallLog()
    script = ScriptedChat(
        ScriptedTurn(calls=(("s1", "list_participants", "{}"), ("s2", "record_decision", "{"))),
        ScriptedTurn(text="Summary."),
        ScriptedTurn(calls=(("w1", "list_steps", "{}"),)),
        ScriptedTurn(text="No change."),
    )
    with container.chat.override(script), container.tool_invoker_decorators.override(providers.List(seen)):
        summary = await container.summary_agent().summarize("Ana: hello")
        await container.workflow_editor_agent().edit(
            Workflow("w", (WorkflowStep("s1", "Build", "task"),)), "no-op"
        )

    assert [c.call_id for c in seen.calls] == ["s1", "s2", "w1"]
    assert [r.guarded for r in summary.tool_calls] == [False, True]


async def test_chat_decorators_wrap_the_adapter_in_order_and_overriding_the_adapter_keeps_them(
    container: Container,
) -> None:
    log: list[str] = []
    script = ScriptedChat(ScriptedTurn(text="one"), ScriptedTurn(text="two"))
    container.chat_decorators.add_args(RequestLog("inner", log), RequestLog("outer", log))
    with container.chat_adapter.override(script):
        await container.chat().get_response([ChatMessage.user("hi")])
        summary = await container.summary_agent().summarize("Ana: hello")

    assert log == ["outer", "inner", "outer", "inner"]
    assert summary.text == "two"
    assert len(script.requests) == 2


async def test_overriding_chat_replaces_the_whole_chain(container: Container) -> None:
    log: list[str] = []
    script = ScriptedChat(ScriptedTurn(text="direct"))
    container.chat_decorators.add_args(RequestLog("decorator", log))
    with container.chat.override(script):
        response = await container.chat().get_response([ChatMessage.user("hi")])
    assert response.text == "direct"
    assert log == []


def test_without_decorators_or_telemetry_chat_is_the_selected_adapter_itself(container: Container) -> None:
    container.config.from_dict({"agent": {**GATEWAY, "telemetry": False}})
    assert container.chat() is container.chat_adapter()
    assert isinstance(container.chat(), ResponsesSseAdapter)


async def test_the_readme_host_tool_example_holds(container: Container) -> None:
    capacity = {"Fjord": 12, "Glacier": 4}
    registry = ToolRegistry()

    @registry.tool()
    def room_capacity(params: Room) -> dict[str, object]:
        """How many people a meeting room holds."""
        return {"room": params.room, "capacity": capacity.get(params.room, 0)}

    audit: list[str] = []

    def audited(inner: ToolInvokerPort) -> ToolInvokerPort:
        class Audited:
            async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
                audit.append(call.name)
                return await inner.invoke(call)

        return Audited()

    script = ScriptedChat(
        ScriptedTurn(calls=(("c1", "room_capacity", '{"room": "Fjord"'),)),
        ScriptedTurn(calls=(("c2", "room_capacity", '{"room": "Fjord"}'),)),
        ScriptedTurn(text="Fjord fits 12 people."),
    )
    container.config.from_dict({"agent": GATEWAY})
    container.tool_invoker_decorators.add_args(audited)
    with container.chat_adapter.override(script):
        run = await container.tool_loop().run(
            [ChatMessage.user("Which room fits 12 people?")],
            ChatOptions(instructions="Answer in one sentence.", tools=registry.specs),
            registry,
        )

    assert run.text == "Fjord fits 12 people."
    assert [(r.call.name, r.guarded, r.result.result) for r in run.tool_calls] == [
        (
            "room_capacity",
            True,
            {
                "error": "invalid_tool_arguments",
                "message": "The tool was not run: the arguments were not valid JSON (parsing stopped at "
                "character 16). Call it again with a JSON object that matches its parameters.",
            },
        ),
        ("room_capacity", False, {"room": "Fjord", "capacity": 12}),
    ]
    assert audit == ["room_capacity", "room_capacity"]


@pytest.mark.parametrize("telemetry", [True, False])
async def test_pipeline_events_stream_through_the_containers_chains(
    container: Container, telemetry: bool
) -> None:
    script = ScriptedChat(ScriptedTurn(text="The meeting agreed to ship on Monday."))
    container.config.from_dict({"agent": {**GATEWAY, "telemetry": telemetry}})
    with container.chat_adapter.override(script):
        events = [event async for event in container.summary_agent().summarize_events("Ana: ship it")]

    pieces = [event.text for event in events if isinstance(event, TextDelta)]
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert len(pieces) > 1  # streamed in pieces, not handed over whole
    assert "".join(pieces) == last.result.text == "The meeting agreed to ship on Monday."
    assert [request.stream for request in script.requests] == [True]


# ---------------------------------------------------------------- telemetry (agent.telemetry)

# The decision's words, "args marker 4d0a" among them, are the line's; the arguments' marker itself is not.
TRANSCRIPT = "Ana: TRANSCRIPT-MARKER-2b7c, args marker 4d0a. Ben: agreed."
TRACED = {**GATEWAY, "model": "gpt-configured", "max_retries": 1}
WORKFLOW = Workflow("w", (WorkflowStep("s1", "Build", "build"),))


def summary_gateway(streaming: bool) -> Recorder:
    """A busy answer first (retried), then one tool round with a malformed call, then text echoing the key."""
    calls = response_document(
        [
            call_item("fc_1", "c1", "record_decision", '{"decision": "ARGS-MARKER-4d0a"'),
            call_item(
                "fc_2",
                "c2",
                "record_decision",
                '{"decision": "Transcript marker ARGS-MARKER-4d0a", "lines": [1]}',
            ),
        ],
        response_id="resp_1",
    )
    final = response_document([message_item("msg_1", f"Summary. Key: {KEY}")], response_id="resp_2")
    return Recorder(
        [
            answer('{"error": {"message": "busy"}}', status=503),
            served(calls, streaming=streaming),
            served(final, streaming=streaming),
        ]
    )


def answering(*documents: dict[str, Any], streaming: bool = False) -> Recorder:
    return Recorder([served(document, streaming=streaming) for document in documents])


@asynccontextmanager
async def talking_to(container: Container, recorder: Recorder) -> AsyncIterator[None]:
    """The container's HTTP client answers from ``recorder`` inside the block."""
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as client:
        with container.http_client.override(client):
            yield


async def summarize(container: Container, recorder: Recorder, **agent: Any) -> None:
    container.config.from_dict({"agent": {**TRACED, **agent}})
    async with talking_to(container, recorder):
        summary = await container.summary_agent().summarize(TRANSCRIPT)
    assert summary.decisions == (Decision("Transcript marker ARGS-MARKER-4d0a", (1,)),)


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_by_default_a_summary_run_is_traced_from_the_agent_down_to_each_http_attempt(
    container: Container, otel: Otel, streaming: bool
) -> None:
    await summarize(container, summary_gateway(streaming), use_streaming=streaming)

    assert isinstance(container.summary_agent()._hooks, AgentTracing)
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
    await summarize(container, summary_gateway(True), telemetry="false")

    assert telemetry_key(container.settings()) == "off"
    assert type(container.summary_agent()) is SummaryAgent
    assert type(container.workflow_editor_agent()) is WorkflowEditorAgent
    assert container.chat() is container.chat_adapter()
    assert otel.spans() == ()
    assert otel.metric_names() == set()
    async with httpx.AsyncClient() as client:
        with container.http_client.override(client):
            container.openai_client.reset()
            container.openai_client()
            assert client.event_hooks == {"request": [], "response": []}


async def test_chat_is_the_traced_chain_and_overriding_the_adapter_keeps_the_decorators_and_telemetry(
    container: Container, otel: Otel
) -> None:
    log: list[str] = []
    script = ScriptedChat(ScriptedTurn(text="direct", response_id="resp_direct"))
    container.config.from_dict({"agent": TRACED})
    container.chat_decorators.add_args(RequestLog("decorator", log))

    traced = container.chat()
    assert isinstance(traced, InstrumentedChat)  # telemetry outermost, the host's decorator inside it
    with container.chat_adapter.override(script):
        response = await container.chat().get_response([ChatMessage.user("hi")])

    assert response.text == "direct"
    assert log == ["decorator"]
    [span] = otel.spans()  # a host's direct call is traced like the pipelines' calls
    assert span.name == "chat gpt-configured"
    assert span.attributes is not None
    assert span.attributes["gen_ai.response.id"] == "resp_direct"
    assert isinstance(container.workflow_editor_agent()._hooks, AgentTracing)


def ping_registry() -> ToolRegistry:
    """A host's registry of one tool, ``ping``."""
    registry = ToolRegistry()

    @registry.tool()
    def ping() -> dict[str, object]:
        """Answer pong."""
        return {"pong": True}

    return registry


async def test_a_host_tool_loop_gets_chat_and_tool_spans_with_host_decorators_inside_them(
    container: Container, otel: Otel
) -> None:
    registry = ping_registry()
    seen = CallLog()
    calls = response_document([call_item("fc_1", "p1", "ping", "{}")], response_id="resp_1")
    final = response_document([message_item("msg_1", "pong")], response_id="resp_2")
    container.config.from_dict({"agent": TRACED})
    container.tool_invoker_decorators.add_args(seen)
    async with talking_to(container, answering(calls, final, streaming=True)):
        run = await container.tool_loop().run(
            (ChatMessage.user("ping"),), ChatOptions(tools=registry.specs), registry
        )

    assert run.text == "pong"
    assert [call.call_id for call in seen.calls] == ["p1"]
    assert [span.name for span in otel.spans()] == [
        "chat gpt-configured",
        "execute_tool ping",
        "chat gpt-configured",
    ]
    assert otel.named("invoke_agent") == []


async def test_a_host_tool_loop_gives_a_repeated_call_id_its_tool_span_without_any_agent_span(
    container: Container, otel: Otel
) -> None:
    registry = ping_registry()
    calls = response_document(
        [call_item("fc_1", "p1", "ping", "{}"), call_item("fc_2", "p1", "ping", "{}")], response_id="resp_1"
    )
    final = response_document([message_item("msg_1", "pong")], response_id="resp_2")
    container.config.from_dict({"agent": TRACED})
    async with talking_to(container, answering(calls, final, streaming=True)):
        run = await container.tool_loop().run(
            (ChatMessage.user("ping"),), ChatOptions(tools=registry.specs), registry
        )

    assert [record.result.is_error for record in run.tool_calls] == [False, True]
    tools = otel.named("execute_tool ")
    assert sorted(str(dict(span.attributes or {}).get("error.type", "")) for span in tools) == [
        "",
        "duplicate_call_id",
    ]
    assert otel.named("invoke_agent") == []


async def test_the_workflow_editor_run_is_traced_as_workflow_editor(container: Container, otel: Otel) -> None:
    final = response_document([message_item("msg_1", "Nothing to change.")], response_id="resp_1")
    container.config.from_dict({"agent": TRACED})
    async with talking_to(container, answering(final)):
        await container.workflow_editor_agent().edit(WORKFLOW, "ok")

    assert [span.name for span in otel.spans()] == ["chat gpt-configured", "invoke_agent workflow_editor"]


@pytest.mark.parametrize("telemetry", ["true", "false"])
async def test_a_pipeline_built_with_its_own_options_runs_them_and_its_span_names_their_model(
    container: Container, otel: Otel, telemetry: str
) -> None:
    final = response_document([message_item("msg_1", "Nothing to change.")], response_id="resp_1")
    recorder = answering(final, final)
    container.config.from_dict({"agent": {**TRACED, "telemetry": telemetry}})
    options = ChatOptions(model="gpt-per-run")
    async with talking_to(container, recorder):
        await container.summary_agent(options=options).summarize(TRANSCRIPT)
        await container.workflow_editor_agent(options=options).edit(WORKFLOW, "ok")

    assert [body["model"] for body in recorder.bodies()] == ["gpt-per-run"] * 2
    runs = otel.named("invoke_agent")
    assert [dict(span.attributes or {})["gen_ai.request.model"] for span in runs] == (
        ["gpt-per-run"] * 2 if telemetry == "true" else []
    )
    assert [span.name for span in otel.named("chat ")] == (
        ["chat gpt-per-run"] * 2 if telemetry == "true" else []
    )


async def test_the_approver_and_the_tools_needing_approval_reach_the_workflow_editor(
    container: Container,
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return Approve()

    workflow = Workflow("w", (WorkflowStep("s1", "Build", "task"), WorkflowStep("s2", "Ship", "deploy")))
    turns = (
        ScriptedTurn(calls=(("m1", "move_step", '{"step_id": "s2", "position": 1}'),)),
        ScriptedTurn(text="Moved."),
    )
    container.config.from_dict({"agent": {"approval_required_tools": ["move_step"]}})
    with container.chat.override(ScriptedChat(*turns)):
        paused = await container.workflow_editor_agent().edit(workflow, "move Ship to position 1")
    with (
        container.chat.override(ScriptedChat(*turns)),
        container.approver.override(providers.Object(approver)),
    ):
        edit = await container.workflow_editor_agent().edit(workflow, "move Ship to position 1")

    assert [request.call_id for request in paused.pending] == ["m1"]
    assert [request.call_id for request in asked] == ["m1"]
    assert edit.status == "done"
    assert [step.id for step in edit.workflow.steps] == ["s2", "s1"]
