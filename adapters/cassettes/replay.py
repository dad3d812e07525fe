"""``ReplayChat``: a ChatPort that answers from cassettes, through the real Responses adapters."""

from __future__ import annotations

import collections
import json
from collections.abc import AsyncIterator, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Final, Unpack

import attrs
import httpx
import openai

from adapters.cassettes.format import (
    SUFFIX,
    CassetteError,
    Exchange,
    read_exchanges,
    request_diff,
    request_digest,
)
from adapters.closing import ClosedOnExit
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatError, ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, ErrorContext

__all__ = ["ReplayChat", "ReplayMismatchError", "ReplayTransport", "load_cassettes"]

# Requests never leave this process: the transport answers them all.
_NOWHERE: Final = "http://replay.invalid/v1"
_REPLAY_KEY: Final = "sk-replay"


class ReplayMismatchError(ChatError):
    """A request the cassettes do not hold: ``diff`` shows how it differs from the nearest recorded one."""

    def __init__(self, message: str, *, diff: str = "", **context: Unpack[ErrorContext]) -> None:
        super().__init__(message, **context)
        self.diff = diff


class _Unmatched(httpx.TransportError):
    """Raised into the SDK for a request no exchange answers; ``ReplayChat`` turns it into its error."""


@attrs.define
class _Miss:
    message: str
    diff: str


_MISSES: ContextVar[list[_Miss] | None] = ContextVar("replay_misses", default=None)


def load_cassettes(source: str | Path) -> list[Exchange]:
    """The exchanges of a cassette file, or of every ``*.jsonl`` cassette in a directory (by name)."""
    path = Path(source)
    if path.is_dir():
        files = sorted(child for child in path.iterdir() if child.suffix == SUFFIX and child.is_file())
        if not files:
            raise CassetteError(f"{path}: holds no {SUFFIX} cassette")
    elif path.is_file():
        files = [path]
    else:
        raise CassetteError(f"{path}: no such cassette file or directory")
    return [exchange for file in files for exchange in read_exchanges(file)]


class ReplayTransport(httpx.AsyncBaseTransport):
    """Answers each request with the first unused recorded exchange whose request digest is equal
    (``format.request_digest``: method, path and body, less what changes run to run), its status,
    headers and body bytes as recorded; a request with none raises inside the SDK, and the miss, with a
    diff against the nearest recorded request, is kept for ``ReplayChat``."""

    def __init__(self, exchanges: Sequence[Exchange]) -> None:
        self._recorded = list(exchanges)
        self._unused: dict[str, collections.deque[Exchange]] = collections.defaultdict(collections.deque)
        for exchange in exchanges:
            self._unused[exchange.digest].append(exchange)
        self._next = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        sent = await request.aread()
        try:
            body: object = json.loads(sent)
        except ValueError:
            body = sent.decode("utf-8", "replace")
        waiting = self._unused.get(request_digest(request.method, request.url.path, body))
        if not waiting:
            miss = self._miss(request, body)
            misses = _MISSES.get()
            if misses is not None:
                misses.append(miss)
            raise _Unmatched(miss.message)
        exchange = waiting.popleft()
        headers = dict(exchange.response_headers)
        return httpx.Response(
            exchange.status, headers=headers, content=exchange.response_body, request=request
        )

    def _miss(self, request: httpx.Request, body: object) -> _Miss:
        path = request.url.path
        candidates = [e for e in self._recorded if e.path == path and e.method == request.method]
        if not candidates:
            return _Miss(f"the cassette holds no {request.method} {path} request", "")
        nearest = min(candidates, key=lambda exchange: len(request_diff(exchange.request_body, body)))
        same = sum(1 for e in candidates if e.digest == nearest.digest)
        if request_digest(request.method, path, body) == nearest.digest:
            return _Miss(
                f"the cassette holds this {request.method} {path} request {same} time(s), all used", ""
            )
        return _Miss(
            f"the cassette holds no such {request.method} {path} request",
            request_diff(nearest.request_body, body),
        )


class ReplayChat(ClosedOnExit):
    """A ``ChatPort`` that answers from a cassette (a file, or a directory of them) with no gateway.

    Each request goes through the real adapter, ``ResponsesSseAdapter`` (``streaming``, the default)
    or ``ResponsesJsonAdapter``, over a transport that answers with the recorded bytes, so a recorded
    answer folds exactly as it did live, whichever adapter recorded it. A request the cassette does not
    hold raises :class:`ReplayMismatchError` with a short diff, never a wrong answer. ``settings`` are
    the adapter's (the model a request names unless its options name one); ``aclose()`` or
    ``async with`` closes its client.
    """

    def __init__(
        self,
        cassette: str | Path | Sequence[Exchange],
        *,
        settings: ResponsesSettings | None = None,
        streaming: bool = True,
    ) -> None:
        exchanges = load_cassettes(cassette) if isinstance(cassette, str | Path) else cassette
        self._transport = ReplayTransport(exchanges)
        self._http = httpx.AsyncClient(transport=self._transport, follow_redirects=False)
        client = openai.AsyncOpenAI(
            api_key=_REPLAY_KEY,
            base_url=_NOWHERE,
            http_client=self._http,  # type: ignore[arg-type]  # the SDK accepts an httpx client
            max_retries=0,
        )
        adapter = ResponsesSseAdapter if streaming else ResponsesJsonAdapter
        self._adapter = adapter(client, settings or ResponsesSettings(model="offline"))
        self._client = client

    def __repr__(self) -> str:
        return f"ReplayChat({self._adapter!r})"

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        misses: list[_Miss] = []
        token = _MISSES.set(misses)
        try:
            return await self._adapter.get_response(messages, options)
        except ChatError as exc:
            if misses:
                raise _mismatch(misses, exc) from None
            raise
        finally:
            _MISSES.reset(token)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        misses: list[_Miss] = []
        updates = self._adapter.get_streaming_response(messages, options)
        try:
            # The adapter starts its reading task on the first step, and the task copies this context.
            token = _MISSES.set(misses)
            try:
                first = await anext(updates)
            except StopAsyncIteration:
                return
            finally:
                _MISSES.reset(token)
            yield first
            async for update in updates:
                yield update
        except ChatError as exc:
            if misses:
                raise _mismatch(misses, exc) from None
            raise
        finally:
            await updates.aclose()  # type: ignore[attr-defined]  # the adapter's is an async generator

    async def aclose(self) -> None:
        await self._client.close()


def _mismatch(misses: list[_Miss], error: ChatError) -> ReplayMismatchError:
    miss = misses[-1]
    message = f"replay: {miss.message}" + (f"\n{miss.diff}" if miss.diff else "")
    return ReplayMismatchError(
        message, diff=miss.diff, response_id=error.response_id, model_id=error.model_id, request_id=None
    )
