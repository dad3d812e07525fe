"""uvicorn serving an ASGI app on a loopback port from a thread of its own, for synchronous callers."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, Self

import attrs

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ASGIApp", "Receive", "Request", "Scope", "Send", "ThreadedServer", "listening", "read_request"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_STARTUP_SECONDS: Final = 10.0
_POLL_SECONDS: Final = 0.005
# How long uvicorn lets unfinished replies run once stop() begins, before it cancels them.
_GRACE_SECONDS: Final = 5
# The load suite opens a couple of hundred connections at once; a short backlog would make most of
# them wait for SYN retransmits.
_BACKLOG: Final = 512
# How long an idle connection stays open. uvicorn's default (5 s) equals httpx's keep-alive expiry, so a
# client could pick a pooled connection in the instant the server closes it and see "Server disconnected"
# before any response (more likely the busier the machine). Longer than any client keeps one idle, the
# client always lets go first: a connection reused is never one the server is closing.
_KEEP_ALIVE_SECONDS: Final = 30
_MISSING_UVICORN: Final = (
    "serving on 127.0.0.1 needs uvicorn, which the offline extra installs: "
    "pip install 'meeting-assistant-agents[offline]'"
)


@attrs.frozen
class Request:
    """One request as an ASGI app received it: header names lower-cased, the body read whole."""

    method: str
    path: str
    """The path with its query string, as the request line wrote it."""
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body read as JSON (raises ``ValueError`` when it is not)."""
        return json.loads(self.body)


async def read_request(scope: Scope, receive: Receive) -> Request:
    """The request ``scope`` opens, with its whole body (sent in one piece or many)."""
    body = bytearray()
    message: MutableMapping[str, Any] = {"more_body": True}
    while message.get("more_body"):
        message = await receive()
        body += message.get("body", b"")
    query = scope.get("query_string", b"").decode("latin-1")
    path = scope["path"] + (f"?{query}" if query else "")
    headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
    return Request(scope["method"], path, headers, bytes(body))


def uvicorn_missing() -> str | None:
    """What to install when uvicorn is not there (found without importing it), else None."""
    return _MISSING_UVICORN if importlib.util.find_spec("uvicorn") is None else None


def listening(
    app: ASGIApp, *, grace_seconds: int, address: tuple[str, int] = ("127.0.0.1", 0)
) -> tuple[uvicorn.Server, socket.socket]:
    """A uvicorn server for ``app`` and the socket listening on ``address`` it is to serve with
    ``server.serve(sockets=[listener])``. The process's logging setup stays as it was.

    uvicorn is imported here: the CLI imports the stand-in on every run, and runs without uvicorn
    when a real gateway is configured. Raises ModuleNotFoundError with the install hint without it.
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise ModuleNotFoundError(_MISSING_UVICORN, name="uvicorn") from exc
    config = uvicorn.Config(
        app,
        interface="asgi3",
        http="h11",
        loop="asyncio",
        lifespan="off",
        # No logging setup of uvicorn's own: the process's (a host's, a test's) stays as it was.
        log_config=None,
        # scope["client"] must stay the socket's peer: ThreadedServer.reset() finds the connection by it.
        proxy_headers=False,
        timeout_graceful_shutdown=grace_seconds,
        timeout_keep_alive=_KEEP_ALIVE_SECONDS,
    )
    return uvicorn.Server(config), socket.create_server(address, backlog=_BACKLOG)


class ThreadedServer:
    """An ASGI app served by uvicorn on ``host`` in a daemon thread with its own event loop.

    ``start()`` binds in the caller's thread (so a taken port fails there) and returns once uvicorn
    accepts connections; ``stop()`` sets :attr:`stopping`, lets uvicorn close every connection and
    joins the thread. Nothing blocks on the caller's event loop, so both work from sync code and
    from inside a running loop. uvicorn is imported on ``start()``: importing this module needs none.
    """

    def __init__(self, app: ASGIApp, *, name: str, host: str = "127.0.0.1", port: int = 0) -> None:
        self._app = app
        self._name = name
        self._address = (host, port)
        self._running: tuple[uvicorn.Server, threading.Thread, int] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failure: BaseException | None = None
        self._state: Literal["not started", "running", "stopped"] = "not started"
        self.stopping = asyncio.Event()
        """Set (on the server's loop) when ``stop()`` begins: a response that waits on purpose ends then."""

    def start(self) -> Self:
        """Bind, listen and serve; returns once connections are accepted. Idempotent while running."""
        if self.state == "stopped":
            raise RuntimeError(f"{self._name} cannot be restarted once stopped; make a new one")
        if self.state == "running":
            return self
        server, listener = listening(self._app, grace_seconds=_GRACE_SECONDS, address=self._address)
        thread = threading.Thread(target=self._run, args=(server, listener), name=self._name, daemon=True)
        self._running = (server, thread, listener.getsockname()[1])
        self._state = "running"
        thread.start()
        deadline = time.monotonic() + _STARTUP_SECONDS
        while not server.started:
            if not thread.is_alive():
                self._running, self._state = None, "stopped"
                raise RuntimeError(f"{self._name} stopped before it started serving") from self._failure
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self._name} did not start serving within {_STARTUP_SECONDS:.0f} s")
            thread.join(_POLL_SECONDS)  # returns at once if the thread has ended
        log.info("%s listening on %s", self._name, self.origin)
        return self

    def _run(self, server: uvicorn.Server, listener: socket.socket) -> None:
        try:
            with asyncio.Runner() as runner:
                self._loop = runner.get_loop()
                runner.run(server.serve(sockets=[listener]))
        except BaseException as exc:
            if server.started:
                raise
            self._failure = exc  # start() raises it, in the caller's thread
        finally:
            listener.close()

    def stop(self) -> None:
        """Stop serving, close every connection and join the thread; safe to call more than once."""
        if self._running is None or self.state == "stopped":
            return
        self._state = "stopped"
        server, thread, _ = self._running
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing is waiting any more
                self._loop.call_soon_threadsafe(self.stopping.set)
        server.should_exit = True
        thread.join(_STARTUP_SECONDS)
        self._running = None
        log.info("%s stopped", self._name)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def state(self) -> str:
        """``not started``, ``running`` or ``stopped``."""
        return self._state

    @property
    def port(self) -> int:
        if self._running is None:
            raise RuntimeError(f"{self._name} is not running")
        return self._running[2]

    @property
    def origin(self) -> str:
        """``http://HOST:PORT``."""
        return f"http://{self._address[0]}:{self.port}"

    @property
    def open_connections(self) -> int:
        """Connections open on the server side now."""
        return 0 if self._running is None else len(self._running[0].server_state.connections)

    def wait_for_connections(self, count: int = 0, timeout: float = 5.0) -> bool:
        """Wait until at most ``count`` connections are open; False if that did not happen in ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.open_connections > count:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_SECONDS)
        return True

    def reset(self, scope: Scope) -> None:
        """Drop the connection ``scope`` came on with a TCP reset, as a crashed proxy would.

        Call it from the app (the server's loop); the app then sees ``http.disconnect`` on receive.
        """
        connections = self._running[0].server_state.connections if self._running else ()
        for connection in list(connections):
            # Every HTTP/1.1 protocol of uvicorn keeps its peer and transport under these names.
            transport: asyncio.Transport | None = getattr(connection, "transport", None)
            if transport is not None and getattr(connection, "client", None) == scope["client"]:
                sock = transport.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                transport.abort()
