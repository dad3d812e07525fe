"""The two ChatPorts over the SDK's Responses API (``chat_adapters``), driven over an in-memory gateway.

Every fault of the contract gives its typed error, carrying the ids and what had arrived; retries are
counted and logged; ``agent.deadline_seconds`` bounds a request end to end; whatever breaks while a body
is read is a ChatError and nothing else is; the libraries' own logs show no secret; and
``get_streaming_response`` raises from its iterator what ``get_response`` raises.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, cast

import httpx
import openai
import pytest

from adapters.offline.render import message_item, sse, stream_events
from adapters.redaction import REDACTED
from adapters.responses import EventFolder, ResponsesSettings
from adapters.responses.error_mapping import LowerLevelError
from adapters.responses.http_front import LISTENER, ResponseTooLargeError
from adapters.responses.incremental import LARGE
from adapters.responses.payload import ResponsesPayloadBuilder
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    FunctionCallContent,
    FunctionResultContent,
    MalformedResponseError,
    ResponseFailedError,
    TextContent,
    ToolSpec,
)
from tests.support.gateway import (
    API_KEY,
    JSON,
    QUESTION,
    REQUEST_ID,
    SSE,
    Pieces,
    Recorder,
    adapters_for,
    all_updates,
    answer,
    assert_shows_no_key,
    client_for,
    every_way,
    response_document,
    served,
    streamed,
)
from tests.support.local_server import warm_up_event_parsing

GATEWAY_TOKEN = "gw-token-9f8e7d6c"
DEADLINE = 0.3
# Far beyond the deadline: reaching it means the deadline did not hold, and the test fails instead of hanging.
TEST_BOUND = 30.0
STALL_DEADLINE = 2.0


def test_both_adapters_satisfy_the_chat_port() -> None:
    sse_adapter, json_adapter = adapters_for(Recorder([answer("{}")]))
    # Typed assignments: mypy --strict proves both adapters offer the whole port, get_streaming_response too.
    ports: tuple[ChatPort, ChatPort] = (sse_adapter, json_adapter)
    assert all(callable(port.get_streaming_response) for port in ports)


# ---------------------------------------------------------------- faults and their typed errors


def events_until_text(text: str = "Half of the answ") -> list[dict[str, Any]]:
    """A stream cut after some text arrived, before any terminal event."""
    document = response_document([message_item("msg_1", text + "er that never finished")])
    events = stream_events(document, chunk=4, terminal=False)
    cut = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    return events[: cut + len(text) // 4]


def assert_partial_text(partial: ChatResponse | None, text: str) -> None:
    assert partial is not None
    assert partial.response_id == "resp_test"
    assert partial.messages == (ChatMessage("assistant", (TextContent(text),)),)


@pytest.mark.parametrize("litellm", [False, True])
async def test_flat_error_event_raises_response_failed_with_what_arrived(litellm: bool) -> None:
    flat = {"type": "error", "code": "server_error", "message": "The model crashed", "param": None}
    body = sse([*events_until_text(), flat], litellm=litellm)

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        with pytest.raises(ResponseFailedError) as caught:
            await adapter.get_response(QUESTION)
        error = caught.value
        assert (error.code, error.message) == ("server_error", "The model crashed")
        assert (error.response_id, error.model_id, error.request_id) == (
            "resp_test",
            "gpt-test-2026",
            REQUEST_ID,
        )
        assert_partial_text(error.partial, "Half of the answ")


async def test_nested_error_event_raises_response_failed_with_its_code() -> None:
    nested = {"type": "error", "error": {"code": "rate_limit_exceeded", "message": "Slow down", "type": "x"}}
    body = sse([*events_until_text(), nested])

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        with pytest.raises(ResponseFailedError) as caught:
            await adapter.get_response(QUESTION)
        assert (caught.value.code, caught.value.message) == ("rate_limit_exceeded", "Slow down")
        assert caught.value.request_id == REQUEST_ID
        assert_partial_text(caught.value.partial, "Half of the answ")


async def test_response_failed_raises_with_the_providers_code_and_partial_output() -> None:
    document = response_document(
        [message_item("msg_1", "So far")],
        status="failed",
        usage=None,
        error={"code": "server_error", "message": "Upstream failure"},
    )

    for adapter in every_way(document, terminal_output=False):
        with pytest.raises(ResponseFailedError) as caught:
            await adapter.get_response(QUESTION)
        error = caught.value
        assert (error.code, error.message, error.response_id) == (
            "server_error",
            "Upstream failure",
            "resp_test",
        )
        assert error.partial is not None
        assert error.partial.status == "failed"
        assert error.partial.text == "So far"


@pytest.mark.parametrize(
    ("reason", "finish"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
async def test_response_incomplete_returns_the_partial_output(reason: str, finish: str) -> None:
    document = response_document(
        [message_item("msg_1", "Cut sh")], status="incomplete", incomplete_reason=reason, usage=(5, 16)
    )

    for adapter in every_way(document):
        response = await adapter.get_response(QUESTION)
        assert (response.status, response.finish_reason, response.text) == ("incomplete", finish, "Cut sh")


@pytest.mark.parametrize("litellm", [False, True])
async def test_truncated_stream_raises_malformed_with_what_arrived(litellm: bool) -> None:
    body = sse(events_until_text(), litellm=False)
    if litellm:
        body += "data: [DONE]\n\n"

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.response_id == "resp_test"
        assert caught.value.request_id == REQUEST_ID
        assert_partial_text(caught.value.partial, "Half of the answ")


async def test_empty_stream_raises_malformed_with_nothing_partial() -> None:
    for adapter in adapters_for(Recorder([answer(": keep-alive\n\n", SSE)])):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.partial is None


async def test_undecodable_data_line_raises_malformed_with_what_arrived() -> None:
    body = sse(events_until_text()) + "data: {not json at all\n\n"

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert "not valid JSON" in caught.value.message
        assert_partial_text(caught.value.partial, "Half of the answ")


async def test_an_event_missing_a_required_field_raises_malformed() -> None:
    events = [*events_until_text(), {"type": "response.output_text.delta", "delta": "no index"}]

    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert "output_index" in caught.value.message
        assert_partial_text(caught.value.partial, "Half of the answ")


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        ("<html>Bad gateway</html>", "text/html", MalformedResponseError),
        ("[1, 2, 3]", JSON, MalformedResponseError),
        ('{"hello": "world"}', JSON, MalformedResponseError),
        ('{"error": {"code": "quota", "message": "Out of quota"}}', JSON, ResponseFailedError),
        (b"\xff\xfe not text", "application/octet-stream", MalformedResponseError),
    ],
)
async def test_a_body_that_is_neither_shape_raises_its_typed_error(
    body: str | bytes, content_type: str, expected: type[ChatError]
) -> None:
    for adapter in adapters_for(Recorder([answer(body, content_type)])):
        with pytest.raises(expected) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.request_id == REQUEST_ID


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 429, 500, 503])
async def test_http_status_errors_raise_transport_errors(status: int) -> None:
    body = json.dumps(
        {"error": {"message": f"Incorrect API key provided: {API_KEY}", "code": "bad", "type": "t"}}
    )

    for adapter in adapters_for(Recorder([answer(body, JSON, status)])):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response(QUESTION)
        error = caught.value
        assert (error.status_code, error.attempts, error.request_id) == (status, 1, REQUEST_ID)
        assert "(bad)" in error.message
        assert API_KEY not in str(error)
        assert API_KEY not in repr(error)
        assert error.__cause__ is None


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str, dict[str, Any]]]:
    return [(r.levelno, r.getMessage(), r.__dict__) for r in caplog.records]


@pytest.mark.parametrize("status", [429, 500])
async def test_retried_status_errors_count_every_attempt_and_log_each(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder([answer('{"error": {"message": "busy"}}', JSON, status)])
    logger = logging.getLogger("tests.responses.retries")

    for adapter in adapters_for(recorder, logger=logger, max_retries=2):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=logger.name), pytest.raises(ChatTransportError) as caught:
            await adapter.get_response(QUESTION)
        assert (caught.value.status_code, caught.value.attempts) == (status, 3)
        records = logged(caplog)
        assert [(level, message) for level, message, _ in records] == [
            (logging.INFO, f"Responses attempt 1 failed ({status})"),
            (logging.INFO, f"Responses attempt 2 failed ({status})"),
            (logging.INFO, f"Responses attempt 3 failed ({status})"),
            (logging.WARNING, "Responses request failed: ChatTransportError"),
        ]
        for number, (_, _, fields) in enumerate(records[:3], start=1):
            assert (fields["attempt"], fields["status_code"], fields["request_id"]) == (
                number,
                status,
                REQUEST_ID,
            )
            assert fields["request_digest"]["item_counts"] == {"message": 1}
        final = records[3][2]
        assert (final["attempts"], final["status_code"], final["request_id"]) == (3, status, REQUEST_ID)
        assert final["error_type"] == "ChatTransportError"
        for _, _, fields in records:
            assert "Summarize" not in json.dumps(fields, default=str)
            assert API_KEY not in json.dumps(fields, default=str)
    assert [int(r.headers["x-stainless-retry-count"]) for r in recorder.requests] == [0, 1, 2, 0, 1, 2]


async def test_a_success_after_retries_is_logged_with_its_attempts(caplog: pytest.LogCaptureFixture) -> None:
    document = response_document([message_item("msg_1", "ok")])
    recorder = Recorder([answer("{}", JSON, 503), answer(json.dumps(document), JSON)])
    sse_adapter, _ = adapters_for(recorder, max_retries=1)

    with caplog.at_level(logging.INFO, logger="adapters.responses"):
        response = await sse_adapter.get_response(QUESTION)

    assert response.text == "ok"
    (first, second) = logged(caplog)
    assert first[:2] == (logging.INFO, "Responses attempt 1 failed (503)")
    assert second[:2] == (logging.INFO, "Responses request succeeded after 2 attempts")
    assert (second[2]["attempts"], second[2]["status_code"], second[2]["response_id"]) == (
        2,
        200,
        "resp_test",
    )


async def test_timeout_raises_transport_error_without_status_after_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def time_out(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no answer", request=request)

    for adapter in adapters_for(Recorder([time_out]), max_retries=1):
        caplog.clear()
        with (
            caplog.at_level(logging.INFO, logger="adapters.responses"),
            pytest.raises(ChatTransportError) as caught,
        ):
            await adapter.get_response(QUESTION)
        assert (caught.value.status_code, caught.value.attempts) == (None, 2)
        assert "timed out" in caught.value.message
        attempts = [fields for level, _, fields in logged(caplog) if level == logging.INFO]
        assert [(f["attempt"], f["status_code"], f["error_type"]) for f in attempts] == [
            (1, None, "ReadTimeout"),
            (2, None, "ReadTimeout"),
        ]


async def test_connection_refused_raises_transport_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    for adapter in adapters_for(Recorder([refuse])):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response(QUESTION)
        assert (caught.value.status_code, caught.value.attempts) == (None, 1)
        assert isinstance(caught.value.__cause__, Exception)


async def test_a_connection_dropped_mid_stream_raises_transport_error_with_what_arrived() -> None:
    head = sse(events_until_text()).encode()

    def dropping(request: httpx.Request) -> httpx.Response:
        return streamed(Pieces(head, then=httpx.ReadError("connection reset")))

    sse_adapter, json_adapter = adapters_for(Recorder([dropping]))
    with pytest.raises(ChatTransportError) as caught:
        await sse_adapter.get_response(QUESTION)
    assert caught.value.status_code is None
    assert caught.value.request_id == REQUEST_ID
    assert_partial_text(caught.value.partial, "Half of the answ")

    with pytest.raises(ChatTransportError):
        await json_adapter.get_response(QUESTION)


async def test_a_json_body_dropped_mid_read_on_the_stream_path_raises_transport_error() -> None:
    def dropping(request: httpx.Request) -> httpx.Response:
        return streamed(Pieces(b'{"id": "resp_', then=httpx.ReadError("connection reset")), JSON)

    sse_adapter, _ = adapters_for(Recorder([dropping]))
    with pytest.raises(ChatTransportError) as caught:
        await sse_adapter.get_response(QUESTION)
    assert caught.value.status_code is None


def test_adapters_show_no_secret_in_their_repr() -> None:
    for adapter in adapters_for(Recorder([answer("{}")])):
        assert API_KEY not in repr(adapter)
        assert "gpt-test" in repr(adapter)


async def test_programming_errors_are_not_disguised_as_chat_errors() -> None:
    for adapter in adapters_for(Recorder([answer("{}")])):
        with pytest.raises(ValueError, match="function results only"):
            await adapter.get_response([ChatMessage("tool", (TextContent("stray"),))])


# ---------------------------------------------------------------- the deadline


def _never_answering(started: asyncio.Event) -> Any:
    """A handler that sets ``started`` and then never answers (a gateway that accepted and went quiet)."""

    async def never_answers(request: httpx.Request) -> httpx.Response:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    # MockTransport awaits a handler's coroutine; Recorder's type names only plain handlers.
    return cast(Any, never_answers)


@pytest.mark.parametrize("content_type", [SSE, JSON])
async def test_a_stream_that_stalls_ends_at_the_deadline_with_what_arrived(content_type: str) -> None:
    document = response_document([message_item("msg_1", "What arrived before the gateway stalled")])
    head = sse(stream_events(document, chunk=5, terminal=False)[:6]).encode()

    def stalling(request: httpx.Request) -> httpx.Response:
        # The JSON adapter reads a stream labelled JSON as it arrives too, so what came is kept.
        return streamed(Pieces(head, then="stall"), content_type)

    # The deadline must fire after the head is read, not during the SDK's lazy set-up of its event
    # types (seconds, once per process, on a loaded machine): that is paid first, and the deadline is
    # long enough for a loaded machine to read six events from memory.
    await warm_up_event_parsing()
    settings = ResponsesSettings(model="gpt-test", deadline_seconds=STALL_DEADLINE)
    for adapter in adapters_for(Recorder([stalling]), settings, timeout=TEST_BOUND):
        async with asyncio.timeout(TEST_BOUND):
            with pytest.raises(ChatTransportError) as caught:
                await adapter.get_response(QUESTION)
        error = caught.value
        assert error.message == f"no complete answer within agent.deadline_seconds={STALL_DEADLINE:g} s"
        assert (error.status_code, error.attempts, error.request_id) == (None, 1, REQUEST_ID)
        assert error.partial is not None
        assert error.partial.text.startswith("What")
        assert error.response_id == "resp_test"
        assert error.__cause__ is None
        assert error.__context__ is None


async def test_a_gateway_that_never_answers_ends_at_the_deadline_with_nothing_partial() -> None:
    settings = ResponsesSettings(model="gpt-test", deadline_seconds=DEADLINE)
    recorder = Recorder([_never_answering(asyncio.Event())])
    for adapter in adapters_for(recorder, settings, timeout=TEST_BOUND):
        async with asyncio.timeout(TEST_BOUND):
            with pytest.raises(ChatTransportError) as caught:
                await adapter.get_response(QUESTION)
        assert "deadline_seconds=0.3" in caught.value.message
        assert caught.value.partial is None


async def test_the_transport_is_told_the_seconds_left_of_the_current_request() -> None:
    told: list[float | None] = []
    ok = json.dumps(response_document([message_item("msg_1", "ok")]))

    def answering(request: httpx.Request) -> httpx.Response:
        listener = LISTENER.get()
        told.append(None if listener is None else listener.seconds_left())
        return answer(ok, JSON)

    settings = ResponsesSettings(model="gpt-test", deadline_seconds=42.0)
    for adapter in adapters_for(Recorder([answering]), settings):
        assert (await adapter.get_response(QUESTION)).text == "ok"

    assert len(told) == 2
    for left in told:
        assert left is not None
        assert 0 < left <= 42.0
    assert LISTENER.get() is None


# ---------------------------------------------------------------- the exception firewall around a body

RAISED_WHILE_READING: list[Exception] = [
    RecursionError("maximum recursion depth exceeded while decoding a JSON array"),
    TypeError("a bug in a library"),
    ValueError(f"odd value {API_KEY}"),
    KeyError("missing"),
    OverflowError("too big"),
    ResponseTooLargeError(4096),
    httpx.DecodingError("bad gzip"),
    httpx.ReadError("reset"),
]


@pytest.mark.parametrize("raised", RAISED_WHILE_READING, ids=lambda value: type(value).__name__)
async def test_whatever_breaks_while_the_body_is_read_is_a_chat_error_with_what_arrived(
    raised: Exception,
) -> None:
    document = response_document([message_item("msg_1", "Half of the answer that never finished")])
    head = sse(stream_events(document, chunk=4, terminal=False)[:6]).encode()

    for adapter in adapters_for(Recorder([lambda _: streamed(Pieces(head, then=raised))])):
        with pytest.raises(ChatError) as caught:
            await adapter.get_response(QUESTION)
        error = caught.value
        assert error.partial is not None
        assert error.partial.text.startswith("Half")
        assert (error.request_id, error.response_id) == (REQUEST_ID, "resp_test")
        # Raised outside the handler: no SDK or library exception is reachable as its context.
        assert error.__context__ is None or isinstance(error.__context__, LowerLevelError)
        assert error.__cause__ is None or isinstance(error.__cause__, LowerLevelError)
        assert_shows_no_key(error)


@pytest.mark.parametrize("raised", [KeyboardInterrupt(), SystemExit(3), asyncio.CancelledError()])
async def test_interrupts_exits_and_cancellation_pass_through_untouched(raised: BaseException) -> None:
    def interrupted(request: httpx.Request) -> httpx.Response:
        raise raised

    for adapter in adapters_for(Recorder([interrupted])):
        with pytest.raises(type(raised)) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value is raised


async def test_a_cancelled_request_is_cancelled_not_mapped() -> None:
    started = asyncio.Event()

    for adapter in adapters_for(Recorder([_never_answering(started)])):
        started.clear()
        task = asyncio.create_task(adapter.get_response(QUESTION))
        async with asyncio.timeout(10):
            await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


@pytest.mark.parametrize("charset", ["utf-16", "utf-32"])
@pytest.mark.parametrize("status", [400, 422, 500])
async def test_an_error_status_whose_body_will_not_decode_keeps_its_status(charset: str, status: int) -> None:
    body = b'{"error": {"message": "bad request", "code": "bad"}}'
    content_type = f"application/json; charset={charset}"

    for adapter in adapters_for(Recorder([answer(body, content_type, status)])):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.status_code == status
        assert caught.value.message.startswith(f"HTTP {status} from the Responses endpoint")
        assert caught.value.request_id == REQUEST_ID


# ---------------------------------------------------------------- secrets a gateway echoes


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        (
            {"error": {"type": f"key {API_KEY} token {GATEWAY_TOKEN}", "message": "denied"}},
            f" (key {REDACTED} token {REDACTED}): denied",
        ),
        (
            f"<html>\n  <p>key {API_KEY} token {GATEWAY_TOKEN}</p>\n</html>",
            f": <html> <p>key {REDACTED} token {REDACTED}</p> </html>",
        ),
        ({"error": {"code": 401}}, ": no message"),
    ],
)
async def test_a_status_errors_message_shows_the_providers_words_scrubbed(body: object, shown: str) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Token": GATEWAY_TOKEN})

    for adapter in adapters_for(Recorder([answer(text, JSON, 403)]), settings):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response([ChatMessage.user("hi")])
        assert caught.value.message == f"HTTP 403 from the Responses endpoint{shown}"


async def test_the_sdk_and_http_libraries_log_neither_the_key_nor_header_values_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # openai 3.57 no longer logs request options (headers included) at DEBUG; this holds it to that.
    ok = json.dumps(response_document([message_item("msg_1", "ok")]))
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Token": GATEWAY_TOKEN})
    recorder = Recorder([answer("{}", JSON, 500), answer(ok, JSON)])

    with caplog.at_level(logging.DEBUG):
        for adapter in adapters_for(recorder, settings, max_retries=1):
            assert (await adapter.get_response([ChatMessage.user("hi")])).text == "ok"

    names = {record.name.split(".")[0] for record in caplog.records}
    assert {"openai", "httpx", "adapters"} <= names
    for record in caplog.records:
        shown = record.getMessage() + repr(vars(record))
        assert API_KEY not in shown
        assert GATEWAY_TOKEN not in shown
    assert all(request.headers["x-gateway-token"] == GATEWAY_TOKEN for request in recorder.requests)
    assert openai.__version__.startswith("3.")


async def test_secrets_a_gateway_echoes_in_a_streamed_failure_reach_no_part_of_the_error() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_document([], status="in_progress")},
        {"type": "error", "code": "bad_key", "message": f"key {API_KEY} refused"},
    ]

    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        with pytest.raises(ResponseFailedError) as raised:
            await all_updates(adapter)
        assert_shows_no_key(raised.value)


# ---------------------------------------------------------------- streaming to the caller


@pytest.mark.parametrize("status", ["incomplete", "failed"])
async def test_an_incomplete_answer_ends_with_its_status_and_a_failed_one_raises(status: str) -> None:
    document = response_document(
        [message_item("msg_1", "cut")],
        status=status,
        incomplete_reason="max_output_tokens" if status == "incomplete" else None,
        error={"code": "server_error", "message": "boom"} if status == "failed" else None,
    )
    body = sse(stream_events(document))

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        if status == "failed":
            with pytest.raises(ResponseFailedError) as raised:
                await all_updates(adapter)
            assert raised.value.partial is not None
            assert raised.value.partial.text == "cut"
        else:
            updates = await all_updates(adapter)
            assert updates[-1].finish_reason == "length"
            assert ChatResponse.from_updates(updates) == await adapter.get_response(QUESTION)


async def test_a_stream_cut_before_its_terminal_event_raises_from_the_iterator_with_what_arrived() -> None:
    document = response_document([message_item("msg_1", "half an answer")])
    body = sse(stream_events(document, terminal=False))

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        seen: list[ChatResponseUpdate] = []

        async def read(adapter: ChatPort = adapter, seen: list[ChatResponseUpdate] = seen) -> None:
            async for update in adapter.get_streaming_response(QUESTION):
                seen.append(update)

        with pytest.raises(MalformedResponseError) as raised:
            await read()
        assert "".join(u.text for u in seen) == "half an answer"
        assert raised.value.partial is not None
        assert raised.value.partial.text == "half an answer"
        assert isinstance(raised.value, ChatError)


async def test_a_streamed_body_over_the_cap_is_refused_from_the_iterator_with_what_arrived() -> None:
    document = response_document([message_item("msg_1", "word " * 4_000)])
    body = sse(stream_events(document, chunk=5))
    settings = ResponsesSettings(model="gpt-test", max_response_bytes=len(body) // 2)

    for adapter in adapters_for(Recorder([answer(body, SSE)]), settings):
        with pytest.raises(MalformedResponseError) as raised:
            await all_updates(adapter)
        assert "max_response_bytes" in str(raised.value)


@pytest.mark.parametrize("shape", ["event", "document"])
async def test_a_body_under_the_cap_that_would_bloat_once_parsed_is_refused_unparsed(shape: str) -> None:
    # 150 KB of empty objects under a 256 KiB cap: parsed, about 3.6 MB (72 bytes an object and its
    # place), more than three times the cap; the cap alone would let it through.
    output = b",".join([b"{}"] * 50_000)
    document = b'{"id":"resp_bloat","object":"response","status":"completed","output":[' + output + b"]}"
    if shape == "event":
        created = sse(stream_events(response_document([], response_id="resp_bloat"))[:1]).encode()
        body = created + b'data: {"type":"response.completed","response":' + document + b"}\n\n"
        label = SSE
    else:
        body, label = document, JSON
    cap = 256 * 1024
    assert len(body) < cap
    settings = ResponsesSettings(model="gpt-test", max_response_bytes=cap)

    for adapter in adapters_for(Recorder([answer(body, label)]), settings):
        with pytest.raises(MalformedResponseError) as raised:
            await adapter.get_response(QUESTION)
        assert raised.value.message.startswith("the response would take about ")
        assert raised.value.message.endswith(
            f"once parsed, more than three times agent.max_response_bytes ({cap} bytes): "
            "too many small values"
        )
        if shape == "event":
            # What had arrived before the event: the response's id.
            assert raised.value.partial is not None
            assert raised.value.partial.response_id == "resp_bloat"


@pytest.mark.parametrize("items", [1, 3_000])
async def test_an_ordinary_body_near_the_cap_is_not_taken_for_a_bloating_one(items: int) -> None:
    # Calls of about 1 KB of arguments, or one long text, up to the cap: parsed, a little over their size.
    arguments = json.dumps({"owner": "Ana", "item": 3, "due": "2026-12-04", "notes": "word " * 200})
    output = [
        {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "record",
         "arguments": arguments, "status": "completed"}
        for n in range(items)
    ] if items > 1 else [message_item("msg_1", "word " * 200_000)]  # fmt: skip
    body = json.dumps(response_document(output))
    settings = ResponsesSettings(model="gpt-test", max_response_bytes=len(body) + 1)

    for adapter in adapters_for(Recorder([answer(body, JSON)]), settings):
        response = await adapter.get_response(QUESTION)
        assert len(response.function_calls) == (items if items > 1 else 0)


async def test_the_request_goes_out_byte_for_byte_as_the_sdks_keywords_would_send_it() -> None:
    # The adapters hand the SDK the body already written (client.post with content=, which skips the
    # SDK's walk of it against its TypedDicts); what goes out must be what create()'s keywords produce.
    tool = ToolSpec("record", "Record an item.", {"type": "object", "properties": {"n": {"type": "integer"}}})
    call = FunctionCallContent.parse(call_id="call_1", name="record", raw_arguments='{"n": 1}')
    messages = (
        ChatMessage.user("Summarize — with ✓ and 会议"),
        ChatMessage("assistant", (TextContent("Recording."), call)),
        ChatMessage("tool", (FunctionResultContent("call_1", {"ok": True}),)),
    )
    options = ChatOptions(instructions="Be brief.", tools=(tool,), temperature=0.5, metadata={"run": "r1"})
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Team": "notes"})
    document = response_document([message_item("msg_1", "Done.")])
    for streaming in (True, False):
        recorder = Recorder([served(document, streaming=streaming)])
        adapter = adapters_for(recorder, settings)[0 if streaming else 1]
        await adapter.get_response(messages, options)
        request = ResponsesPayloadBuilder(settings).build(messages, options)
        keywords = Recorder([served(document, streaming=streaming)])
        via_keywords = client_for(keywords).responses
        headers = dict(request.headers)
        if streaming:
            await (await via_keywords.create(stream=True, extra_headers=headers, **request.body)).close()
        else:
            async with via_keywords.with_streaming_response.create(
                stream=False, extra_headers=headers, **request.body
            ):
                pass
        sent, expected = recorder.requests[0], keywords.requests[0]
        assert (
            json.loads(sent.content) == json.loads(expected.content) == {**request.body, "stream": streaming}
        )
        assert len(sent.content) == len(expected.content)
        assert (sent.method, sent.url) == (expected.method, expected.url)
        varying = {"x-stainless-retry-count", "x-stainless-read-timeout"}
        assert {k: v for k, v in sent.headers.items() if k not in varying} == {
            k: v for k, v in expected.headers.items() if k not in varying
        }
        assert sent.headers["authorization"] == f"Bearer {API_KEY}"
        assert sent.headers["x-team"] == "notes"
        assert sent.headers["x-initiator"] == "user"


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
async def test_a_conversation_over_max_output_items_is_refused_before_anything_is_sent(
    streaming: bool,
) -> None:
    recorder = Recorder([answer(json.dumps(response_document([message_item("msg_1", "ok")])), JSON)])
    settings = ResponsesSettings(model="gpt-test", max_output_items=5)
    calls = tuple(FunctionCallContent.parse(call_id=f"c{n}", name="t", raw_arguments="{}") for n in range(5))
    history = [ChatMessage.user("hi"), ChatMessage("assistant", calls)]

    for adapter in adapters_for(recorder, settings):
        asked = all_updates(adapter, history) if streaming else adapter.get_response(history)
        with pytest.raises(ChatError) as caught:
            await asked
        assert caught.value.message == (
            "the conversation holds 6 items, more than agent.max_output_items (5) a request may send"
        )
        assert await adapter.get_response(history[:1]) is not None
    assert len(recorder.requests) == 2


# ---------------------------------------------------------------- output items over the limit, in a stream


def _items(count: int) -> list[dict[str, Any]]:
    return [message_item(f"msg_{index}", f"text {index}") for index in range(count)]


def _texts(partial: ChatResponse) -> list[str | None]:
    """Each content's text, in order (None for a content that holds none)."""
    return [c.text if isinstance(c, TextContent) else None for m in partial.messages for c in m.contents]


async def test_a_short_stream_of_more_items_than_the_limit_is_refused_once_it_ends() -> None:
    # 3 items, 24 events: too few for a look part way (every 32 events), so the end of the stream says it.
    body = sse(stream_events(response_document(_items(3))))
    limited = ResponsesSettings(model="gpt-test", max_output_items=2)

    for adapter in adapters_for(Recorder([answer(body, SSE)]), limited):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.message == "the response holds more than agent.max_output_items (2) output items"
        assert caught.value.request_id == REQUEST_ID
        assert caught.value.partial is not None
        assert caught.value.partial.response_id == "resp_test"
        assert _texts(caught.value.partial) == ["text 0", "text 1", "text 2"]


async def test_a_stream_of_more_items_than_the_limit_is_refused_part_way_though_its_peer_holds_it_open() -> (
    None
):
    # 20 items, no terminal event, then nothing more: only the look part way can end it before the deadline.
    body = sse(stream_events(response_document(_items(20)), terminal=False)).encode()
    limited = ResponsesSettings(model="gpt-test", max_output_items=2, deadline_seconds=TEST_BOUND)

    for adapter in adapters_for(Recorder([lambda _: streamed(Pieces(body, 512, then="stall"))]), limited):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.message == "the response holds more than agent.max_output_items (2) output items"
        assert caught.value.partial is not None
        texts = _texts(caught.value.partial)
        # What had arrived when the count was looked at: past the limit, short of the whole answer.
        assert 2 < len(texts) < 20
        assert texts == [f"text {index}" for index in range(len(texts))]


# ------------------------------------------------------------- what follows a whole answer on the connection


class _Counted(httpx.AsyncByteStream):
    """A body in the given chunks, counting those read; then the end, or a peer that holds it open."""

    def __init__(self, chunks: list[bytes], *, stall: bool = False) -> None:
        self._chunks = chunks
        self._stall = stall
        self.read = 0
        self.closed = False

    async def __aiter__(self) -> Any:
        for chunk in self._chunks:
            self.read += 1
            yield chunk
        if self._stall:
            await asyncio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


WHOLE = sse(stream_events(response_document([message_item("msg_1", "whole")]))).encode()


@pytest.mark.parametrize(("version", "drained"), [("HTTP/1.1", True), ("HTTP/2", False)])
async def test_what_follows_a_whole_answer_is_read_to_its_end_only_on_an_http_1_1_connection(
    version: str, drained: bool
) -> None:
    bodies: list[_Counted] = []

    def answering(_: httpx.Request) -> httpx.Response:
        body = _Counted([WHOLE, b": after the answer\n\n", b": and more\n\n"])
        bodies.append(body)
        extensions = {"http_version": version.encode()}
        return httpx.Response(200, headers={"content-type": SSE}, stream=body, extensions=extensions)

    for adapter in adapters_for(Recorder([answering])):
        assert (await adapter.get_response(QUESTION)).text == "whole"

    # HTTP/1.1: read to its end, so that the connection can serve the next request. HTTP/2 streams share
    # a connection that a stream left unread does not hold up: closed at once.
    assert [body.read for body in bodies] == [3 if drained else 1] * 2
    assert all(body.closed for body in bodies)


async def test_more_than_64_kib_after_a_whole_answer_is_left_unread_and_closed() -> None:
    bodies: list[_Counted] = []

    def answering(_: httpx.Request) -> httpx.Response:
        # 40 pieces of 16 KiB at hand after the answer, then a peer that holds the stream open.
        body = _Counted([WHOLE, *[b": " + b"x" * (16 * 1024 - 4) + b"\n\n"] * 40], stall=True)
        bodies.append(body)
        return httpx.Response(200, headers={"content-type": SSE}, stream=body)

    for adapter in adapters_for(
        Recorder([answering]), ResponsesSettings(model="gpt-test", deadline_seconds=TEST_BOUND)
    ):
        assert (await adapter.get_response(QUESTION)).text == "whole"

    # Read until more than 64 KiB past the answer have come (the fifth piece), no further: the rest, and
    # the peer holding the stream open, are the close's to end.
    assert [body.read for body in bodies] == [1 + 5] * 2
    assert all(body.closed for body in bodies)


# ---------------------------------------------------------------- a failure while gathering what had arrived


async def test_a_failure_while_gathering_what_arrived_still_raises_the_typed_error_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(self: EventFolder) -> ChatResponse | None:
        raise RuntimeError("a folder state no response can be built from")

    head = sse(events_until_text()).encode()
    recorder = Recorder([lambda _: streamed(Pieces(head, then=httpx.ReadError("connection reset")))])
    monkeypatch.setattr(EventFolder, "partial", broken)

    for adapter in adapters_for(recorder):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response(QUESTION)
        # The break is still said as the break it is, with the ids known; only what arrived is left out.
        assert caught.value.message == "the connection to the Responses endpoint failed"
        assert (caught.value.status_code, caught.value.request_id, caught.value.partial) == (
            None,
            REQUEST_ID,
            None,
        )


# ---------------------------------------------------------------- faults json.loads finds, in large text too


@pytest.mark.parametrize("size", [100, LARGE], ids=["small", "parsed-in-steps"])
async def test_an_events_data_opening_with_a_byte_order_mark_is_refused_large_or_small(size: int) -> None:
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0}
    data = json.dumps({**delta, "delta": "y" * size, "sequence_number": 99, "logprobs": []})
    body = sse(events_until_text()) + f"data: \ufeff{data}\n\n"

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.message == "an event's data was not valid JSON (at character 0)"
        assert_partial_text(caught.value.partial, "Half of the answ")


@pytest.mark.parametrize("size", [100, LARGE], ids=["small", "parsed-in-steps"])
async def test_a_json_document_followed_by_more_text_is_refused_large_or_small(size: int) -> None:
    document = json.dumps(response_document([message_item("msg_1", "y" * size)]))

    for adapter in adapters_for(Recorder([answer(document + ' {"id": "resp_second"}', JSON)])):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        # Not cut short (so not asked for again): something is wrong after the document.
        assert caught.value.message == "the body is neither a JSON Response nor an event stream"
        assert caught.value.partial is None


# ---------------------------------------------------------------- a body with nothing in it


@pytest.mark.parametrize("body", [b"", b"\n", b" \r\n\r\n "], ids=["empty", "newline", "blank-lines"])
@pytest.mark.parametrize("label", [SSE, JSON], ids=["sse-label", "json-label"])
async def test_a_body_of_nothing_but_blanks_is_refused_by_its_label_with_nothing_partial(
    body: bytes, label: str
) -> None:
    # A byte at a time: no piece says the shape, so the label does.
    recorder = Recorder([lambda _: streamed(Pieces(body, 1), label)])

    for adapter in adapters_for(recorder):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.message == (
            "the event stream ended before a terminal event (response.completed, .incomplete or .failed)"
            if label == SSE
            else "the body is neither a JSON Response nor an event stream"
        )
        assert (caught.value.partial, caught.value.request_id) == (None, REQUEST_ID)
