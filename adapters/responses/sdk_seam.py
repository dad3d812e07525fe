"""Every use the adapters make of the OpenAI SDK's private parts, each named with what it relies on.

The rest of the package talks to the SDK through its public API (``AsyncOpenAI``, ``post``,
``AsyncStream``, ``with_options``, the error classes, ``openai.types``) or through this module.
Each name below relies on something the SDK does not promise; ``tests/canary/test_openai_seam.py``
holds one canary per name, which fails, naming the reliance, when a release changes it
(``make canary`` runs them against the newest SDK; ``docs/sdk-seams.md`` says how to read a failure).

=======================  =====================================================================
name                     relies on
=======================  =====================================================================
RETRY_COUNT_HEADER       the SDK stamps each attempt's request ``x-stainless-retry-count: n``
RAW_RESPONSE_HEADER      ``X-Stainless-Raw-Response: stream`` makes ``post`` hand back the raw
                         response with its body unread (``openai._constants``)
INITIAL_RETRY_DELAY,     the SDK's back-off: ``min(0.5 * 2**n, 8.0)`` less up to 25% jitter, and a
MAX_RETRY_DELAY,         server's ``Retry-After`` honoured up to 120 s (``openai._constants``,
MAX_RETRY_AFTER          ``BaseClient._calculate_retry_timeout``)
LIBRARY_LOGGERS          the names of the SDK's loggers that log a request (its private modules)
bearer_auth_options      the ``security`` request option: ``{"bearer_auth": True}`` sends the API
                         key as ``Authorization: Bearer`` and nothing else
http_client_of           ``AsyncOpenAI._client``: the HTTP client the SDK sends through
ServerSentEvent,         ``openai._streaming.ServerSentEvent``, and the stream reading each event's
parsed_event             data through its ``json()``
event_stream             ``AsyncStream`` asks its client for ``_make_sse_decoder()`` once and calls
                         ``_process_response_data(data=, cast_to=, response=)`` per event
close_reader             ``AsyncStream._iterator``: the generator that reads the stream
framer                   ``SSEDecoder.aiter_bytes`` frames each chunk as ``_decode_lines(
                         _SSELineDecoder.feed(chunk))``, then ``_decode_lines(finish())``
discriminator_of         ``ResponseStreamEvent`` is ``Annotated[Union[...], PropertyInfo(
                         discriminator="type")]``, the mark's field read by its attribute
json_default             the SDK's request encoder (``openai._utils._json``): a datetime as ISO
                         8601, a pydantic model as its fields set, by alias, in JSON mode
=======================  =====================================================================
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Protocol, cast

import httpx
import openai
from openai import _streaming
from openai._streaming import ServerSentEvent

__all__ = [
    "INITIAL_RETRY_DELAY",
    "LIBRARY_LOGGERS",
    "MAX_RETRY_AFTER",
    "MAX_RETRY_DELAY",
    "RAW_RESPONSE_HEADER",
    "RETRY_COUNT_HEADER",
    "Decoder",
    "Framer",
    "ServerSentEvent",
    "bearer_auth_options",
    "close_reader",
    "discriminator_of",
    "event_stream",
    "framer",
    "http_client_of",
    "json_default",
    "parsed_event",
    "sse_decoder",
]

RETRY_COUNT_HEADER: Final = "x-stainless-retry-count"
RAW_RESPONSE_HEADER: Final = "X-Stainless-Raw-Response"
INITIAL_RETRY_DELAY: Final = 0.5
MAX_RETRY_DELAY: Final = 8.0
MAX_RETRY_AFTER: Final = 120.0
LIBRARY_LOGGERS: Final = (
    "openai._base_client",
    "openai._response",
    "openai._legacy_response",
    "openai._streaming",
)


def bearer_auth_options(headers: Mapping[str, str]) -> openai.RequestOptions:
    """Request options that send ``headers`` and the client's API key as a bearer token only."""
    return {"headers": dict(headers), "security": {"bearer_auth": True}}


def http_client_of(client: openai.AsyncOpenAI) -> object:
    """The HTTP client ``client`` sends through (None when the SDK no longer keeps it there)."""
    return getattr(client, "_client", None)


def parsed_event(sse: ServerSentEvent, value: object) -> ServerSentEvent:
    """``sse`` whose data was already parsed into ``value``: the stream reads that instead of parsing."""
    return _ParsedEvent(sse, value)


class _ParsedEvent(ServerSentEvent):
    def __init__(self, sse: ServerSentEvent, value: object) -> None:
        super().__init__(event=sse.event, data=sse.data, id=sse.id, retry=sse.retry)
        self._value = value

    def json(self) -> Any:
        return self._value


class Decoder(Protocol):
    """An SSE decoder the stream reads its events from, and which events it hands over unbuilt."""

    def aiter_bytes(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[ServerSentEvent]: ...

    def keeps(self, data: object) -> bool:
        """Whether the event just decoded, parsed to ``data``, goes to the caller as it is (not built)."""


def sse_decoder(client: openai.AsyncOpenAI) -> Any:
    """The SSE decoder ``client``'s streams read with (it has ``aiter_bytes(chunks)``)."""
    return client._make_sse_decoder()


class Framer:
    """The SDK's SSE decoder driven one chunk at a time, as its ``aiter_bytes`` drives it: the events
    each chunk completes come out together, without a step of an async generator per event."""

    def __init__(self, decoder: Any, lines: Any) -> None:
        self._decoder = decoder
        self._lines = lines

    def feed(self, chunk: bytes) -> Iterator[ServerSentEvent]:
        """The events ``chunk`` completes (an event split across chunks comes out with the last)."""
        frames: Iterator[ServerSentEvent] = self._decoder._decode_lines(self._lines.feed(chunk))
        return frames

    def finish(self) -> Iterator[ServerSentEvent]:
        """The event the body's last line ends, when no line break follows it."""
        frames: Iterator[ServerSentEvent] = self._decoder._decode_lines(self._lines.finish())
        return frames


def framer(decoder: Any) -> Framer | None:
    """A :class:`Framer` over the SDK's SSE ``decoder`` (one a stream asks its client for); None when
    the decoder or the SDK no longer frames that way (events then come one by one from ``aiter_bytes``)."""
    lines = getattr(_streaming, "_SSELineDecoder", None)
    if lines is None or not callable(getattr(decoder, "_decode_lines", None)):
        return None
    return Framer(decoder, lines())


class _StreamHooks:
    """What ``AsyncStream`` asks of its client: the SSE decoder, and each event built from its data."""

    def __init__(self, client: openai.AsyncOpenAI, decoder: Decoder) -> None:
        self._client = client
        self._decoder = decoder

    def _make_sse_decoder(self) -> Decoder:
        return self._decoder

    def _process_response_data(self, *, data: object, cast_to: Any, response: Any) -> Any:
        if self._decoder.keeps(data):
            return data
        return self._client._process_response_data(data=data, cast_to=cast_to, response=response)


def event_stream(
    client: openai.AsyncOpenAI,
    response: httpx.Response,
    cast_to: Any,
    decoder: Callable[[Any], Decoder] | None = None,
) -> openai.AsyncStream[Any]:
    """The SDK's own stream reader over ``response``, building each event as ``cast_to``; with
    ``decoder``, the SDK's SSE decoder goes through it, and an event it ``keeps`` is handed over as
    the parsed data it is."""
    reader: Any = client if decoder is None else _StreamHooks(client, decoder(sse_decoder(client)))
    return openai.AsyncStream(cast_to=cast_to, response=cast(Any, response), client=reader)


async def close_reader(stream: openai.AsyncStream[Any]) -> bool:
    """Close the SDK's reader of ``stream`` (a generator, which ``stream.close()`` leaves as it is);
    whether there was one to close. Left open, it keeps the last event it read and that event's text
    (the terminal one repeats the whole answer) in its frames, which a reference cycle (the stream and
    its reader) keeps until the garbage collector runs; closed, they are let go as the answer returns.
    Its own last step closes the response, which ``close()`` has already done, so nothing it could
    raise is news."""
    close = getattr(getattr(stream, "_iterator", None), "aclose", None)
    if close is None:
        return False
    with contextlib.suppress(Exception):
        await close()
    return True


def discriminator_of(metadata: Sequence[object]) -> str | None:
    """The field the SDK's mark (``PropertyInfo(discriminator=...)``) in an ``Annotated``'s metadata
    names, read by its attribute: the class itself lives in a private module of the SDK."""
    for mark in metadata:
        name = getattr(mark, "discriminator", None)
        if isinstance(name, str) and name:
            return name
    return None


def json_default(value: object) -> Any:
    """What the SDK's request encoder writes for a value JSON has no form for, as ``json.dumps``'s
    ``default``: a datetime as ISO 8601, a pydantic model as its fields."""
    if isinstance(value, datetime):
        return value.isoformat()
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
