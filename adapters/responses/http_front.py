"""Every HTTP attempt the SDK makes, sent through a front the adapters control.

The SDK retries inside one ``responses.create`` call and exposes nothing per attempt. The adapters
therefore talk through a copy of the given ``AsyncOpenAI`` (``with_options``) whose HTTP client
delegates every request to the original client, so its transport, mounts, auth and event hooks
still apply. The front is where the boundary rules that hold for any client a host hands in live:

- the listener of the current request (a context variable, so concurrent requests never mix) is
  told how each attempt ended, and asked how long the request may still take;
- redirects are never followed, whatever the original client says: a 3xx reaches the SDK as the
  status error it is, and nothing goes to the origin it names;
- a retry wait that would outlast the request's deadline is vetoed (``x-should-retry: false`` on
  the answer, or an SDK error the SDK does not retry), so the request fails at once with the
  error it had;
- the body is decoded exactly once, here: every coding of its ``Content-Encoding`` chain (gzip and
  deflate, stacked up to :data:`MAX_CODINGS` deep) in turn, each with bounded output and each
  counted against the size cap, so neither a huge body nor a compression bomb of any depth can take
  more memory than the cap and one decoded piece per coding. A coding without such a decoder
  (``br``, ``zstd``, an unknown name) is refused, never handed to the HTTP library's own decoder,
  and requests ask only for the codings decoded here (``Accept-Encoding: gzip, deflate``).
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import Any, Final, Protocol, cast

import attrs
import httpx
import httpx2
import openai

from adapters.responses.sdk_seam import (
    INITIAL_RETRY_DELAY,
    MAX_RETRY_AFTER,
    MAX_RETRY_DELAY,
    RETRY_COUNT_HEADER,
    http_client_of,
)

__all__ = [
    "ACCEPTED_CODINGS",
    "LISTENER",
    "MAX_CODINGS",
    "RETRY_COUNT_HEADER",
    "AttemptListener",
    "ResponseTooLargeError",
    "UnsupportedCodingError",
    "attempts_of",
    "observed",
]

# Decoded bytes handed on at a time: the memory one piece of a compressed body can take.
_PIECE: Final = 64 * 1024
_ZLIB_WBITS: Final = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
# What requests ask for: exactly the codings decoded here with bounded output.
ACCEPTED_CODINGS: Final = "gzip, deflate"
# More codings stacked on one body than any server applies: such a chain is refused unread.
MAX_CODINGS: Final = 4
# A coding's name as shown in an error: a gateway chooses it, so it is bounded.
_SHOWN_CODING: Final = 40


class ResponseTooLargeError(Exception):
    """A response body grew past ``limit`` bytes (counted after decompression) while it was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body exceeded {limit} bytes")
        self.limit = limit


class UnsupportedCodingError(Exception):
    """A body whose ``Content-Encoding`` chain has a coding no bounded decoder here reads (or too many)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding[:_SHOWN_CODING]
        super().__init__(f"the body's content coding {self.coding!r} is not one this client decodes")


class AttemptListener(Protocol):
    """Told of each attempt of the current request and how it ended; asked how long it may still take."""

    def attempt_started(self, request: httpx.Request) -> None:
        """The attempt is going out: it counts even if the deadline cuts it before it ends either way."""

    def attempt_answered(self, request: httpx.Request, response: httpx.Response) -> None: ...

    def attempt_raised(self, request: httpx.Request, error: Exception) -> None: ...

    def seconds_left(self) -> float | None:
        """Seconds until the request's deadline, or None when it has none."""


LISTENER: Final[ContextVar[AttemptListener | None]] = ContextVar("responses_attempt_listener", default=None)

# True while the front hands an attempt to the original client. Both clients log the same
# "HTTP Request: ..." line for it; the original client's is dropped so each attempt is logged once.
_DELEGATING: Final[ContextVar[bool]] = ContextVar("responses_delegating", default=False)


class _OneLinePerAttempt(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_DELEGATING.get() and str(record.msg).startswith("HTTP Request:"))


for _library_logger in ("httpx", "httpx2"):
    logging.getLogger(_library_logger).addFilter(_OneLinePerAttempt())


def attempts_of(request: Any) -> int:
    """How many requests the SDK had sent when ``request`` went out (1 when unknown)."""
    if request is None:
        return 1
    try:
        return max(int(request.headers.get(RETRY_COUNT_HEADER, "0")), 0) + 1
    except (AttributeError, ValueError):
        return 1


def _retry_after(headers: Any) -> float | None:
    """The wait a server asks for (``retry-after-ms``, ``retry-after`` in seconds or as a date)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    when = email.utils.parsedate_tz(headers.get("retry-after") or "")
    if when is None:
        return None
    try:
        return float(email.utils.mktime_tz(when) - time.time())
    except (OverflowError, ValueError):
        return None


def _longest_wait(headers: Any | None, retries: int) -> float:
    """The longest the SDK may sleep before its next retry, as it decides that wait."""
    if headers is not None:
        asked = _retry_after(headers)
        if asked is not None and math.isfinite(asked) and 0 < asked <= MAX_RETRY_AFTER:
            return asked
    return _backoff(retries)


def _backoff(retries: int) -> float:
    return min(INITIAL_RETRY_DELAY * 2.0 ** min(retries, 64), MAX_RETRY_DELAY)


def retry_backoff(retries: int) -> float:
    """The SDK's own wait before a retry after ``retries`` retries: exponential, capped, with jitter."""
    # Jitter spreads retries out; it is not cryptography.
    return _backoff(retries) * (1 - 0.25 * random.random())  # noqa: S311


def _outlasts_deadline(listener: AttemptListener | None, headers: Any | None, request: Any) -> bool:
    if listener is None:
        return False
    left = listener.seconds_left()
    return left is not None and _longest_wait(headers, attempts_of(request) - 1) >= left


def _zlib_wbits(coding: str, head: bytes) -> int:
    if coding != "deflate":
        return _ZLIB_WBITS[coding]
    # Servers send deflate with or without the zlib header; both mean the same body (RFC 1950 check).
    zlib_header = len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
    return zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS


class _ZlibPieces:
    """gzip or deflate decoding that never hands back more than one piece at a time, and never more
    than ``limit`` bytes in all (a layer of a stacked bomb is stopped as early as the last one)."""

    def __init__(self, coding: str, limit: int) -> None:
        self._coding = coding
        self._limit = limit
        self._total = 0
        self._head = b""
        self._decoder: Any = None

    def _counted(self, piece: bytes) -> bytes:
        self._total += len(piece)
        if self._total > self._limit:
            raise ResponseTooLargeError(self._limit)
        return piece

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._decoder is None:
            self._head += data
            if len(self._head) < 2:
                return
            self._decoder = zlib.decompressobj(_zlib_wbits(self._coding, self._head))
            data, self._head = self._head, b""
        while data and not self._decoder.eof:
            piece = self._decoder.decompress(data, _PIECE)
            data = self._decoder.unconsumed_tail
            if piece:
                yield self._counted(piece)

    def flush(self) -> Iterator[bytes]:
        if self._decoder is None:
            self._decoder = zlib.decompressobj(_zlib_wbits(self._coding, self._head))
            yield from self.feed(self._head)
        # With all its input read (feed leaves no unconsumed tail), zlib holds at most what the bits
        # already taken in spell out: the rest of one match (258 bytes at most), a small last piece.
        rest = self._decoder.flush()
        if rest:
            yield self._counted(rest)
        if not self._decoder.eof:
            raise zlib.error("the compressed body ended early")


def _decoded(decoders: list[_ZlibPieces], data: bytes, level: int = 0) -> Iterator[bytes]:
    """``data`` through ``decoders[level:]``, each one's output fed to the next, a piece at a time
    (a decoder hands on only pieces that hold something, so none comes out empty)."""
    if level == len(decoders):
        yield data
        return
    for piece in decoders[level].feed(data):
        yield from _decoded(decoders, piece, level + 1)


def _flushed(decoders: list[_ZlibPieces], level: int = 0) -> Iterator[bytes]:
    """The end of the body: each decoder's rest, through the decoders after it, outermost first."""
    if level == len(decoders):
        return
    for piece in decoders[level].flush():
        yield from _decoded(decoders, piece, level + 1)
    yield from _flushed(decoders, level + 1)


@attrs.define(eq=False)
class _BoundedBody:
    """The decoded body of one answer, counted against ``limit``; closing it closes the original."""

    _response: Any
    _codings: list[str]
    _limit: int
    _decoding_error: type[Exception]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for piece in self._pieces():
            total += len(piece)
            if total > self._limit:
                raise ResponseTooLargeError(self._limit)
            yield piece

    async def _pieces(self) -> AsyncIterator[bytes]:
        codings = self._codings
        if self._response.is_stream_consumed:
            # Built in memory (a mock transport): the library decoded it when the answer was made.
            async for chunk in self._response.aiter_bytes(_PIECE):
                yield chunk
            return
        if not codings:
            async for chunk in self._response.aiter_raw():
                yield chunk
            return
        unsupported = next((coding for coding in codings if coding not in _ZLIB_WBITS), None)
        if unsupported is not None or len(codings) > MAX_CODINGS:
            # Refused before a byte is decoded: the HTTP library's own decoders have no output bound.
            raise UnsupportedCodingError(unsupported or ", ".join(codings))
        # Listed in the order they were applied, so decoded the other way round.
        decoders = [_ZlibPieces(coding, self._limit) for coding in reversed(codings)]
        try:
            async for chunk in self._response.aiter_raw():
                for piece in _decoded(decoders, chunk):
                    yield piece
            for piece in _flushed(decoders):
                yield piece
        except zlib.error as exc:
            raise self._decoding_error(f"the body is not valid {', '.join(codings)} data") from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class _HttpxBody(_BoundedBody, httpx.AsyncByteStream):
    pass


class _Httpx2Body(_BoundedBody, httpx2.AsyncByteStream):
    pass


class _Delegation:
    """What both HTTP libraries' delegating transports do for each attempt."""

    _library: Any
    _body: type[_BoundedBody]

    def __init__(self, inner: Any, max_response_bytes: int) -> None:
        self._inner = inner
        self._max_response_bytes = max_response_bytes

    async def handle_async_request(self, request: Any) -> Any:
        listener = LISTENER.get()
        if listener is not None:
            listener.attempt_started(request)
        delegating = _DELEGATING.set(True)
        try:
            response = await self._inner.send(request, stream=True, follow_redirects=False)
        except Exception as exc:
            if listener is not None:
                listener.attempt_raised(request, exc)
            if isinstance(exc, self._library.TransportError) and _outlasts_deadline(listener, None, request):
                # An SDK error is raised on at once: the back-off before a retry would outlast the deadline.
                error = openai.APITimeoutError if isinstance(exc, self._library.TimeoutException) else None
                raise (error(request) if error else openai.APIConnectionError(request=request)) from exc
            raise
        finally:
            _DELEGATING.reset(delegating)
        if listener is not None:
            listener.attempt_answered(request, response)
        headers = self._library.Headers(response.headers)
        if not response.is_success and _outlasts_deadline(listener, response.headers, request):
            headers["x-should-retry"] = "false"
        codings = [
            coding.strip().lower()
            for coding in headers.get("content-encoding", "").split(",")
            if coding.strip() and coding.strip().lower() != "identity"
        ]
        if codings:
            # Decoded here, once: the SDK and any replay of the body see plain bytes.
            del headers["content-encoding"]
            headers.pop("content-length", None)
        body = self._body(response, codings, self._max_response_bytes, self._library.DecodingError)
        return self._library.Response(
            response.status_code, headers=headers, stream=body, extensions=response.extensions
        )

    async def aclose(self) -> None:
        # The original client belongs to whoever built it (the container); closing it is theirs.
        return None


class _HttpxDelegation(_Delegation, httpx.AsyncBaseTransport):
    _library = httpx
    _body = _HttpxBody


class _Httpx2Delegation(_Delegation, httpx2.AsyncBaseTransport):
    _library = httpx2
    _body = _Httpx2Body


class _HttpxCookies(httpx.Cookies):
    """The original client's own cookie jar, as the front's: each request the front builds carries
    what the jar holds then, and each answer's cookies are taken once, by the original client that
    receives it first (a second extraction per request would cost more than the front's other work)."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _Httpx2Cookies(httpx2.Cookies):
    """:class:`_HttpxCookies` for an httpx2 original."""

    def extract_cookies(self, response: httpx2.Response) -> None:
        return None


class _Front:
    """What a front keeps of how it was built (the original client, the cap it counts bodies against),
    and the original's cookie jar as its own."""

    original: Any
    max_response_bytes: int
    # The jar type of the front's HTTP library (see _HttpxCookies), and the original's jar in it.
    _jar_type: type[Any]
    _shared_cookies: Any

    @property
    def cookies(self) -> Any:
        return self._shared_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        # The jar is the original's: set through the front, it is set on the original, still shared.
        self.original.cookies = cookies
        self._shared_cookies = self._jar_type(self.original.cookies.jar)


class _ObservedHttpClient(_Front, httpx.AsyncClient):
    """A legacy-httpx front; requests are built here and sent through the original client."""

    _jar_type = _HttpxCookies


class _ObservedHttpx2Client(_Front, httpx2.AsyncClient):
    """An httpx2 front (the SDK's own default client is httpx2)."""

    _jar_type = _Httpx2Cookies


def observed(client: openai.AsyncOpenAI, *, max_response_bytes: int) -> openai.AsyncOpenAI:
    """A copy of ``client`` whose attempts go through the front described in this module's docstring.

    Works for the legacy ``httpx.AsyncClient`` the container hands the SDK and for the SDK's own
    ``httpx2`` clients; returns ``client`` itself when it is already observed with the same cap. One
    observed with another cap is fronted afresh over the same original client, so that every body is
    counted against ``max_response_bytes``, whatever client a host hands in.
    """
    inner: Any = http_client_of(client)
    if isinstance(inner, _Front):
        if inner.max_response_bytes == max_response_bytes:
            return client
        inner = inner.original
    if isinstance(inner, httpx.AsyncClient):
        front_type: Any = _ObservedHttpClient
        transport: Any = _HttpxDelegation(inner, max_response_bytes)
    elif isinstance(inner, httpx2.AsyncClient):
        front_type, transport = _ObservedHttpx2Client, _Httpx2Delegation(inner, max_response_bytes)
    else:
        raise TypeError(
            f"the OpenAI client's HTTP client is a {type(inner).__name__}; the Responses adapters need "
            "an httpx.AsyncClient or the SDK's own httpx2 client"
        )
    headers = inner.headers.copy()
    # A server may use only what is asked for, and only these codings have a bounded decoder here.
    headers["accept-encoding"] = ACCEPTED_CODINGS
    front = front_type(
        transport=transport,
        headers=headers,
        params=inner.params,
        timeout=inner.timeout,
        # Proxies from the environment are the original client's business, applied when it sends.
        trust_env=False,
    )
    # The original's own jar, shared: the original fills it from each answer as it receives it.
    front._shared_cookies = front._jar_type(inner.cookies.jar)
    front.original, front.max_response_bytes = inner, max_response_bytes
    return client.with_options(http_client=cast(Any, front))
