"""A real HTTP server on 127.0.0.1 serving POST /v1/responses from the offline model, in a thread."""

from __future__ import annotations

import json
import logging
import reprlib
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn
from types import TracebackType
from typing import Any, Final, Literal, Self

import attrs

from adapters.offline.model import BadRequestError, ModelRequest, respond
from adapters.offline.render import Dialect, Reply, error_reply, http_fault, render
from adapters.offline.scenarios import OFFLINE_MODEL, ScenarioSelection, UnknownScenarioError, parse_model

__all__ = ["OfflineResponsesServer", "RecordedRequest"]

log = logging.getLogger(__name__)

_SECRET_HEADERS: Final = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})
_FLUSH_AT: Final = 64 * 1024
_JOIN_TIMEOUT: Final = 5.0


def _redacted(headers: Mapping[str, str]) -> str:
    return repr({key: "<redacted>" if key in _SECRET_HEADERS else value for key, value in headers.items()})


@attrs.frozen
class RecordedRequest:
    """One request as the server saw it. The repr hides credentials and shortens the body."""

    method: str
    path: str
    headers: Mapping[str, str] = attrs.field(repr=_redacted)
    """Header names lower-cased; values as sent (credentials included, for tests that check them)."""
    body: Any = attrs.field(repr=reprlib.repr)
    """The parsed JSON body, or None when it was not JSON."""
    scenario: str
    """The scenarios as the model name wrote them after ``offline:`` ("" for none)."""
    applied: tuple[str, ...]
    """The scenario names that took effect (transient ones drop out once used up)."""
    request_id: str
    status: int


class _HTTPServer(ThreadingMixIn, HTTPServer):
    owner: OfflineResponsesServer
    allow_reuse_address = True
    # The load suite opens a couple of hundred connections at once; the default backlog of 5 would
    # make most of them wait for SYN retransmits.
    request_queue_size = 512

    def process_request(self, request: Any, client_address: Any) -> None:
        # ThreadingMixIn's daemon threads are not joined on close; these are tracked and joined in stop().
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"offline-responses-{client_address[1]}",
            daemon=True,
        )
        self.owner._opened(request, thread)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        self.owner._closed(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-body is routine here (faults, timeouts); no traceback on stderr.
        log.debug("offline endpoint: connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "offline-responses/1.0"
    # Headers and body go out in separate writes; with Nagle's algorithm the second waits for the
    # client's delayed ACK, some 40 ms per response.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("offline endpoint: " + format, *args)

    def do_POST(self) -> None:
        request_id = "req_" + uuid.uuid4().hex
        raw = self._read_body()
        headers = {key.lower(): value for key, value in self.headers.items()}
        reply = self.server.owner._answer(self.command, self.path, headers, raw, request_id)
        self._send(reply, request_id)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            chunks = []
            while size := int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            # Without a usable length the next request on this connection cannot be found.
            self.close_connection = True
            return b""
        return self.rfile.read(length)

    def do_GET(self) -> None:
        request_id = "req_" + uuid.uuid4().hex
        headers = {key.lower(): value for key, value in self.headers.items()}
        reply = self.server.owner._answer(self.command, self.path, headers, b"", request_id)
        self._send(reply, request_id)

    def _send(self, reply: Reply, request_id: str) -> None:
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        self.send_header("x-request-id", request_id)
        if reply.chunked:
            self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        pending = bytearray()
        for piece in reply.body:
            if piece == "reset":
                self.wfile.write(pending)
                self._reset()
                return
            if piece == "stall":
                self.wfile.write(pending)
                self._stall()
                return
            if reply.chunked and piece:
                pending += b"%x\r\n%s\r\n" % (len(piece), piece)
            elif not reply.chunked:
                pending += piece
            if len(pending) >= _FLUSH_AT:
                self.wfile.write(pending)
                pending.clear()
        if reply.chunked:
            pending += b"0\r\n\r\n"
        self.wfile.write(pending)

    def _reset(self) -> None:
        """Drop the connection with a TCP reset, as a crashed proxy would."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()  # the makefile reference would otherwise keep the socket open
        self.connection.close()

    def _stall(self) -> None:
        """Send nothing more until the client hangs up or the server stops."""
        self.close_connection = True
        stopping = self.server.owner._stopping
        while not stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], 0.25)
            if readable and not self.connection.recv(65536):
                return


class OfflineResponsesServer:
    """The built-in offline stand-in for a LiteLLM gateway's ``POST /v1/responses``.

    A real HTTP/1.1 server on an ephemeral loopback port, run in a daemon thread; usable from sync
    code and from inside a running asyncio loop (nothing blocks on the loop). ``start()`` returns
    once the socket listens. ``stop()`` closes every open connection, joins every thread, and may be
    called more than once. The model answers deterministically; the model name selects fault
    scenarios (see :data:`adapters.offline.SCENARIOS`).
    """

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, dialect: Literal["openai", "litellm"] = "openai"
    ) -> None:
        if dialect not in ("openai", "litellm"):
            raise ValueError(f"dialect must be 'openai' or 'litellm', not {dialect!r}")
        self._host = host
        self._port = port
        self._dialect: Dialect = dialect
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._connections: dict[Any, threading.Thread] = {}
        self._requests: list[RecordedRequest] = []
        self._transient_counts: dict[str, int] = {}
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._handlers: list[threading.Thread] = []

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        """Bind, listen and serve in a background thread; returns once connections are accepted."""
        with self._lock:
            if self._server is not None:
                return self
            if self._stopping.is_set():
                raise RuntimeError("an offline server cannot be restarted once stopped; make a new one")
            server = _HTTPServer((self._host, self._port), _Handler)  # binds and listens
            server.owner = self
            self._server = server
            self._thread = threading.Thread(
                target=server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="offline-responses",
                daemon=True,
            )
            self._thread.start()
        log.info("offline Responses endpoint listening on %s", self.base_url)
        return self

    def stop(self) -> None:
        """Stop serving, close every connection (a stalled one too), and join every thread."""
        with self._lock:
            server, thread = self._server, self._thread
            if server is None or thread is None:
                return
            self._stopping.set()
        server.shutdown()
        with self._lock:
            sockets = list(self._connections)
            handlers = list(self._handlers)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                log.debug("offline endpoint: a connection was already closed")
        for handler in handlers:
            handler.join(_JOIN_TIMEOUT)
            if handler.is_alive():
                log.warning("offline endpoint: %s did not finish within %.0f s", handler.name, _JOIN_TIMEOUT)
        server.server_close()
        thread.join(_JOIN_TIMEOUT)
        with self._lock:
            self._server = None
            self._handlers.clear()
        log.info("offline Responses endpoint stopped")

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = (
            self.base_url
            if self._server is not None
            else "stopped"
            if self._stopping.is_set()
            else "not started"
        )
        return f"OfflineResponsesServer({where}, dialect={self._dialect!r})"

    # ---------------------------------------------------------------- what tests look at

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the offline server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI SDK's ``base_url``: ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self._host}:{self.port}/v1"

    @property
    def model(self) -> str:
        return OFFLINE_MODEL

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request answered so far, oldest first (a snapshot)."""
        with self._lock:
            return tuple(self._requests)

    @property
    def open_connections(self) -> int:
        """Connections currently open on the server side."""
        with self._lock:
            return len(self._connections)

    def wait_for_connections(self, count: int = 0, timeout: float = 5.0) -> bool:
        """Wait until at most ``count`` connections are open; False if that did not happen in ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._connections) > count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True

    # ---------------------------------------------------------------- called from handler threads

    def _opened(self, sock: Any, thread: threading.Thread) -> None:
        with self._changed:
            self._connections[sock] = thread
            self._handlers = [handler for handler in self._handlers if handler.is_alive()]
            self._handlers.append(thread)
            self._changed.notify_all()

    def _closed(self, sock: Any) -> None:
        with self._changed:
            self._connections.pop(sock, None)
            self._changed.notify_all()

    def _answer(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes, request_id: str
    ) -> Reply:
        body: Any = None
        scenario = ""
        applied: tuple[str, ...] = ()
        try:
            reply, body, scenario, applied = self._reply(method, path, raw, request_id)
        except BadRequestError as exc:
            reply = error_reply(400, exc.message, kind="invalid_request_error", code=None, param=exc.param)
        record = RecordedRequest(
            method, path, dict(headers), body, scenario, applied, request_id, reply.status
        )
        with self._lock:
            self._requests.append(record)
        return reply

    def _reply(
        self, method: str, path: str, raw: bytes, request_id: str
    ) -> tuple[Reply, Any, str, tuple[str, ...]]:
        if path.split("?", 1)[0].rstrip("/") != "/v1/responses":
            url = path.split("?", 1)[0]
            message = f"Unknown request URL: {method} {url}. This offline endpoint serves /v1/responses."
            return error_reply(404, message, kind="invalid_request_error", code="unknown_url"), None, "", ()
        if method != "POST":
            message = f"Method {method} is not allowed on /v1/responses; use POST."
            return (
                error_reply(405, message, kind="invalid_request_error", code="method_not_allowed"),
                None,
                "",
                (),
            )
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise BadRequestError("We could not parse the JSON body of your request.") from exc
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str) or not model:
            return (
                error_reply(
                    400,
                    "Missing required parameter: 'model'.",
                    kind="invalid_request_error",
                    code="missing_required_parameter",
                    param="model",
                ),
                body,
                "",
                (),
            )
        scenario = model.partition(":")[2] if model.startswith(OFFLINE_MODEL + ":") else ""
        try:
            scenarios = self._active(parse_model(model))
        except UnknownScenarioError as exc:
            reply = error_reply(
                400, str(exc), kind="invalid_request_error", code="unknown_scenario", param="model"
            )
            return reply, body, scenario, ()
        fault = http_fault(scenarios)
        if fault is not None:
            return fault, body, scenario, scenarios.names
        request = ModelRequest.from_body(body)
        turn = respond(request, malformed="malformed-arguments" in scenarios)
        reply = render(
            turn,
            body=body,
            scenarios=scenarios,
            dialect=self._dialect,
            seed=request_id,
            created_at=int(time.time()),
        )
        return reply, body, scenario, scenarios.names

    def _active(self, scenarios: ScenarioSelection) -> ScenarioSelection:
        """Count this request against each transient scenario and drop the ones used up."""
        used_up = set()
        with self._lock:
            for token, times in scenarios.transient.items():
                self._transient_counts[token] = self._transient_counts.get(token, 0) + 1
                if self._transient_counts[token] > times:
                    used_up.add(token)
        return scenarios.without_tokens(frozenset(used_up))
