"""Secret scan: a gateway echoing the API key and an extra header value anywhere leaks neither."""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Final

import attrs
import httpx
import pytest

from adapters.offline.render import message_item, sse, stream_events
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatError, ChatResponse
from tests.support.gateway import JSON, QUESTION, SSE, response_document, sdk_over
from tests.support.leaks import leaking_records
from tests.support.local_server import Received, Sender, serve

API_KEY: Final = "sk-planted-Qz7Kx2Vw9Lm4Tr"
# A header token in base64's alphabet, so that its JSON, repr and URL spellings differ from it.
HEADER_SECRET: Final = "gw/Pp3Rt8+Yu1Io6=="
SECRETS: Final = (API_KEY, HEADER_SECRET)
SETTINGS: Final = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Token": HEADER_SECRET})
LOGGERS: Final = ("adapters", "openai", "httpx", "httpcore")

Adapter = type[ResponsesSseAdapter] | type[ResponsesJsonAdapter]
ADAPTERS: Final[tuple[Adapter, ...]] = (ResponsesSseAdapter, ResponsesJsonAdapter)


def spellings(secret: str) -> set[str]:
    """Every way an echo may carry ``secret``; a prefix counts too, since a cut secret is still half-told."""
    return {
        secret,
        secret[:12],
        json.dumps(secret)[1:-1],
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
    }


MARKERS: Final = frozenset(spelling for secret in SECRETS for spelling in spellings(secret))
ECHO: Final = f"invalid credentials: key {API_KEY}, token {HEADER_SECRET}"
# Provider text is cut to a bounded length: the secret sits across the cut, so cutting before
# redacting would leave a prefix of it.
ECHO_AT_THE_CUT: Final = "x" * 290 + ECHO
ECHO_QUOTED: Final = (
    f"GET /v1/models?key={urllib.parse.quote(API_KEY)}&token={urllib.parse.quote(HEADER_SECRET)}"
)


@attrs.frozen
class Reply:
    """One answer of the echoing gateway."""

    body: bytes
    content_type: str = JSON
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()

    def all_headers(self) -> dict[str, str]:
        return {"content-type": self.content_type, "retry-after-ms": "1", **dict(self.headers)}

    def response(self) -> httpx.Response:
        return httpx.Response(self.status, headers=self.all_headers(), content=self.body)


@attrs.frozen
class Position:
    """Where the gateway echoes the secrets: the replies of one request, in order."""

    replies: tuple[Reply, ...]
    max_retries: int = 0
    succeeds: bool = False


def _json(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(json.dumps(value).encode(), JSON, status, tuple((headers or {}).items()))


def _stream(*events: dict[str, Any], litellm: bool = False) -> Reply:
    started = stream_events(response_document([message_item("msg_1", "Half an answer")]), terminal=False)
    return Reply(sse([*started, *events], litellm=litellm).encode(), SSE)


def _failed_document(error: Any, **changes: Any) -> dict[str, Any]:
    return {**response_document([], status="failed", error=error), **changes}


def _error_object(text: str) -> dict[str, str]:
    return {"message": text, "code": text, "type": text, "param": text}


def _positions() -> Iterator[tuple[str, Position]]:
    for status in (400, 401, 429, 500):
        for field in ("message", "code", "type", "param"):
            yield f"HTTP {status} error.{field}", Position((_json({"error": {field: ECHO}}, status),))
    yield "HTTP 400 every error field", Position((_json({"error": _error_object(ECHO)}, 400),))
    yield "HTTP 400 message at the cut", Position((_json({"error": {"message": ECHO_AT_THE_CUT}}, 400),))
    yield "HTTP 400 URL-quoted echo", Position((_json({"error": {"message": ECHO_QUOTED}}, 400),))
    yield "HTTP 401 flat message and code", Position((_json({"message": ECHO, "code": ECHO}, 401),))
    yield "HTTP 401 error a string", Position((_json({"error": ECHO}, 401),))
    yield "HTTP 401 plain-text body", Position((Reply(ECHO.encode(), "text/plain", 401),))
    yield "HTTP 502 HTML body", Position((Reply(f"<html><p>{ECHO}</p></html>".encode(), "text/html", 502),))
    yield (
        "HTTP 401 headers",
        Position((_json({"error": {"message": "no"}}, 401, {"www-authenticate": f"Bearer {API_KEY}"}),)),
    )
    yield (
        "HTTP 400 request id",
        Position((_json({"error": {"message": "no"}}, 400, {"x-request-id": ECHO}),)),
    )
    yield (
        "stream request id",
        Position((Reply(_stream({"type": "error", "code": "x"}).body, SSE, 200, (("x-request-id", ECHO),)),)),
    )
    for dialect in (False, True):
        name = "litellm" if dialect else "openai"
        yield (
            f"flat error event ({name})",
            Position((_stream({"type": "error", **_error_object(ECHO)}, litellm=dialect),)),
        )
        yield (
            f"nested error event ({name})",
            Position((_stream({"type": "error", "error": _error_object(ECHO)}, litellm=dialect),)),
        )
        yield (
            f"error data line ({name})",
            Position((_stream({"type": "x", "error": _error_object(ECHO)}, litellm=dialect),)),
        )
        yield (
            f"error data line, error a string ({name})",
            Position((_stream({"type": "x", "error": ECHO}, litellm=dialect),)),
        )
        yield (
            f"response.failed ({name})",
            Position(
                (
                    _stream(
                        {"type": "response.failed", "response": _failed_document(_error_object(ECHO))},
                        litellm=dialect,
                    ),
                )
            ),
        )
    yield "error event at the cut", Position((_stream({"type": "error", **_error_object(ECHO_AT_THE_CUT)}),))
    yield (
        "bare error data line",
        Position((Reply(f"data: {json.dumps({'error': _error_object(ECHO)})}\n\n".encode(), SSE),)),
    )
    yield "JSON error document", Position((_json({"error": _error_object(ECHO)}),))
    yield "JSON error document, flat", Position((_json({"error": ECHO, "message": ECHO}),))
    yield "failed JSON Response", Position((_json(_failed_document(_error_object(ECHO))),))
    yield "failed JSON Response, error a string", Position((_json(_failed_document(ECHO)),))
    yield (
        "failed JSON Response at the cut",
        Position((_json(_failed_document(_error_object(ECHO_AT_THE_CUT))),)),
    )
    retried = _json({"error": _error_object(ECHO)}, 500, {"x-request-id": ECHO})
    yield "every retry echoes", Position((retried, retried, retried), max_retries=2)
    answered = _json(response_document([message_item("msg_1", "Fine")]), headers={"x-request-id": ECHO})
    yield "a success after an echoing retry", Position((retried, answered), max_retries=1, succeeds=True)


POSITIONS: Final = dict(_positions())


@contextmanager
def captured(names: tuple[str, ...] = LOGGERS) -> Iterator[list[logging.LogRecord]]:
    """Every record of the named loggers from DEBUG up, whatever levels the host configured."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(logging.DEBUG)
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield records
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


def _exception_texts(error: BaseException) -> Iterator[str]:
    """str and repr of ``error`` and of every exception reachable through its cause and context."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield f"{type(current).__name__}: {current}"
        yield repr(current)
        yield repr(current.args)
        yield from getattr(current, "__notes__", ())
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def error_leaks(error: ChatError) -> list[str]:
    """Each text of ``error`` (chain included, every field) that shows a secret."""
    texts = [*_exception_texts(error), *(f"{name}={value!r}" for name, value in vars(error).items())]
    return [text[:300] for text in texts if any(marker in text for marker in MARKERS)]


def log_leaks(records: list[logging.LogRecord]) -> list[str]:
    """``logger: message`` of each record that shows a secret anywhere."""
    return leaking_records(records, *MARKERS)


async def _ask(
    adapter: ResponsesSseAdapter | ResponsesJsonAdapter, *, streaming: bool = False
) -> ChatResponse | ChatError:
    try:
        if not streaming:
            return await adapter.get_response(QUESTION)
        return ChatResponse.from_updates(
            [update async for update in adapter.get_streaming_response(QUESTION)]
        )
    except ChatError as error:
        return error


async def _assert_nothing_leaks(
    adapter_type: Adapter,
    position: Position,
    http: httpx.AsyncClient,
    base_url: str,
    *,
    streaming: bool = False,
) -> None:
    client = sdk_over(
        http, base_url=base_url, api_key=API_KEY, max_retries=position.max_retries, timeout=10.0
    )
    adapter = adapter_type(client, SETTINGS)
    with captured() as records:
        result = await _ask(adapter, streaming=streaming)
    if position.succeeds:
        assert isinstance(result, ChatResponse)
    else:
        assert isinstance(result, ChatError)
        assert error_leaks(result) == []
    assert records, "nothing was logged, so the scan of the logs proves nothing"
    assert log_leaks(records) == []


@pytest.mark.parametrize("streaming", [False, True], ids=["get_response", "get_streaming_response"])
@pytest.mark.parametrize("adapter_type", ADAPTERS)
@pytest.mark.parametrize("position", list(POSITIONS.values()), ids=list(POSITIONS))
async def test_an_echoed_secret_reaches_no_error_and_no_log_record(
    adapter_type: Adapter, position: Position, streaming: bool
) -> None:
    replies = list(position.replies)
    sent: list[httpx.Request] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return replies.pop(0).response()

    async with httpx.AsyncClient(transport=httpx.MockTransport(reply)) as http:
        await _assert_nothing_leaks(
            adapter_type, position, http, "http://gateway.test/v1", streaming=streaming
        )
    assert replies == []
    # The planted values are the ones the gateway was really sent.
    assert {(r.headers["authorization"], r.headers["x-gateway-token"]) for r in sent} == {
        (f"Bearer {API_KEY}", HEADER_SECRET)
    }


@asynccontextmanager
async def echoing_gateway(position: Position) -> AsyncIterator[str]:
    """A real server on 127.0.0.1 answering with the position's replies, in order."""
    replies = list(position.replies)

    async def handle(request: Received, sender: Sender) -> None:
        reply = replies.pop(0)
        await sender.whole(reply.status, reply.body, reply.all_headers())

    async with serve(handle) as server:
        yield server.base_url
    assert replies == []


@pytest.mark.parametrize("adapter_type", ADAPTERS)
@pytest.mark.parametrize("position", list(POSITIONS.values()), ids=list(POSITIONS))
async def test_over_a_real_socket_httpcore_logs_no_echoed_secret_either(
    adapter_type: Adapter, position: Position
) -> None:
    async with echoing_gateway(position) as base_url, httpx.AsyncClient() as http:
        await _assert_nothing_leaks(adapter_type, position, http, base_url)
