"""A real HTTP server on 127.0.0.1 serving POST /v1/responses from the offline model, in a thread."""

from __future__ import annotations

import asyncio
import json
import logging
import reprlib
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any, Final, Literal, Self

import attrs

from adapters.offline.replies import Dialect, Reply, error_reply, http_fault, render
from adapters.offline.scenarios import OFFLINE_MODEL, ScenarioSelection, UnknownScenarioError, parse_model
from adapters.offline.threaded import Receive, Request, Scope, Send, ThreadedServer, read_request
from adapters.offline.turns import BadRequestError, ModelRequest, respond

__all__ = ["OfflineResponsesServer", "RecordedRequest"]

log = logging.getLogger(__name__)

_SECRET_HEADERS: Final = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})
# Event streams go out in writes of up to this size rather than one per event (5,000 heartbeats).
_FLUSH_AT: Final = 64 * 1024
# A stalled reply ends when its client leaves or the server stops, and after this at the latest.
_STALL_SECONDS: Final = 300.0


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


class OfflineResponsesServer(ThreadedServer):
    """The built-in offline stand-in for a LiteLLM gateway's ``POST /v1/responses``.

    A real HTTP server (uvicorn) on an ephemeral loopback port, run in a daemon thread with its own
    event loop; usable from sync code and from inside a running asyncio loop. ``start()`` returns
    once the socket listens. ``stop()`` closes every open connection (a stalled one too), joins the
    thread, and may be called more than once. The model answers deterministically; the model name
    selects fault scenarios (see :data:`adapters.offline.SCENARIOS`).
    """

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, dialect: Literal["openai", "litellm"] = "openai"
    ) -> None:
        if dialect not in ("openai", "litellm"):
            raise ValueError(f"dialect must be 'openai' or 'litellm', not {dialect!r}")
        super().__init__(self._serve, name="offline-responses", host=host, port=port)
        self._dialect: Dialect = dialect
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._transient_counts: dict[str, int] = {}

    def start(self) -> Self:
        super().start()
        log.info("offline Responses endpoint listening on %s", self.base_url)
        return self

    def stop(self) -> None:
        if self.state == "running":
            super().stop()
            log.info("offline Responses endpoint stopped")

    def __repr__(self) -> str:
        where = self.base_url if self.state == "running" else self.state
        return f"OfflineResponsesServer({where}, dialect={self._dialect!r})"

    @property
    def base_url(self) -> str:
        """The OpenAI SDK's ``base_url``: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.origin}/v1"

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request answered so far, oldest first (a snapshot)."""
        with self._lock:
            return tuple(self._requests)

    # ---------------------------------------------------------------- on the server's loop

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await read_request(scope, receive)
        request_id = "req_" + uuid.uuid4().hex
        reply = self._answer(request, request_id)
        log.debug(
            "offline endpoint: %s %s -> %d (%s)", request.method, request.path, reply.status, request_id
        )
        headers = [
            (name.encode(), value.encode()) for name, value in (*reply.headers, ("x-request-id", request_id))
        ]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        pending = bytearray()
        for piece in reply.body:
            if isinstance(piece, bytes):
                pending += piece
                if len(pending) >= _FLUSH_AT:
                    await send({"type": "http.response.body", "body": bytes(pending), "more_body": True})
                    pending.clear()
                continue
            await send({"type": "http.response.body", "body": bytes(pending), "more_body": True})
            await self._break_off(scope, receive, stall=piece == "stall")
            return
        await send({"type": "http.response.body", "body": bytes(pending)})

    async def _break_off(self, scope: Scope, receive: Receive, *, stall: bool) -> None:
        """Reset the connection mid-body; for a stall, only once the client left or the server stops."""
        left = asyncio.ensure_future(receive())
        if stall:
            stopping = asyncio.ensure_future(self.stopping.wait())
            await asyncio.wait((left, stopping), timeout=_STALL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
        self.reset(scope)
        # uvicorn reports a reply that ends unfinished unless the disconnect was seen first.
        await left

    def _answer(self, request: Request, request_id: str) -> Reply:
        body: Any = None
        scenario = ""
        applied: tuple[str, ...] = ()
        try:
            reply, body, scenario, applied = self._reply(request, request_id)
        except BadRequestError as exc:
            reply = error_reply(400, exc.message, kind="invalid_request_error", code=None, param=exc.param)
        record = RecordedRequest(
            request.method, request.path, request.headers, body, scenario, applied, request_id, reply.status
        )
        with self._lock:
            self._requests.append(record)
        return reply

    def _reply(self, request: Request, request_id: str) -> tuple[Reply, Any, str, tuple[str, ...]]:
        method, url = request.method, request.path.split("?", 1)[0]
        if url.rstrip("/") != "/v1/responses":
            message = f"Unknown request URL: {method} {url}. This offline endpoint serves /v1/responses."
            return error_reply(404, message, kind="invalid_request_error", code="unknown_url"), None, "", ()
        if method != "POST":
            message = f"Method {method} is not allowed on /v1/responses; use POST."
            reply = error_reply(405, message, kind="invalid_request_error", code="method_not_allowed")
            return reply, None, "", ()
        try:
            body = json.loads(request.body)
        except ValueError as exc:
            raise BadRequestError("We could not parse the JSON body of your request.") from exc
        model = body.get("model") if isinstance(body, dict) else None
        if not isinstance(model, str) or not model:
            message = "Missing required parameter: 'model'."
            reply = error_reply(
                400, message, kind="invalid_request_error", code="missing_required_parameter", param="model"
            )
            return reply, body, "", ()
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
        request_body = ModelRequest.from_body(body)
        turn = respond(request_body, malformed="malformed-arguments" in scenarios)
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
