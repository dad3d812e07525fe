"""The offline endpoint over real loopback sockets, read by the OpenAI SDK: every dialect and scenario."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI

from adapters.offline import SCENARIOS, OfflineResponsesServer
from tests.integration.offline.support import API_KEY, ECHO, GREETING
from tests.support.gateway import sdk_over

SUMMARY_TOOLS = ("list_participants", "record_action_item", "record_decision")
# Hang protection only, never a speed bar: the server shares this process (and its GIL) with the client,
# so on a loaded machine one answer's first byte can come many seconds after its request went out.
# A timeout that fired would not fail a test cleanly but change it (the SDK retries a timed-out request).
TIMEOUT_SECONDS = 120.0
# How long the server may take to notice every closed connection: polled, so only a hang waits this long.
DRAIN_SECONDS = 60.0


def offline_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("offline-responses")]


@pytest.fixture
def server() -> Iterator[OfflineResponsesServer]:
    with OfflineResponsesServer() as running:
        yield running
    assert offline_threads() == []
    assert running.open_connections == 0


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=httpx.Timeout(TIMEOUT_SECONDS)) as client:
        yield client


def sdk_for(
    server: OfflineResponsesServer,
    http: httpx.AsyncClient,
    *,
    max_retries: int = 0,
    timeout: float = TIMEOUT_SECONDS,
) -> AsyncOpenAI:
    return sdk_over(http, base_url=server.base_url, api_key=API_KEY, max_retries=max_retries, timeout=timeout)


@pytest.fixture
def client(server: OfflineResponsesServer, http: httpx.AsyncClient) -> AsyncOpenAI:
    return sdk_for(server, http)


def tools(*names: str) -> list[Any]:
    parameters = {"type": "object", "properties": {}}
    return [{"type": "function", "name": name, "parameters": parameters, "strict": False} for name in names]


async def collect(client: AsyncOpenAI, model: str, **kwargs: Any) -> list[Any]:
    stream = await client.responses.create(model=model, input=GREETING, stream=True, **kwargs)
    return [event async for event in stream]


def deltas(events: list[Any]) -> str:
    return "".join(event.delta for event in events if event.type == "response.output_text.delta")


# ---------------------------------------------------------------- lifecycle


def test_start_returns_once_listening_and_stop_is_idempotent() -> None:
    server = OfflineResponsesServer()
    assert repr(server) == "OfflineResponsesServer(not started, dialect='openai')"
    server.stop()  # before start: nothing to do
    server.start()
    assert repr(server) == f"OfflineResponsesServer(http://127.0.0.1:{server.port}/v1, dialect='openai')"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5):
        pass
    server.stop()
    server.stop()

    assert offline_threads() == []
    assert repr(server) == "OfflineResponsesServer(stopped, dialect='openai')"


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="dialect must be"):
        OfflineResponsesServer(dialect="grpc")  # type: ignore[arg-type]  # the wrong value is the point


def test_served_from_sync_code_with_the_sync_sdk() -> None:
    with OfflineResponsesServer() as server, httpx.Client() as http:
        sdk = openai.OpenAI(
            base_url=server.base_url,
            api_key=API_KEY,
            http_client=http,  # type: ignore[arg-type]  # the SDK accepts a legacy httpx client
            max_retries=0,
        )
        response = sdk.responses.create(model="offline", input=GREETING)
        assert response.output_text == ECHO
    assert server.open_connections == 0


async def test_connections_return_to_zero_when_the_client_closes(server: OfflineResponsesServer) -> None:
    async with httpx.AsyncClient() as http:
        sdk = sdk_for(server, http)
        await asyncio.gather(*(sdk.responses.create(model="offline", input=f"call {n}") for n in range(5)))
        assert server.open_connections >= 1
    assert await asyncio.to_thread(server.wait_for_connections, 0, DRAIN_SECONDS)


def test_wait_for_connections_gives_up_after_its_timeout(server: OfflineResponsesServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /v1/responses HTTP/1.1\r\nHost: offline\r\n\r\n")
        assert sock.recv(12) == b"HTTP/1.1 405"  # answered, so accepted and kept alive
        assert server.open_connections == 1
        assert not server.wait_for_connections(0, 0.05)
    assert server.wait_for_connections(0, DRAIN_SECONDS)


async def test_stop_closes_keep_alive_connections(http: httpx.AsyncClient) -> None:
    server = OfflineResponsesServer().start()
    sdk = sdk_for(server, http)
    await sdk.responses.create(model="offline", input="hi")
    assert server.open_connections == 1

    server.stop()

    assert server.open_connections == 0
    assert offline_threads() == []


# ---------------------------------------------------------------- normal answers


async def test_text_stream_parses_in_the_openai_dialect(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline")

    assert [event.type for event in events[:4]] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert sum(event.type == "response.output_text.delta" for event in events) > 5
    completed = events[-1]
    assert completed.type == "response.completed"
    assert deltas(events) == completed.response.output_text == ECHO
    assert completed.response.usage.total_tokens == (
        completed.response.usage.input_tokens + completed.response.usage.output_tokens
    )
    assert completed.response.id.startswith("resp_")
    assert completed.response.output[0].id.startswith("msg_")


async def test_json_answer_parses_and_carries_a_request_id(client: AsyncOpenAI) -> None:
    raw = await client.responses.with_raw_response.create(model="offline", input=GREETING)
    response = raw.parse()

    assert raw.headers["content-type"] == "application/json"
    assert raw.headers["x-request-id"].startswith("req_")
    assert response.status == "completed"
    assert response.output_text == ECHO
    assert response.model == "offline"
    assert response.usage is not None
    assert response.usage.input_tokens == 3


async def test_reasoning_is_streamed_with_a_summary_and_encrypted_content(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline", reasoning={"effort": "low", "summary": "auto"})

    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    item = events[-1].response.output[0]
    assert item.type == "reasoning"
    assert item.summary[0].text == summary == "No tools are offered; answering in plain text."
    assert item.encrypted_content.startswith("offline-")
    assert events[-1].response.usage.output_tokens_details.reasoning_tokens == 10  # 8 words, 2 marks


async def test_malformed_arguments_break_one_call_of_the_first_tool_turn(client: AsyncOpenAI) -> None:
    transcript = "Ana: Ben will draft the budget by Friday.\nBen: Cleo will book the room by Monday."
    response = await client.responses.create(
        model="offline:malformed-arguments", input=transcript, tools=tools(*SUMMARY_TOOLS)
    )

    calls = [item for item in response.output if item.type == "function_call"]
    broken = []
    for call in calls:
        try:
            json.loads(call.arguments)
        except json.JSONDecodeError:
            broken.append(call.name)
    assert broken == ["record_action_item"]
    assert len(calls) == 3


async def test_ungrounded_citation_scenario_cites_the_line_before_in_the_first_tool_turn(
    client: AsyncOpenAI,
) -> None:
    transcript = "Ana: Morning.\nAna: Ben will draft the budget by Friday.\nBen: Cleo will book the room."
    response = await client.responses.create(
        model="offline:ungrounded-citation", input=transcript, tools=tools(*SUMMARY_TOOLS)
    )

    calls = [json.loads(item.arguments) for item in response.output if item.type == "function_call"]
    assert [call.get("lines") for call in calls] == [None, [1], [3]]


async def test_function_calls_stream_with_argument_deltas(client: AsyncOpenAI) -> None:
    transcript = "Ana: Ben will draft the budget by Friday."
    stream = await client.responses.create(
        model="offline", input=transcript, tools=tools(*SUMMARY_TOOLS), stream=True
    )
    events: list[Any] = [event async for event in stream]

    done = [event.item for event in events if event.type == "response.output_item.done"]
    arguments = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta" and e.output_index == 1
    )
    assert [item.name for item in done] == ["list_participants", "record_action_item"]
    assert arguments == done[1].arguments
    assert json.loads(arguments) == {
        "owner": "Ben",
        "task": "draft the budget",
        "due": "Friday",
        "lines": [1],
        "quote": "Ben will draft the budget by Friday.",
    }
    assert [item.call_id for item in events[-1].response.output] == [item.call_id for item in done]


async def test_litellm_dialect_on_the_wire(http: httpx.AsyncClient) -> None:
    with OfflineResponsesServer(dialect="litellm") as server:
        reply = await http.post(
            f"{server.base_url}/responses",
            json={"model": "offline", "input": GREETING, "stream": True},
        )
        sdk = sdk_for(server, http)
        events = await collect(sdk, "offline")

    assert reply.headers["x-request-id"].startswith("req_")
    lines = [line for line in reply.text.split("\n") if line]
    payloads = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"
    assert all(payload["model"] == "offline" for payload in payloads)
    assert "logprobs" not in reply.text
    completed = payloads[-1]["response"]
    assert completed["usage"].keys() == {"input_tokens", "output_tokens", "total_tokens"}
    assert 380 <= len(completed["id"]) <= 420
    assert events[-1].type == "response.completed"
    assert deltas(events) == ECHO


async def test_litellm_scenario_switches_an_openai_server(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:litellm")

    assert 380 <= len(events[-1].response.id) <= 420
    assert deltas(events) == ECHO


# ---------------------------------------------------------------- body-shape scenarios


async def test_sse_for_json_streams_where_json_was_asked(client: AsyncOpenAI) -> None:
    raw = await client.responses.with_raw_response.create(model="offline:sse-for-json", input=GREETING)

    assert raw.headers["content-type"].startswith("text/event-stream")
    body = raw.parse()
    assert isinstance(body, str)  # the SDK hands an event stream to a JSON request back unparsed
    assert "event: response.completed" in body


async def test_json_for_sse_answers_json_where_a_stream_was_asked(
    client: AsyncOpenAI, server: OfflineResponsesServer
) -> None:
    events = await collect(client, "offline:json-for-sse")
    async with client.responses.with_streaming_response.create(
        model="offline:json-for-sse", input=GREETING, stream=True
    ) as raw:
        document = json.loads(await raw.http_response.aread())

    assert events == []  # the SDK's event decoder finds no events in a JSON body
    assert raw.headers["content-type"] == "application/json"
    assert document["status"] == "completed"
    assert document["output"][0]["content"][0]["text"] == ECHO
    assert [request.body["stream"] for request in server.requests] == [True, True]


# ---------------------------------------------------------------- ending scenarios


async def test_incomplete_ends_with_partial_text_and_the_reason(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:incomplete")
    document = await client.responses.create(model="offline:incomplete", input=GREETING)

    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert ECHO.startswith(deltas(events))
    assert 0 < len(deltas(events)) < len(ECHO)
    assert document.status == "incomplete"
    assert document.output_text == deltas(events)


async def test_response_failed_after_some_output(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:response-failed")
    document = await client.responses.create(model="offline:response-failed", input=GREETING)

    assert events[-1].type == "response.failed"
    assert events[-1].response.error.code == "server_error"
    assert ECHO.startswith(deltas(events))
    assert deltas(events)
    assert document.status == "failed"
    assert document.error is not None
    assert document.error.code == "server_error"


async def test_flat_error_event_is_yielded_as_an_event(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:error-event")

    assert deltas(events)
    assert events[-1].type == "error"
    assert (events[-1].code, events[-1].message) == (
        "server_error",
        "The offline model failed on purpose (scenario error-event).",
    )


async def test_nested_error_event_is_raised_by_the_sdk(client: AsyncOpenAI) -> None:
    with pytest.raises(openai.APIError) as caught:
        await collect(client, "offline:error-event-nested")

    assert isinstance(caught.value.body, dict)
    assert caught.value.body["code"] == "server_error"


async def test_truncated_stream_stops_without_a_terminal_event(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:truncated-stream")

    assert deltas(events)
    terminal = {"response.completed", "response.incomplete", "response.failed", "error"}
    assert events[-1].type == "response.output_text.delta"
    assert terminal.isdisjoint(event.type for event in events)


async def test_truncated_json_body_is_not_json(
    http: httpx.AsyncClient, server: OfflineResponsesServer
) -> None:
    reply = await http.post(
        f"{server.base_url}/responses", json={"model": "offline:truncated-stream", "input": "x"}
    )

    assert reply.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.content)


@pytest.mark.parametrize("stream", [True, False])
async def test_connection_reset_mid_body(
    client: AsyncOpenAI, server: OfflineResponsesServer, stream: bool
) -> None:
    seen: list[Any] = []

    async def attempt() -> None:
        if not stream:
            await client.responses.create(model="offline:connection-reset", input=GREETING)
            return
        async for event in await client.responses.create(
            model="offline:connection-reset", input=GREETING, stream=True
        ):
            seen.append(event)

    with pytest.raises(openai.APIConnectionError):
        await attempt()

    assert bool(seen) is stream  # a stream delivers its first events before the reset
    assert await asyncio.to_thread(server.wait_for_connections, 0, DRAIN_SECONDS)


@pytest.mark.parametrize("stream", [True, False])
async def test_stall_ends_in_a_client_timeout(server: OfflineResponsesServer, stream: bool) -> None:
    async with httpx.AsyncClient() as http:
        # The SDK's timeout is the one each request carries. Only a stalled body can end this request (the
        # server sends nothing more until the client leaves), so a short one only makes the test quick.
        sdk = sdk_for(server, http, timeout=0.3)
        attempt = (
            collect(sdk, "offline:stall")
            if stream
            else sdk.responses.create(model="offline:stall", input=GREETING)
        )
        with pytest.raises(openai.APITimeoutError):
            await attempt
    assert await asyncio.to_thread(server.wait_for_connections, 0, DRAIN_SECONDS)


async def test_stop_does_not_hang_on_a_stalled_connection(http: httpx.AsyncClient) -> None:
    server = OfflineResponsesServer().start()
    sdk = sdk_for(server, http)
    stream = await sdk.responses.create(model="offline:stall", input=GREETING, stream=True)
    first = await stream.__anext__()

    await asyncio.to_thread(server.stop)

    assert first.type == "response.created"
    with pytest.raises((openai.APIConnectionError, httpx.RemoteProtocolError)):
        async for _ in stream:
            pass
    assert offline_threads() == []


async def test_garbage_data_line_fails_decoding(client: AsyncOpenAI) -> None:
    with pytest.raises(json.JSONDecodeError):
        await collect(client, "offline:garbage-data")
    with pytest.raises(json.JSONDecodeError):
        await client.responses.create(model="offline:garbage-data", input=GREETING)


# ---------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize(
    ("scenario", "error", "code"),
    [
        ("http-400", openai.BadRequestError, "invalid_request"),
        ("http-401", openai.AuthenticationError, "invalid_api_key"),
        ("http-429", openai.RateLimitError, "rate_limit_exceeded"),
        ("http-500", openai.InternalServerError, "server_error"),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
async def test_http_errors_are_openai_shaped(
    client: AsyncOpenAI,
    server: OfflineResponsesServer,
    scenario: str,
    error: type[openai.APIStatusError],
    code: str,
    stream: bool,
) -> None:
    with pytest.raises(error) as caught:
        await client.responses.create(model=f"offline:{scenario}", input="x", stream=stream)

    assert caught.value.code == code
    assert caught.value.request_id == server.requests[-1].request_id
    assert caught.value.status_code == server.requests[-1].status == int(scenario[-3:])
    assert API_KEY not in str(caught.value)
    if scenario == "http-429":
        assert caught.value.response.headers["retry-after"] == "0"


async def test_transient_faults_fail_only_the_first_n_requests(
    server: OfflineResponsesServer, http: httpx.AsyncClient
) -> None:
    sdk = sdk_for(server, http, max_retries=2)

    response = await sdk.responses.create(model="offline:http-429*2+litellm", input=GREETING)
    again = await sdk.responses.create(model="offline:http-429*2+litellm", input=GREETING)

    assert response.output_text == again.output_text == ECHO
    assert [request.status for request in server.requests] == [429, 429, 200, 200]
    assert [request.applied for request in server.requests] == [
        ("http-429", "litellm"),
        ("http-429", "litellm"),
        ("litellm",),
        ("litellm",),
    ]
    assert {request.scenario for request in server.requests} == {"http-429*2+litellm"}


# ---------------------------------------------------------------- load scenarios


async def test_huge_arguments_arrive_as_one_valid_five_megabyte_string(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:huge-arguments")

    call = events[-1].response.output[-1]
    assert call.type == "function_call"
    assert call.name == "offline_payload"
    assert len(call.arguments) > 5_000_000
    assert len(json.loads(call.arguments)["padding"]) == 5 * 1024 * 1024
    streamed = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert streamed == call.arguments


async def test_huge_arguments_pad_the_first_call_of_a_tool_turn(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="offline:huge-arguments", input="Ana: we agreed to go.", tools=tools(*SUMMARY_TOOLS)
    )

    first = response.output[0]
    assert first.type == "function_call"
    assert first.name == "list_participants"
    assert len(json.loads(first.arguments)["padding"]) == 5 * 1024 * 1024
    assert [item.type for item in response.output] == ["function_call", "function_call"]


async def test_unknown_events_are_interleaved_by_the_thousand(client: AsyncOpenAI) -> None:
    events = await collect(client, "offline:unknown-events")

    kinds = [event.type for event in events]
    assert kinds.count("x-offline.heartbeat") == 5000
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert deltas(events) == ECHO


async def test_concurrent_runs_with_injected_faults_all_finish_and_leave_no_connection(
    server: OfflineResponsesServer,
) -> None:
    models = ["offline:http-500*2", "offline:connection-reset", "offline:response-failed"] + ["offline"] * 57
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(TIMEOUT_SECONDS), limits=httpx.Limits(max_connections=60)
    ) as http:
        sdk = sdk_for(server, http, max_retries=2)

        async def run(model: str) -> str:
            stream = await sdk.responses.create(model=model, input=GREETING, stream=True)
            return [event.type async for event in stream][-1]

        outcomes = await asyncio.gather(*(run(model) for model in models), return_exceptions=True)

    assert outcomes[0] == "response.completed"
    assert isinstance(outcomes[1], openai.APIConnectionError)
    assert outcomes[2] == "response.failed"
    assert outcomes.count("response.completed") == 58
    # The two 500s were retried; the reset was not: it came after a 200, mid-body, past the SDK's retries.
    assert len(server.requests) == 60 + 2
    assert await asyncio.to_thread(server.wait_for_connections, 0, DRAIN_SECONDS)


# ---------------------------------------------------------------- bad requests


async def test_unknown_scenario_is_a_400_naming_the_known_ones(client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="offline:no-such-thing", input="x")

    assert caught.value.code == "unknown_scenario"
    assert caught.value.param == "model"
    assert "'no-such-thing'" in caught.value.message
    assert "malformed-arguments" in caught.value.message


@pytest.mark.parametrize(
    ("method", "path", "content", "status", "message"),
    [
        ("POST", "/v1/responses", b"{not json", 400, "We could not parse the JSON body of your request."),
        ("POST", "/v1/responses", b'{"input": "x"}', 400, "Missing required parameter: 'model'."),
        ("POST", "/v1/responses", b'{"model": "offline", "input": 5}', 400, "'input' must be a non-empty"),
        ("POST", "/v1/chat/completions?x=1", b"{}", 404, "Unknown request URL: POST /v1/chat/completions."),
        ("GET", "/v1/responses", b"", 405, "Method GET is not allowed on /v1/responses; use POST."),
    ],
)
async def test_requests_the_endpoint_cannot_serve(
    http: httpx.AsyncClient,
    server: OfflineResponsesServer,
    method: str,
    path: str,
    content: bytes,
    status: int,
    message: str,
) -> None:
    reply = await http.request(method, f"http://127.0.0.1:{server.port}{path}", content=content)

    assert reply.status_code == status
    assert reply.headers["x-request-id"].startswith("req_")
    assert reply.json()["error"]["message"].startswith(message)
    assert (server.requests[-1].path, server.requests[-1].status) == (path, status)


# ---------------------------------------------------------------- recording


async def test_requests_are_recorded_with_lower_cased_headers_and_a_safe_repr(
    client: AsyncOpenAI, server: OfflineResponsesServer
) -> None:
    await client.responses.create(
        model="offline:litellm", input=GREETING, extra_headers={"X-Initiator": "user"}
    )

    (recorded,) = server.requests
    assert recorded.headers["x-initiator"] == "user"
    assert recorded.headers["authorization"] == f"Bearer {API_KEY}"
    assert recorded.body == {"model": "offline:litellm", "input": GREETING}
    assert recorded.scenario == "litellm"
    assert recorded.applied == ("litellm",)
    assert API_KEY not in repr(recorded)
    assert "'authorization': '<redacted>'" in repr(recorded)


async def test_no_log_record_carries_the_api_key_or_the_transcript(
    client: AsyncOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="adapters.offline")
    secret_text = "Ana: PLANTED-transcript-7f3a will not be logged."

    await client.responses.create(model="offline", input=secret_text)
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model="offline:nope", input=secret_text)

    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "POST /v1/responses" in logged
    assert API_KEY not in logged
    assert "PLANTED-transcript-7f3a" not in logged


def test_every_scenario_is_exercised_here() -> None:
    source = Path(__file__).read_text()

    assert [name for name in SCENARIOS if f"offline:{name}" not in source and f'"{name}"' not in source] == []


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000 + b"]" * 100_000, b'{"model": "offline", "input": ' + b"[" * 100_000, b'{"model": '],
    ids=["100k-deep", "100k-deep-unclosed", "broken"],
)
async def test_a_deep_or_broken_json_body_is_answered_400(
    server: OfflineResponsesServer, http: httpx.AsyncClient, body: bytes
) -> None:
    answered = await http.post(
        f"{server.base_url}/responses", content=body, headers={"content-type": "application/json"}
    )

    assert answered.status_code == 400
    assert answered.json()["error"]["message"] == "We could not parse the JSON body of your request."
    assert server.requests[-1].status == 400
