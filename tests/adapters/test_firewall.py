"""The exception firewall: every lower-level exception becomes a ChatError, built once, chained safely."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any, cast

import httpx
import httpx2
import pytest

from adapters.redaction import Redactor
from adapters.responses import ResponsesSettings
from adapters.responses.error_mapping import (
    MAX_ID,
    DeadlineExceededError,
    LowerLevelError,
    ProviderFailureError,
    UnreadableResponseError,
    map_error,
    scrubbed_cause,
)
from adapters.responses.http_front import ResponseTooLargeError
from domain import (
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    MalformedResponseError,
    ResponseFailedError,
)
from tests.support.gateway import (
    API_KEY,
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

REDACTOR = Redactor([API_KEY])
QUESTION = [ChatMessage.user("Summarize the meeting")]
TRANSPORT = ChatTransportError
MALFORMED = MalformedResponseError
# Every exception class of httpx (the container's client) and httpx2 (the SDK's own), with the domain
# error it becomes once a successful answer had started. A class the library adds later fails
# test_every_httpx_exception_class_is_mapped until it is placed here.
HTTPX_EXPECTED: dict[str, type[ChatError]] = {
    "HTTPError": MALFORMED,
    "RequestError": MALFORMED,
    "TransportError": TRANSPORT,
    "TimeoutException": TRANSPORT,
    "ConnectTimeout": TRANSPORT,
    "ReadTimeout": TRANSPORT,
    "WriteTimeout": TRANSPORT,
    "PoolTimeout": TRANSPORT,
    "NetworkError": TRANSPORT,
    "ConnectError": TRANSPORT,
    "ReadError": TRANSPORT,
    "WriteError": TRANSPORT,
    "CloseError": TRANSPORT,
    "ProtocolError": TRANSPORT,
    "LocalProtocolError": TRANSPORT,
    "RemoteProtocolError": TRANSPORT,
    "ProxyError": TRANSPORT,
    "UnsupportedProtocol": TRANSPORT,
    "SSEError": TRANSPORT,
    "TooManyRedirects": TRANSPORT,
    "HTTPStatusError": TRANSPORT,
    "DecodingError": MALFORMED,
    "InvalidURL": MALFORMED,
    "CookieConflict": MALFORMED,
    "StreamError": MALFORMED,
    "StreamConsumed": MALFORMED,
    "StreamClosed": MALFORMED,
    "ResponseNotRead": MALFORMED,
    "RequestNotRead": MALFORMED,
}
PARTIAL = ChatResponse(response_id="resp_p", model_id="m_p")


def httpx_exception_classes() -> list[type[Exception]]:
    modules: tuple[ModuleType, ...] = (httpx, httpx2)
    return sorted(
        {
            value
            for module in modules
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Exception)
        },
        key=lambda cls: (cls.__module__, cls.__name__),
    )


def httpx_instance(cls: type[Exception]) -> Exception:
    library: Any = httpx if cls.__module__.split(".")[0] == "httpx" else httpx2
    request = library.Request("POST", "http://gateway.test/v1/responses")
    values: dict[str, Any] = {
        "message": f"boom {API_KEY}",
        "request": request,
        "response": library.Response(502, request=request),
    }
    parameters = inspect.signature(cls.__init__).parameters
    positional = [values[name] for name in parameters if name == "message"]
    keywords = {
        name: values[name] for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY and name in values
    }
    return cls(*positional, **keywords)


def assert_shows_no_secret(error: BaseException) -> None:
    chain = [error]
    while chain[-1].__cause__ is not None:
        chain.append(chain[-1].__cause__)
    for link in chain:
        assert API_KEY not in str(link), link
        assert API_KEY not in repr(link), link


def test_every_httpx_exception_class_is_mapped() -> None:
    classes = httpx_exception_classes()
    assert {cls.__name__ for cls in classes} == set(HTTPX_EXPECTED)

    for cls in classes:
        exc = httpx_instance(cls)
        after_answer = map_error(exc, partial=PARTIAL, answered=True, redactor=REDACTOR)
        before_answer = map_error(exc, answered=False, redactor=REDACTOR)
        assert type(after_answer) is HTTPX_EXPECTED[cls.__name__], cls
        expected_before = ChatError if HTTPX_EXPECTED[cls.__name__] is MALFORMED else type(after_answer)
        if cls.__name__ == "DecodingError":
            expected_before = MALFORMED
        assert type(before_answer) is expected_before, cls
        assert (after_answer.partial, after_answer.response_id, after_answer.model_id) == (
            PARTIAL,
            "resp_p",
            "m_p",
        )
        cause = scrubbed_cause(exc, REDACTOR)
        assert isinstance(cause, LowerLevelError)
        assert cause.original_type is cls
        for shown in (after_answer, before_answer, cause):
            assert_shows_no_secret(shown)


def _unicode_decode_error() -> UnicodeDecodeError:
    try:
        b"data: \xff".decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    raise AssertionError("the bytes decoded")


def _recursion_error() -> RecursionError:
    try:
        json.loads("[" * 100_000)
    except RecursionError as exc:
        return exc
    raise AssertionError("the nesting parsed")


STDLIB_CASES: list[tuple[BaseException, type[ChatError], str]] = [
    (_unicode_decode_error(), MALFORMED, "not valid UTF-8"),
    (_recursion_error(), MALFORMED, "nests too deeply"),
    (json.JSONDecodeError(f"Expecting value {API_KEY}", f"data: {API_KEY}", 6), MALFORMED, "character 6"),
    (ResponseTooLargeError(1024), MALFORMED, "agent.max_response_bytes (1024 bytes)"),
    (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), ChatError, "UTF-8"),
    (TypeError(f"odd {API_KEY}"), MALFORMED, "TypeError while folding"),
    (AttributeError("no such field"), MALFORMED, "AttributeError while folding"),
    (OverflowError("timestamp out of range"), MALFORMED, "OverflowError while folding"),
    (ValueError("Exceeds the limit (4300 digits)"), MALFORMED, "ValueError while folding"),
    (KeyError(API_KEY), MALFORMED, "KeyError while folding"),
    (DeadlineExceededError(600.0), TRANSPORT, "no complete answer within agent.deadline_seconds=600 s"),
    (UnreadableResponseError("the JSON body is not an object"), MALFORMED, "the JSON body is not an object"),
    (ProviderFailureError("quota", f"no {API_KEY}", "fallback", None), ResponseFailedError, "no [REDACTED]"),
]


@pytest.mark.parametrize(("exc", "expected", "says"), STDLIB_CASES, ids=lambda value: type(value).__name__)
def test_lower_level_exceptions_become_their_domain_errors(
    exc: BaseException, expected: type[ChatError], says: str
) -> None:
    error = map_error(exc, partial=PARTIAL, request_id=REQUEST_ID, answered=True, redactor=REDACTOR)

    assert type(error) is expected
    assert says in error.message
    assert (error.partial, error.request_id, error.response_id) == (PARTIAL, REQUEST_ID, "resp_p")
    assert_shows_no_secret(error)
    cause = scrubbed_cause(exc, REDACTOR)
    if cause is not None:
        assert_shows_no_secret(cause)


def test_the_stand_in_chain_follows_the_original_chain_and_keeps_its_traceback() -> None:
    try:
        try:
            raise httpx.ReadError(f"peer said {API_KEY}")
        except httpx.ReadError as inner:
            raise RuntimeError("while folding") from inner
    except RuntimeError as outer:
        cause = scrubbed_cause(outer, REDACTOR)
        traceback = outer.__traceback__

    assert isinstance(cause, LowerLevelError)
    assert cause.original_type is RuntimeError
    assert cause.__traceback__ is traceback
    behind = cause.__cause__
    assert isinstance(behind, LowerLevelError)
    assert behind.original_type is httpx.ReadError
    assert str(behind) == "httpx.ReadError: peer said [REDACTED]"
    assert behind.__cause__ is None


class _BrokenBody(httpx.AsyncByteStream):
    """Sends the start of a stream, then raises ``error`` while the body is read."""

    def __init__(self, head: bytes, error: BaseException) -> None:
        self._head = head
        self._error = error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._head
        raise self._error


class _InPieces(httpx.AsyncByteStream):
    """A body sent ``size`` bytes at a time, as a network delivers it."""

    def __init__(self, body: bytes, size: int) -> None:
        self._body = body
        self._size = size

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._body), self._size):
            yield self._body[start : start + self._size]


def _started_stream() -> bytes:
    document = response_document([message_item("msg_1", "Half of the answer that never finished")])
    events = stream_events(document, chunk=4, terminal=False)
    return sse(events[:6]).encode()


RAISED_WHILE_READING: list[Exception] = [
    _recursion_error(),
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
    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": SSE, "x-request-id": REQUEST_ID},
            stream=_BrokenBody(_started_stream(), raised),
        )

    settings = ResponsesSettings(model="gpt-test")
    for adapter in adapters_for(Recorder([broken]), settings):
        with pytest.raises(ChatError) as caught:
            await adapter.get_response(QUESTION)
        error = caught.value
        assert error.partial is not None
        assert error.partial.text.startswith("Half")
        assert (error.request_id, error.response_id) == (REQUEST_ID, "resp_test")
        # Raised outside the handler: no SDK or library exception is reachable as its context.
        assert error.__context__ is None or isinstance(error.__context__, LowerLevelError)
        assert error.__cause__ is None or isinstance(error.__cause__, LowerLevelError)
        assert_shows_no_secret(error)


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

    async def never_answers(request: httpx.Request) -> httpx.Response:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    # MockTransport awaits a handler's coroutine; Recorder's type names only plain handlers.
    for adapter in adapters_for(Recorder([cast(Any, never_answers)])):
        started.clear()
        task = asyncio.create_task(adapter.get_response(QUESTION))
        async with asyncio.timeout(10):
            await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_body_over_the_cap_is_malformed_with_what_arrived() -> None:
    document = response_document([message_item("msg_1", "x" * 20_000)])
    body = sse(stream_events(document, chunk=100))
    settings = ResponsesSettings(model="gpt-test", max_response_bytes=8_000)

    def streamed(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": SSE}, stream=_InPieces(body.encode(), 500))

    for adapter in adapters_for(Recorder([streamed]), settings):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response(QUESTION)
        assert caught.value.message == "the response body exceeded agent.max_response_bytes (8000 bytes)"
        assert caught.value.partial is not None
        assert set(caught.value.partial.text) == {"x"}


class _MisbehavingDecodeError(json.JSONDecodeError):
    """A decode error whose own attributes raise when read."""

    def __getattribute__(self, name: str) -> Any:
        if name == "pos":
            raise RuntimeError("no position")
        return super().__getattribute__(name)


def test_the_mapping_itself_never_raises() -> None:
    weird = _MisbehavingDecodeError("Expecting value", "data: {", 6)

    error = map_error(weird, partial=PARTIAL, redactor=REDACTOR)

    assert type(error) is ChatError
    assert error.message == "the request failed (_MisbehavingDecodeError)"


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


def test_ids_an_error_carries_are_bounded() -> None:
    long_ids = ChatResponse(response_id="r" * 100_000, model_id="m" * 100_000)

    error = map_error(TypeError("x"), partial=long_ids, request_id="q" * 100_000, answered=True)

    for value in (error.response_id, error.model_id, error.request_id):
        assert value is not None
        assert MAX_ID <= len(value) <= MAX_ID + 3  # cut, with an ellipsis


def test_a_real_gateways_long_ids_are_kept_whole() -> None:
    # A LiteLLM response id: base64 of the provider, the model and the provider's own id.
    litellm_id = "resp_" + "bGl0ZWxsbTpjdXN0b21fbGxtX3Byb3ZpZGVyOm9wZW5haTttb2RlbF9pZDo" * 8
    arrived = ChatResponse(response_id=litellm_id, model_id="gpt-5.5")

    error = map_error(TypeError("x"), partial=arrived, request_id=litellm_id, answered=True)

    assert error.response_id == error.request_id == litellm_id
