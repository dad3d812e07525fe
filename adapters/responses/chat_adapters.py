"""The two ChatPorts over the SDK's Responses API: one asks for a stream, one for JSON; both read either."""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Final, cast

import attrs
import httpx
import httpx2
import openai
from openai.types.responses import Response, ResponseStreamEvent

from adapters.redaction import RedactingFilter, Redactor
from adapters.responses.cost import response_cost, with_cost
from adapters.responses.error_mapping import (
    CutShortError,
    DeadlineExceededError,
    UnreadableResponseError,
    map_error,
    scrubbed_cause,
)
from adapters.responses.event_types import STREAM_EVENT, typed
from adapters.responses.folding import EventFolder
from adapters.responses.http_front import (
    LISTENER,
    attempts_of,
    observed,
    retry_backoff,
)
from adapters.responses.incremental import LARGE, ParsedTooLargeError, over, parsed
from adapters.responses.payload import RequestDigest, ResponsesPayloadBuilder, ResponsesRequest
from adapters.responses.sdk_seam import (
    LIBRARY_LOGGERS,
    RAW_RESPONSE_HEADER,
    ServerSentEvent,
    bearer_auth_options,
    close_reader,
    event_stream,
    framer,
    parsed_event,
)
from adapters.responses.settings import ResponsesSettings
from adapters.responses.to_domain import (
    chat_response,
    counting_left_out,
    field,
    final_status,
    item_contents,
    items_of,
    provider_failure,
    raise_if_failed,
    text,
    unfinished,
    unreadable,
)
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    Content,
    FunctionCallContent,
    ResponseFailedError,
)

__all__ = ["ResponsesJsonAdapter", "ResponsesSseAdapter", "TypedEvents"]

_LOGGER: Final = logging.getLogger("adapters.responses")
REQUEST_ID_HEADER: Final = "x-request-id"
_SSE_STARTS: Final = (b"data:", b"event:", b":", b"id:", b"retry:")
_BOM: Final = b"\xef\xbb\xbf"
# The replayed body is already decoded: these headers described the bytes as they came over the wire.
_WIRE_HEADERS: Final = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})
_MAX_LOGGED_ID: Final = 200
# What a list of events typed together is handed over as (the list is its parsed data).
_NO_EVENT: Final = ServerSentEvent()
# An event or document that opens more JSON objects and arrays than this is heavy: the SDK would build
# it in one synchronous step (a millisecond or more per output item), so it is read as the mapping it
# is, and folded a few hundred output items at a time with the event loop given control in between.
_HEAVY_BRACKETS: Final = 1024
# An event's data longer than this (characters) is checked for what it would take once parsed.
_LARGE_EVENT: Final = 64 * 1024
# Characters of event data typed before the events are handed over together (see _Decoding).
_BATCH_CHARS: Final = 64 * 1024
# Output items mapped between two pauses of a JSON document.
_ITEMS_PER_STEP: Final = 256
# Events folded between two looks at the clock; the loop gets control once a stretch passes _SLICE s.
_EVENTS_PER_LOOK: Final = 32
_SLICE: Final = 0.01
# What is left of an HTTP/1.1 body after its answer is whole is read (so that its connection goes back
# to the pool) only if it has ended within this long and this many bytes; otherwise it is closed.
_DRAIN_SECONDS: Final = 0.05
_DRAIN_BYTES: Final = 64 * 1024
# The secrets of the request being sent in this context, for the libraries' own log records.
_REDACTOR: Final[ContextVar[Redactor | None]] = ContextVar("responses_redactor", default=None)
_LIBRARY_LOGGERS: Final = ("openai", "httpx", "httpx2", "httpcore")
# Loggers the libraries log on while a request is sent (httpcore's carry the response headers).
_KNOWN_LIBRARY_LOGGERS: Final = (
    *LIBRARY_LOGGERS,
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)
_LIBRARY_FILTER: Final = RedactingFilter(_REDACTOR.get)


def _guard_library_logs() -> None:
    """Put the redacting filter on every logger the HTTP stack logs a request on.

    A gateway can echo a secret in a response header (a request id, ``www-authenticate``), which
    the SDK and httpcore log at DEBUG. A filter applies to the records of the logger it is on, not
    to its children's, hence each one; it only acts inside a request, with that request's secrets.
    """
    names = {
        name
        for name in (*logging.root.manager.loggerDict, *_KNOWN_LIBRARY_LOGGERS)
        if name.split(".")[0] in _LIBRARY_LOGGERS
    } | set(_LIBRARY_LOGGERS)
    for name in names:
        logger = logging.getLogger(name)
        if _LIBRARY_FILTER not in logger.filters:
            logger.addFilter(_LIBRARY_FILTER)


def _brackets(data: str) -> int:
    """How many JSON objects and arrays ``data`` opens, at most (brackets inside strings count too)."""
    return data.count("{") + data.count("[")


def _bloating(size: int, cap: int) -> UnreadableResponseError:
    return UnreadableResponseError(
        f"the response would take about {size // 2**20} MiB once parsed, more than three times "
        f"agent.max_response_bytes ({cap} bytes): too many small values"
    )


def _refuse_if_bloating(data: str | bytes | bytearray, cap: int) -> None:
    """A body or event that would take more than three times ``max_response_bytes`` once parsed is
    refused unparsed (its text, held while it is parsed, comes on top)."""
    size = over(data, 3 * cap)
    if size is not None:
        raise _bloating(size, cap)


async def _parsed_in_steps(text: str, cap: int) -> Any:
    """``json.loads(text)`` for a large text, parsed in steps with the loop running between them (and a
    deadline able to end it there); refused part way once what it built would take more than three
    times ``max_response_bytes``, as a smaller text is refused before it is parsed."""
    try:
        return await parsed(text, max_size=3 * cap)
    except ParsedTooLargeError as exc:
        raise _bloating(exc.size, cap) from None


class TypedEvents(list[Any]):
    """Events typed together by the adapters' decoder, handed over as one (an SDK event whose data is a
    JSON array comes out of the SDK's reader as a plain list, which is one event)."""

    __slots__ = ()


class _Decoding:
    """The SDK's own SSE decoder, each event it frames typed as it is handed over.

    An event that would take more than three times ``max_response_bytes`` once parsed is refused
    before it is. A heavy event is handed over as the mapping it is (the folder reads mappings too).
    Every other event is typed from its JSON text as the SDK's class its ``type`` names
    (``event_types.typed``); one that this refuses goes to the SDK alone, which parses and builds it
    its own way (and raises on what it raises on). The events typed here that one read of the body
    completes go over together, as one list (a long body read in one piece, about 64 KiB of it at a
    time): the SDK's stream reader then takes one step per read rather than one per event."""

    def __init__(self, inner: Any, cap: int) -> None:
        self._inner = inner
        self._framer = framer(inner)
        self._cap = cap
        # Whether what was handed over last goes to the caller as it is: a heavy event's mapping (parsed
        # here, or by the SDK), or a list of events typed here.
        self.heavy = False
        self.built = False

    def keeps(self, data: object) -> bool:
        return self.built or (self.heavy and isinstance(data, dict))

    async def _frames(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[Iterable[ServerSentEvent]]:
        """The events the SDK's decoder frames, those of one read at a time."""
        framing = self._framer
        if framing is None:
            async for sse in self._inner.aiter_bytes(iterator):
                yield (sse,)
            return
        async for chunk in iterator:
            yield framing.feed(chunk)
        yield framing.finish()

    def _typed(self, events: list[Any]) -> ServerSentEvent:
        self.heavy, self.built = False, True
        return parsed_event(_NO_EVENT, TypedEvents(events))

    def _heavy(self, data: str) -> bool:
        """Whether a long event (more characters than a heavy one opens brackets) is heavy; refused when
        it would take more than three times ``max_response_bytes`` once parsed."""
        size = len(data)
        if size > LARGE:
            return True
        if size > _LARGE_EVENT:
            _refuse_if_bloating(data, self._cap)
        return _brackets(data) > _HEAVY_BRACKETS

    async def aiter_bytes(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[ServerSentEvent]:
        async for frames in self._frames(iterator):
            events: list[Any] = []
            held = 0
            try:
                for sse in frames:
                    data = sse.data
                    size = len(data)
                    if events and (size > _HEAVY_BRACKETS or held > _BATCH_CHARS):
                        # A long event is looked at once the events before it are folded (the answer may
                        # have ended there); and a body read in one piece is typed a batch at a time.
                        yield self._typed(events)
                        events, held = [], 0
                    # Shorter data cannot open more brackets than it has characters: only a long event
                    # (a few per answer) is scanned, never the deltas that make up the stream.
                    heavy = size > _HEAVY_BRACKETS and self._heavy(data)
                    if not heavy:
                        name = sse.event
                        # The SDK's stream reader wraps a "thread." event's data before it builds it.
                        event = typed(data) if name is None or not name.startswith("thread.") else None
                        if event is not None:
                            events.append(event)
                            held += size
                            continue
                    # Handed over alone, after the events typed before it.
                    if events:
                        yield self._typed(events)
                        events, held = [], 0
                    if size > LARGE:
                        # json.loads would parse it in one step the loop could not break into, and the
                        # SDK would build its model in another: parsed in steps, and handed over as the
                        # mapping it is.
                        self.heavy, self.built = True, True
                        yield parsed_event(sse, await _parsed_in_steps(data, self._cap))
                        continue
                    self.heavy, self.built = heavy, False
                    yield sse
            except Exception:
                # A line the SDK cannot frame (not UTF-8), or an event refused here: what came before it
                # goes over first, as it would have one event at a time.
                if events:
                    yield self._typed(events)
                raise
            if events:
                yield self._typed(events)


def _too_many(limit: int, partial: ChatResponse | None) -> UnreadableResponseError:
    return UnreadableResponseError(
        f"the response holds more than agent.max_output_items ({limit}) output items", partial
    )


class _Channel:
    """How the task that reads a streamed request and the caller's iteration meet.

    The reader's event folder collects the updates; the caller swaps them out whenever it looks.
    Between two reads from the network, the reader wakes a caller that is waiting and lets it
    run, so updates go out as the body arrives, per read rather than per event.
    """

    __slots__ = ("ended", "handed", "held", "waiter")

    def __init__(self) -> None:
        # Updates a caller cannot show yet (the ids of ``response.created``, whole function calls,
        # which a caller acts on only once the answer is complete) are held until the first text or
        # reasoning, or the end: while nothing is handed over, a broken body is asked for again.
        self.held: list[ChatResponseUpdate] = []
        # True once the caller has been handed an update: from then on nothing is asked for again.
        self.handed = False
        self.ended = False
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def end(self) -> None:
        self.ended = True
        self.wake()


@attrs.define
class _Exchange:
    """What is known about one request so far, for the logs and for the error that may follow.

    It is also the request's attempt listener: each failed attempt is logged as it happens, and
    the transport asks it how long the request may still take.
    """

    digest: RequestDigest
    logger: logging.Logger
    stream: bool
    redactor: Redactor
    # The request's deadline in seconds, and the time.monotonic() at which it must have its whole answer.
    seconds: float = 600.0
    deadline: float | None = None
    folder: EventFolder = attrs.field(factory=EventFolder)
    request_id: str | None = None
    attempts: int = 1
    status_code: int | None = None
    # True once a successful response has started: a failure after it is in reading the body.
    answered: bool = False
    # Attempts made by earlier SDK calls of this request (a body broken in transit is asked for again).
    earlier_attempts: int = 0
    # Where the updates go when the caller streams; None for get_response.
    channel: _Channel | None = None
    # True once the answer went through the event folder (its updates went out as they came).
    streamed: bool = False
    # A JSON document being mapped in steps, and the contents mapped so far: what had arrived
    # when a deadline ends the mapping part way.
    document: dict[str, Any] | None = None
    mapped: list[Content] = attrs.field(factory=list)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def saw(self, response: httpx.Response) -> None:
        self.request_id = response.headers.get(REQUEST_ID_HEADER)
        # The cost comes with the response head (a stream's too): the folder puts it in the usage.
        self.folder.cost = response_cost(response.headers, self.logger)
        self.attempts = self.earlier_attempts + attempts_of(response.request)
        self.status_code = response.status_code
        self.answered = True

    def start_again(self) -> None:
        """A new SDK call for the same request: what the broken attempt had folded is dropped."""
        self.earlier_attempts = self.attempts
        self.folder = EventFolder(updates=self.channel is not None)
        self.answered = False
        self.streamed = False
        self.document, self.mapped = None, []
        if self.channel is not None:
            # What the broken attempt brought, and the caller has not been handed, is dropped.
            self.channel.held = []

    async def between_reads(self) -> None:
        """Before the next read from the network: a waiting caller gets what has arrived."""
        channel = self.channel
        if channel is not None and channel.waiter is not None and self.folder.out:
            channel.wake()
            # A body already in memory never suspends the reader: let the caller run now.
            await asyncio.sleep(0)

    def may_ask_again(self) -> bool:
        """Whether a broken body may be asked for again: never once the caller was handed an update."""
        return self.channel is None or not self.channel.handed

    def partial(self) -> ChatResponse | None:
        """What had arrived, or None; never raises, since it is asked while handling a failure."""
        try:
            partial = self.folder.partial()
            if partial is None and self.document is not None:
                return chat_response(self.document, list(self.mapped))
            return partial
        except Exception:
            # A folder state no response can be built from: the error still goes out, without it.
            return None

    def shown(self, value: str | None) -> str | None:
        """A gateway-supplied id fit for a log record: scrubbed and bounded."""
        return None if value is None else self.redactor.redact(value, limit=_MAX_LOGGED_ID)

    def log_extra(self, response_id: str | None = None) -> dict[str, object]:
        return {
            "attempts": self.attempts,
            "status_code": self.status_code,
            "request_id": self.shown(self.request_id),
            "response_id": self.shown(response_id),
            "request_digest": self.digest.as_log_extra(),
            "stream": self.stream,
        }

    def attempt_started(self, request: httpx.Request) -> None:
        # Counted as it goes out: an attempt the deadline cuts before it answers or raises is one too.
        self.attempts = self.earlier_attempts + attempts_of(request)
        self.status_code = None

    def attempt_answered(self, request: httpx.Request, response: httpx.Response) -> None:
        # The headers are in even if the body then breaks inside the SDK (a JSON body is read within
        # its retry loop, so the error it raises has no response): keep the latest attempt's id.
        self.request_id = response.headers.get(REQUEST_ID_HEADER, self.request_id)
        self.attempts = self.earlier_attempts + attempts_of(request)
        self.status_code = response.status_code
        if response.is_success:
            self.answered = True
            return
        self._log_attempt(request, response.status_code, response.headers.get(REQUEST_ID_HEADER), None)

    def attempt_raised(self, request: httpx.Request, error: Exception) -> None:
        self.attempts = self.earlier_attempts + attempts_of(request)
        self.status_code = None
        self._log_attempt(request, None, None, type(error).__name__)

    def body_broke(self, error: Exception) -> None:
        """The answer's body broke in transit (it is then asked for again, if the budget allows)."""
        self._log_attempt(None, None, None, type(error).__name__)

    def _log_attempt(
        self,
        request: httpx.Request | None,
        status_code: int | None,
        request_id: str | None,
        error_type: str | None,
    ) -> None:
        attempt = self.attempts if request is None else self.earlier_attempts + attempts_of(request)
        self.logger.info(
            "Responses attempt %d failed (%s)",
            attempt,
            status_code if status_code is not None else error_type,
            extra={
                "attempt": attempt,
                "status_code": status_code,
                "request_id": self.shown(request_id),
                "error_type": error_type,
                "request_digest": self.digest.as_log_extra(),
                "stream": self.stream,
            },
        )


def _shows(update: ChatResponseUpdate) -> bool:
    """Whether ``update`` has something a caller may show as it arrives: text or reasoning."""
    return any(not isinstance(content, FunctionCallContent) for content in update.contents)


def _broke_in_transit(error: Exception) -> bool:
    """A body cut off on its way: worth asking for again, unlike anything the provider said."""
    if isinstance(error, CutShortError):
        return True
    # The SDK's stream reader raises a broken read as APIConnectionError (a stalled one as its
    # subclass APITimeoutError); a body read outside it raises the HTTP library's own error.
    transport = (httpx.TransportError, httpx2.TransportError, openai.APIConnectionError)
    stalled = (httpx.TimeoutException, httpx2.TimeoutException, openai.APITimeoutError)
    return isinstance(error, transport) and not isinstance(error, stalled)


def _cut_short(error: json.JSONDecodeError) -> bool:
    """A JSON object that only ran out (a string left open, or the parser wanting more at the end),
    as opposed to one with something wrong inside it."""
    if not error.doc.lstrip().startswith("{"):
        return False
    return error.msg.startswith("Unterminated string") or error.pos >= len(error.doc.rstrip())


def _is_event_stream(content_type: str) -> bool:
    return "text/event-stream" in content_type.lower()


def _is_stream_body(head: bytes, content_type: str) -> bool:
    """Whether a body is an event stream, from its first bytes rather than its label: gateways and
    proxies mislabel both shapes. A body that says neither goes by its label."""
    # A UTF-8 byte order mark may open either shape: the SDK's SSE decoder and json.loads both skip it.
    start = head.lstrip().removeprefix(_BOM).lstrip()[:8]
    if start.startswith(b"{"):
        return False
    return start.startswith(_SSE_STARTS) or _is_event_stream(content_type)


async def _head(chunks: AsyncIterator[bytes]) -> bytes:
    """The body's first bytes, up to and including the first chunk that is not blank."""
    seen = []
    async for chunk in chunks:
        seen.append(chunk)
        if chunk.strip():
            break
    return b"".join(seen)


async def _whole(head: bytes, chunks: AsyncIterator[bytes]) -> bytearray:
    """``head`` and the rest of the body, in one buffer."""
    body = bytearray(head)
    async for chunk in chunks:
        body += chunk
    return body


class _Rest(httpx.AsyncByteStream):
    """A body whose first bytes were already read to tell its shape: those, then the rest as it comes.

    ``between`` runs before each further read from the network (a streaming caller is handed
    what the chunk before brought)."""

    def __init__(
        self,
        head: bytes,
        rest: AsyncIterator[bytes],
        original: httpx.Response,
        between: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._head = head
        self._rest = rest
        self._original = original
        self._between = between

    async def __aiter__(self) -> AsyncIterator[bytes]:
        between = self._between
        # Handed on once and let go: the first read is not held for as long as the stream lasts.
        head, self._head = self._head, b""
        if head:
            yield head
        del head
        if between is None:
            async for chunk in self._rest:
                yield chunk
            return
        await between()
        async for chunk in self._rest:
            yield chunk
            await between()

    async def drain(self, seconds: float) -> None:
        """Read what is left of an HTTP/1.1 body whose answer is already whole, without handing it
        on, so that its connection can serve the next request: only if the body ends within
        ``seconds`` and :data:`_DRAIN_BYTES`. A stream the peer holds open is left to be closed,
        at once; nothing read here is parsed."""
        if self._original.http_version != "HTTP/1.1" or seconds <= 0:
            return
        left = _DRAIN_BYTES
        try:
            async with asyncio.timeout(seconds):
                async for chunk in self._rest:
                    left -= len(chunk)
                    if left < 0:
                        return
        except Exception:  # noqa: S110  # the peer held it open or broke it: the close that follows ends it
            pass

    async def aclose(self) -> None:
        await self._original.aclose()


def _plain_headers(http: httpx.Response) -> list[tuple[bytes, bytes]]:
    # What is replayed is already decoded: these headers described the bytes on the wire. Raw
    # bytes, since a gateway's header value need not be ASCII.
    return [(k, v) for k, v in http.headers.raw if k.lower() not in _WIRE_HEADERS]


def _is_response_document(data: dict[str, Any]) -> bool:
    return data.get("object") == "response" or "output" in data or "status" in data


async def _from_document(data: dict[str, Any], *, limit: int, exchange: _Exchange) -> ChatResponse:
    """The ChatResponse of a JSON Response document, read as the mapping ``json.loads`` made of it.

    The document is decoded once: the folding reads mappings as it reads the SDK's models, so no
    SDK model is built from it (the SDK would validate every output item against its union, more
    than the decode itself costs, only to be read field by field and written back to JSON for each
    item's ``provider_item``). Output items are mapped a few hundred at a time, with the event loop
    given control in between, so a document of many items never holds the loop in one step (what
    is mapped so far is the ``exchange``'s partial, should the deadline end it there).
    """
    if not _is_response_document(data):
        error = data.get("error")
        if isinstance(error, dict):
            raise provider_failure(error, "the provider returned an error object", None)
        raise UnreadableResponseError("the JSON body is not a Responses object (no output, status or object)")
    output = items_of(data.get("output"))
    if len(output) > limit:
        raise _too_many(limit, chat_response(data, ()))
    contents: list[Content] = []
    exchange.document, exchange.mapped = data, contents
    for start in range(0, len(output), _ITEMS_PER_STEP):
        if start:
            await asyncio.sleep(0)
        for item in output[start : start + _ITEMS_PER_STEP]:
            contents.extend(item_contents(item))
    said = text(data.get("status"))
    status = final_status(said, data)
    result = raise_if_failed(chat_response(data, contents, status=status), data)
    unreadable(data, len(output), result)
    if not result.messages:
        unfinished(said, data, result)
    return result


class _ResponsesAdapter(abc.ABC):
    """What both adapters share: the builder, the deadline, the exception firewall and the diagnostics."""

    _stream: bool

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        settings: ResponsesSettings,
        *,
        logger: logging.Logger | None = None,
    ) -> None:
        # A copy of the client through which each HTTP attempt can be logged; the given one is untouched.
        self._client = observed(client, max_response_bytes=settings.max_response_bytes)
        api_key = client.api_key if isinstance(client.api_key, str) else None
        self._redactor = Redactor([api_key, *settings.extra_headers.values()])
        self._settings = settings
        self._builder = ResponsesPayloadBuilder(settings)
        self._logger = logger or _LOGGER
        _guard_library_logs()

    def __repr__(self) -> str:
        # The client holds the API key; a repr names only what is safe to show.
        return f"{type(self).__name__}(model={self._settings.model!r})"

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Send the conversation and return the whole answer.

        Raises only ChatError subclasses (cancellation aside), built once with what had arrived,
        and within ``deadline_seconds`` of the call, retries and Retry-After waits included.
        """
        request = self._built(messages, options)
        return await self._run(request, self._new_exchange(request, seconds=self._deadline(options)))

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Send the conversation and yield the answer as it arrives, as :class:`ChatResponseUpdate`s.

        The body is read by a task of its own, under the same deadline, size cap, firewall and
        retries as :meth:`get_response`, and ``ChatResponse.from_updates`` of what is yielded is
        exactly what :meth:`get_response` returns for the same body. An event stream's text goes
        out piece by piece as its events arrive; a JSON document's contents once it is read.

        - The deadline bounds the request (connecting, retries, reading the whole body) from this
          call on, whatever the caller does between updates: reading goes on ahead of the caller
          (within ``max_response_bytes``), so a slow caller neither stalls the connection nor
          stretches the request past its deadline.
        - A body broken in transit is asked for again only while the caller has been handed
          nothing; after that the break is raised as the ChatError it is, with what arrived. Until
          the first text or reasoning arrives, nothing is handed over (function calls are whole
          only once the answer is, so a caller acts on them at the end anyway): an answer of calls
          alone is asked for again like an answer read whole.
        - Failures raise ChatError subclasses from the iterator, with ``partial``. Leaving the
          iteration early (``break`` then ``aclose()``, or cancellation) closes the HTTP response.
        """
        request = self._built(messages, options)
        channel = _Channel()
        exchange = self._new_exchange(request, channel, seconds=self._deadline(options))
        reading = asyncio.create_task(self._read_for(request, exchange, channel))
        loop = asyncio.get_running_loop()
        try:
            while True:
                folder = exchange.folder
                updates = folder.out
                if updates:
                    folder.out = []
                    if not channel.handed:
                        if not any(map(_shows, updates)):
                            channel.held.extend(updates)
                            continue
                        updates = [*channel.held, *updates]
                        channel.held = []
                    channel.handed = True
                    for update in updates:
                        yield update
                    continue
                if channel.ended:
                    break
                channel.waiter = loop.create_future()
                try:
                    await channel.waiter
                finally:
                    channel.waiter = None
            # The reading task has ended: this raises its ChatError, if it had one.
            await reading
            for update in channel.held:
                yield update
        finally:
            if not reading.done():
                reading.cancel()
                await asyncio.wait([reading])
            if not reading.cancelled():
                # Retrieved, so that an error the caller walked away from is not reported as lost.
                reading.exception()

    async def _read_for(self, request: ResponsesRequest, exchange: _Exchange, channel: _Channel) -> None:
        try:
            result = await self._run(request, exchange)
            out = exchange.folder.out
            if not exchange.streamed and out is not None:
                # A JSON document: its contents go out once it is read.
                out.extend(result.to_updates())
        finally:
            channel.end()

    def _deadline(self, options: ChatOptions | None) -> float:
        """The request's deadline in seconds: ``deadline_seconds``, or the options' when shorter."""
        seconds = self._settings.deadline_seconds
        asked = options.deadline_seconds if options is not None else None
        return seconds if asked is None else max(0.0, min(seconds, asked))

    def _built(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ResponsesRequest:
        """The request for ``messages``; more items than ``max_output_items`` is refused before anything
        is built or sent (the same bound as on an answer: the work of a request grows with its items)."""
        limit = self._settings.max_output_items
        items = sum(max(len(message.contents), 1) for message in messages)
        if items > limit:
            raise ChatError(
                f"the conversation holds {items} items, more than agent.max_output_items ({limit}) "
                "a request may send"
            )
        return self._builder.build(messages, options)

    def _new_exchange(
        self, request: ResponsesRequest, channel: _Channel | None = None, *, seconds: float
    ) -> _Exchange:
        return _Exchange(
            request.digest,
            self._logger,
            self._stream,
            self._redactor,
            seconds=seconds,
            deadline=time.monotonic() + seconds,
            folder=EventFolder(updates=channel is not None),
            channel=channel,
        )

    async def _run(self, request: ResponsesRequest, exchange: _Exchange) -> ChatResponse:
        """The whole exchange for ``request`` behind the firewall and the deadline."""
        seconds = exchange.seconds
        listening = LISTENER.set(exchange)
        redacting = _REDACTOR.set(self._redactor)
        failure: ChatError | None = None
        cause: BaseException | None = None
        try:
            with counting_left_out(self._logger):
                async with asyncio.timeout(seconds) as scope:
                    result = await self._exchange_retrying(request, exchange)
        except Exception as exc:
            # The firewall: whatever the SDK, httpx, json or the folding raised becomes one ChatError.
            raised: Exception = DeadlineExceededError(seconds) if scope.expired() else exc
            failure = map_error(
                raised,
                partial=exchange.partial(),
                request_id=exchange.request_id,
                attempts=exchange.attempts,
                answered=exchange.answered,
                status_code=exchange.status_code,
                redactor=self._redactor,
            )
            cause = scrubbed_cause(raised, self._redactor)
        finally:
            _REDACTOR.reset(redacting)
            LISTENER.reset(listening)
        if failure is not None:
            self._log_failure(failure, exchange)
            # Raised outside the handler so that the provider's own exception is not its __context__.
            raise failure from cause
        if exchange.attempts > 1:
            self._logger.info(
                "Responses request succeeded after %d attempts",
                exchange.attempts,
                extra=exchange.log_extra(result.response_id),
            )
        return result

    async def _exchange_retrying(self, request: ResponsesRequest, exchange: _Exchange) -> ChatResponse:
        """One SDK call for ``request``, and another while its answer's body broke in transit.

        The SDK retries what happens before a body starts (connection failures, 408/409/429/5xx);
        a body that then breaks (a reset, a protocol error, a stream cut off before its terminal
        event) is asked for again here, with the SDK's back-off, while the same ``max_retries``
        budget and the deadline allow. What the broken attempt had folded is dropped; a failure the
        provider reports, an unreadable body, a body over the cap or a stalled read is not retried.
        """
        client = self._client
        while True:
            try:
                return await self._exchange(client, request, exchange)
            except Exception as exc:
                if not (exchange.answered and _broke_in_transit(exc) and exchange.may_ask_again()):
                    raise
                exchange.body_broke(exc)
                left_over = self._client.max_retries + 1 - exchange.attempts
                wait = retry_backoff(exchange.attempts - 1)
                seconds_left = exchange.seconds_left()
                if left_over < 1 or (seconds_left is not None and wait >= seconds_left):
                    raise
                await asyncio.sleep(wait)
                exchange.start_again()
                client = client.with_options(max_retries=left_over - 1)

    @abc.abstractmethod
    async def _exchange(
        self, client: openai.AsyncOpenAI, request: ResponsesRequest, exchange: _Exchange
    ) -> ChatResponse:
        """Send ``request`` through ``client`` and fold whatever body comes back, telling ``exchange``."""

    @staticmethod
    def _post(
        client: openai.AsyncOpenAI,
        request: ResponsesRequest,
        *,
        stream: bool,
        headers: Mapping[str, str] | None = None,
    ) -> Awaitable[Any]:
        """``POST /responses`` as ``responses.create()`` sends it, with the body already written.

        The body is plain JSON built by the payload builder: as create() keywords the SDK would walk
        all of it against its TypedDicts (most of a small request's cost) to change nothing, since no
        Responses parameter has an alias or a format. It goes as the bytes ``request.wire`` writes,
        create()'s own bytes but for one thing the SDK's encoder cannot write: an unpaired surrogate
        in a call id, which goes back as its JSON escape, the id the provider sent, so that it can
        pair the result with its call. The SDK still sends it: its headers, auth, retries and stream.
        """
        options = bearer_auth_options({**request.headers, **(headers or {})})
        return client.post(
            "/responses",
            cast_to=Response,
            content=request.wire(stream=stream),
            options=options,
            stream=stream,
            stream_cls=openai.AsyncStream[ResponseStreamEvent],
        )

    async def _fold_response(self, http: httpx.Response, exchange: _Exchange) -> ChatResponse:
        """An answer whose body is still unread: its first bytes tell its shape, whatever its label.
        An event stream is folded as it arrives; a JSON document is read whole, then mapped."""
        exchange.saw(http)
        content_type = http.headers.get("content-type", "")
        chunks = http.aiter_bytes()
        head = await _head(chunks)
        if not _is_stream_body(head, content_type):
            # Read into one buffer (not a list of chunks then joined: two copies at once), handed to
            # _fold_body as its only reference, so that it can drop the bytes once they are decoded.
            whole = await self._fold_body(await _whole(head, chunks), content_type, http, exchange)
            return attrs.evolve(whole, usage=with_cost(whole.usage, exchange.folder.cost))
        live = httpx.Response(
            http.status_code,
            headers=_plain_headers(http),
            stream=_Rest(head, chunks, http, exchange.between_reads if exchange.channel else None),
            request=http.request,
        )
        del head  # _Rest's now, which lets it go once handed on
        return await self._fold_stream(live, exchange)

    async def _fold_body(
        self, body: bytearray, content_type: str, http: httpx.Response, exchange: _Exchange
    ) -> ChatResponse:
        """A whole body of either shape: an event stream goes through the folder, JSON the mapping.

        A JSON body is held once at a time where it can be: the bytes until they are decoded, the
        text until it is parsed (``json.loads`` of bytes would hold both while it parses)."""
        # The front counted the body against the cap as it arrived (http_front.observed).
        cap = self._settings.max_response_bytes
        if _is_stream_body(bytes(body[:64]), content_type):
            # ``body`` is already decoded, so the replay must not say it is compressed (decoded once).
            replay = httpx.Response(
                http.status_code, headers=_plain_headers(http), content=bytes(body), request=http.request
            )
            return await self._fold_stream(replay, exchange)
        if len(body) <= LARGE:
            _refuse_if_bloating(body, cap)
        try:
            # What json.loads does with bytes, done here so that the bytes go before the parse.
            document = body.decode(json.detect_encoding(body), "surrogatepass")
        except UnicodeDecodeError:
            raise UnreadableResponseError("the body is neither a JSON Response nor an event stream") from None
        del body
        try:
            # A large document is parsed in steps (json.loads would hold the loop for the whole parse),
            # refused part way should it take more than three times the cap.
            data = json.loads(document) if len(document) <= LARGE else await _parsed_in_steps(document, cap)
        except json.JSONDecodeError as exc:
            if _cut_short(exc):
                raise CutShortError("the JSON body ended before its document did") from None
            raise UnreadableResponseError("the body is neither a JSON Response nor an event stream") from None
        del document
        if not isinstance(data, dict):
            raise UnreadableResponseError("the JSON body is not an object")
        return await _from_document(data, limit=self._settings.max_output_items, exchange=exchange)

    async def _fold_stream(self, http: httpx.Response, exchange: _Exchange) -> ChatResponse:
        """An event stream read with the SDK's own stream reader, so that a buffered or re-wrapped
        stream folds exactly like the SDK's live one. The SDK types each event as its own union of
        event classes, told which field names the class (see ``event_types``)."""
        cap = self._settings.max_response_bytes
        stream = event_stream(self._client, http, STREAM_EVENT, lambda inner: _Decoding(inner, cap))
        folder = exchange.folder
        feed = folder.feed
        limit = self._settings.max_output_items
        exchange.streamed = True
        count = 0
        mark = time.monotonic()
        try:
            async for handed in stream:
                # The events one read completed, typed together; or one event, built by the SDK.
                for event in handed if type(handed) is TypedEvents else (handed,):
                    if type(event) is dict:
                        # A heavy event, as the mapping it is: folded in steps, the loop running between.
                        output = items_of(field(field(event, "response"), "output"))
                        if len(output) > limit:
                            raise _too_many(limit, exchange.partial())
                        for _ in folder.feed_in_steps(event):
                            await asyncio.sleep(0)
                        mark = time.monotonic()
                    else:
                        feed(event)
                    if folder.ended:
                        break
                    count += 1
                    if count % _EVENTS_PER_LOOK == 0:
                        if folder.item_count > limit:
                            raise _too_many(limit, exchange.partial())
                        if time.monotonic() - mark > _SLICE:
                            # A body already in memory never suspends the reader: the loop's other work
                            # runs now.
                            await asyncio.sleep(0)
                            mark = time.monotonic()
                if folder.ended:
                    # The answer is whole: what follows (a stream left open, a bad line) is not folded;
                    # a body that has already ended is read to its end, so its connection is kept.
                    body = http.stream
                    if isinstance(body, _Rest):
                        left = exchange.seconds_left()
                        await body.drain(_DRAIN_SECONDS if left is None else min(_DRAIN_SECONDS, left / 2))
                    break
        finally:
            await stream.close()
            await close_reader(stream)
        if folder.item_count > limit:
            raise _too_many(limit, exchange.partial())
        return folder.result()

    def _log_failure(self, error: ChatError, exchange: _Exchange) -> None:
        # Every field comes from the error, whose provider text and ids are already scrubbed.
        extra = exchange.log_extra()
        extra["response_id"] = error.response_id
        extra["request_id"] = error.request_id
        extra["error_type"] = type(error).__name__
        extra["error_code"] = error.code if isinstance(error, ResponseFailedError) else None
        if isinstance(error, ChatTransportError):
            extra["attempts"] = error.attempts
            extra["status_code"] = error.status_code
        self._logger.warning("Responses request failed: %s", type(error).__name__, extra=extra)


class ResponsesSseAdapter(_ResponsesAdapter):
    """A ChatPort that asks for an event stream (``stream=True``) and folds it as it arrives.

    A JSON Response where a stream was asked for is read as JSON, whatever its label says.
    """

    _stream = True

    async def _exchange(
        self, client: openai.AsyncOpenAI, request: ResponsesRequest, exchange: _Exchange
    ) -> ChatResponse:
        stream = await self._post(client, request, stream=True)
        try:
            return await self._fold_response(cast(httpx.Response, stream.response), exchange)
        finally:
            await stream.close()


class ResponsesJsonAdapter(_ResponsesAdapter):
    """A ChatPort that asks for JSON (``stream=False``).

    An event stream where JSON was asked for (some gateway routes answer that way) goes through
    the same folder as a live stream, as it arrives, so that a deadline still finds what came.
    """

    _stream = False

    async def _exchange(
        self, client: openai.AsyncOpenAI, request: ResponsesRequest, exchange: _Exchange
    ) -> ChatResponse:
        # Asked as responses.with_streaming_response asks (the SDK's raw-response header): the body is
        # left unread, so that its shape decides how it is read.
        raw: openai.AsyncAPIResponse[Response] = await self._post(
            client, request, stream=False, headers={RAW_RESPONSE_HEADER: "stream"}
        )
        try:
            return await self._fold_response(cast(httpx.Response, raw.http_response), exchange)
        finally:
            await raw.close()
