"""Every fault of the contract gives its typed error, carrying the ids and what had arrived."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from domain import (
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    MalformedResponseError,
    ResponseFailedError,
    TextContent,
)
from tests.support.gateway import (
    API_KEY,
    JSON,
    REQUEST_ID,
    SSE,
    Recorder,
    adapters_for,
    answer,
    message_item,
    response_document,
    sse,
    stream_events,
)

QUESTION = [ChatMessage.user("Summarize the meeting")]


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
    body = sse(stream_events(document, terminal_output=False))

    for served in (answer(body, SSE), answer(json.dumps(document), JSON)):
        for adapter in adapters_for(Recorder([served])):
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
        [message_item("msg_1", "Cut sh")], status="incomplete", incomplete_reason=reason, usage=(5, 16, 21)
    )
    body = sse(stream_events(document))

    for served in (answer(body, SSE), answer(json.dumps(document), JSON)):
        for adapter in adapters_for(Recorder([served])):
            response = await adapter.get_response(QUESTION)
            assert (response.status, response.finish_reason, response.text) == (
                "incomplete",
                finish,
                "Cut sh",
            )


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


class _BreakingStream(httpx.AsyncByteStream):
    """Sends some bytes, then fails the way a dropped connection does."""

    def __init__(self, head: bytes) -> None:
        self._head = head

    async def __aiter__(self) -> Any:
        yield self._head
        raise httpx.ReadError("connection reset")


async def test_a_connection_dropped_mid_stream_raises_transport_error_with_what_arrived() -> None:
    head = sse(events_until_text()).encode()

    def dropping(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": SSE, "x-request-id": REQUEST_ID}, stream=_BreakingStream(head)
        )

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
        return httpx.Response(200, headers={"content-type": JSON}, stream=_BreakingStream(b'{"id": "resp_'))

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
