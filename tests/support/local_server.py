"""A real HTTP server on 127.0.0.1 for tests: uvicorn serving a raw ASGI app in the test's own event loop.

Use it where a test must prove something about real sockets (a deadline against a peer that never
finishes, a redirect that must reach no one, a connection closed early). For wire-format tests
``httpx.MockTransport`` is quicker. The server records every request it received and stops when
the ``async with`` block ends, however the test ended. :func:`adapter_on` gives one of the real
adapters talking to it (``ADAPTERS`` parametrizes a test over both).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Final

import attrs
import httpx
import pytest

from adapters.offline.render import event_frame, message_item, response_document, sse, stream_events
from adapters.offline.threaded import ASGIApp, Receive, Request, Scope, Send, listening, read_request
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatMessage, ChatPort
from tests.support.gateway import sdk_over

__all__ = [
    "ADAPTERS",
    "PEER_LIMIT",
    "STALLED_CREATED",
    "AdapterType",
    "LocalServer",
    "Received",
    "Sender",
    "adapter_on",
    "endless_text",
    "send_until_gone",
    "serve",
    "warm_up_event_parsing",
]

_STARTUP_SECONDS: Final = 10.0
PEER_LIMIT: Final = 30.0
"""A peer that never finishes (:func:`send_until_gone`) stops by itself after this long, whatever the
client does: far beyond any deadline a test sets, so only a client that never gave up waits for it."""

STALLED_CREATED: Final = {
    "type": "response.created",
    "sequence_number": 0,
    "response": {
        "id": "resp_slow",
        "object": "response",
        "model": "gpt-slow",
        "status": "in_progress",
        "output": [],
    },
}
"""The first event of a stalled answer (:func:`endless_text`): its response id is ``resp_slow``."""
_TEXT_ADDED: Final = {
    "type": "response.output_item.added",
    "sequence_number": 1,
    "output_index": 0,
    "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []},
}
_X_DELTA: Final = {
    "type": "response.output_text.delta",
    "sequence_number": 2,
    "item_id": "msg_1",
    "output_index": 0,
    "content_index": 0,
    "delta": "x",
    "logprobs": [],
}

AdapterType = type[ResponsesSseAdapter] | type[ResponsesJsonAdapter]
ADAPTERS: Final = pytest.mark.parametrize(
    "adapter_type", [ResponsesSseAdapter, ResponsesJsonAdapter], ids=["sse", "json"]
)


Received = Request
"""One request as the server saw it (method, path with its query, lower-cased headers, body; ``json()``)."""


@attrs.define
class LocalServer:
    """A running server: its base URL (with ``/v1``) and the requests it has received so far."""

    port: int
    received: list[Received]
    clients: list[tuple[str, int] | None] = attrs.field(factory=list)
    """The client address (host, port) of each request received, in order: one per connection."""

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"


class Sender:
    """Writes one response: the start line and headers, then body pieces; notices a client that left."""

    def __init__(self, send: Send, receive: Receive) -> None:
        self._send = send
        self._receive = receive
        self.disconnected = asyncio.Event()

    async def start(self, status: int = 200, headers: dict[str, str] | None = None) -> None:
        pairs = [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
        await self._send({"type": "http.response.start", "status": status, "headers": pairs})
        asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.disconnected.set()
                return

    async def body(self, data: bytes, *, more: bool = True) -> None:
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def silent_until_gone(self, limit: float = PEER_LIMIT) -> None:
        """Answer nothing, not even the start line, until the client leaves (or ``limit`` seconds pass)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(limit):
                while (await self._receive())["type"] != "http.disconnect":
                    pass
        self.disconnected.set()

    async def whole(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        await self.start(status, {"content-length": str(len(body)), **(headers or {})})
        await self.body(body, more=False)


Handler = Callable[[Received, Sender], Awaitable[None]]


async def send_until_gone(sender: Sender, piece: bytes, *, every: float, limit: float = PEER_LIMIT) -> None:
    """Send ``piece`` every ``every`` seconds until the client leaves (or ``limit`` seconds have passed)."""
    loop = asyncio.get_running_loop()
    stop = loop.time() + limit
    while not sender.disconnected.is_set() and loop.time() < stop:
        try:
            await sender.body(piece)
        except OSError:
            return
        await asyncio.sleep(every)


async def endless_text(sender: Sender) -> None:
    """An answer that never ends: an event stream opened by :data:`STALLED_CREATED` and one message,
    whose text grows by ``x`` every 20 ms until the client leaves (or :data:`PEER_LIMIT`)."""
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(event_frame(STALLED_CREATED).encode() + event_frame(_TEXT_ADDED).encode())
    await send_until_gone(sender, event_frame(_X_DELTA).encode(), every=0.02)


def _app(handler: Handler, received: list[Received], clients: list[tuple[str, int] | None]) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = await read_request(scope, receive)
        client = scope.get("client")
        clients.append(None if client is None else (str(client[0]), int(client[1])))
        received.append(request)
        await handler(request, Sender(send, receive))

    return app


@asynccontextmanager
async def serve(handler: Handler) -> AsyncIterator[LocalServer]:
    """Run ``handler`` for every request on a free port of 127.0.0.1 until the block ends."""
    received: list[Received] = []
    clients: list[tuple[str, int] | None] = []
    server, listener = listening(_app(handler, received, clients), grace_seconds=1)
    loop = asyncio.get_running_loop()
    task = loop.create_task(server.serve(sockets=[listener]))
    try:
        deadline = loop.time() + _STARTUP_SECONDS
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the local server stopped before it started")
            if loop.time() > deadline:
                raise TimeoutError("the local server did not start within 10 s")
            await asyncio.sleep(0.005)
        yield LocalServer(port=listener.getsockname()[1], received=received, clients=clients)
    finally:
        server.should_exit = True
        try:
            await asyncio.wait_for(task, timeout=_STARTUP_SECONDS)
        finally:
            listener.close()


async def warm_up_event_parsing() -> None:
    """Fold one whole event stream, off the network, so that the SDK's lazy set-up of its event types
    (seconds of blocking work on a loaded machine, once per process) is paid before a test starts a
    deadline rather than out of it."""
    # The very events a stalled answer opens with, then a whole answer's: their types are built lazily.
    whole = stream_events(
        response_document(
            [message_item("msg_1", "warm")], response_id="resp_warm", model="gpt-test", created_at=1
        )
    )
    body = sse([STALLED_CREATED, _TEXT_ADDED, _X_DELTA, *whole])
    transport = httpx.MockTransport(
        lambda _: httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})
    )
    async with httpx.AsyncClient(transport=transport) as http_client:
        client = sdk_over(http_client, base_url="http://127.0.0.1:9/v1", api_key="sk-warm-up")
        chat = ResponsesSseAdapter(client, ResponsesSettings(model="gpt-test"))
        await chat.get_response([ChatMessage.user("warm up")])


@asynccontextmanager
async def adapter_on(
    base_url: str,
    adapter_type: AdapterType,
    *,
    max_retries: int = 0,
    deadline: float = 30.0,
    follow_redirects: bool = False,
) -> AsyncIterator[ChatPort]:
    """An adapter of ``adapter_type`` for ``base_url``, on a legacy httpx client as the container builds
    one; ``deadline`` is its ``agent.deadline_seconds``."""
    async with httpx.AsyncClient(follow_redirects=follow_redirects) as http_client:
        client = sdk_over(
            http_client,
            base_url=base_url,
            api_key="sk-local-server-test",
            max_retries=max_retries,
            timeout=10.0,
        )
        yield adapter_type(client, ResponsesSettings(model="gpt-test", deadline_seconds=deadline))
