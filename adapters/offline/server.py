"""A real HTTP server on 127.0.0.1 serving POST /v1/responses from the offline model, in a thread."""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import reprlib
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from adapters.offline.replies import Dialect, Reply, answer, error_reply
from adapters.offline.scenarios import OFFLINE_MODEL, Scenario, UnknownScenarioError, parse_model
from adapters.offline.threaded import Receive, Request, Scope, Send, ThreadedServer, read_request
from adapters.offline.turns import RefusedError

__all__ = ["OfflineResponsesServer", "RecordedRequest"]

log = logging.getLogger(__name__)

_SECRET_HEADERS: Final = frozenset({"authorization", "api-key", "x-api-key", "proxy-authorization"})
# Event streams go out in writes of up to this size rather than one per event (5,000 heartbeats).
_FLUSH_AT: Final = 64 * 1024
# A stalled reply ends when its client leaves or the server stops, and after this at the latest.
_STALL_SECONDS: Final = 300.0
# Stored responses kept for previous_response_id, the oldest dropped first past this many.
_STORED_RESPONSES: Final = 1_000


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


def _json_body(request: Request) -> Any:
    """The JSON body of a ``POST /v1/responses``; raises RefusedError for any other request."""
    url = request.path.split("?", 1)[0]
    if url.rstrip("/") != "/v1/responses":
        message = f"Unknown request URL: {request.method} {url}. This offline endpoint serves /v1/responses."
        raise RefusedError(message, status=404, code="unknown_url")
    if request.method != "POST":
        message = f"Method {request.method} is not allowed on /v1/responses; use POST."
        raise RefusedError(message, status=405, code="method_not_allowed")
    try:
        return json.loads(request.body)
    except (ValueError, RecursionError) as exc:
        # RecursionError: nesting deeper than the parser goes; broken JSON all the same.
        raise RefusedError("We could not parse the JSON body of your request.") from exc


def _input_items(value: object) -> list[Any]:
    """A request's ``input`` as items: a bare string is one user message."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return list(value) if isinstance(value, list) else []


class OfflineResponsesServer(ThreadedServer):
    """The built-in offline stand-in for a LiteLLM gateway's ``POST /v1/responses``.

    A real HTTP server (uvicorn) on an ephemeral loopback port, run in a daemon thread with its own
    event loop; usable from sync code and from inside a running asyncio loop. ``start()`` returns
    once the socket listens. ``stop()`` closes every open connection (a stalled one too), joins the
    thread, and may be called more than once. The model answers deterministically; the model name
    selects fault scenarios (see :data:`adapters.offline.SCENARIOS`). A response asked with
    ``store: true`` is kept (the last thousand), so a request may continue it with
    ``previous_response_id``; an id it does not hold is a 400 ``previous_response_not_found``.
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
        self._counts: collections.Counter[str] = collections.Counter()
        # Each stored response's conversation: its input (a chain's included) and its output items.
        self._stored: collections.OrderedDict[str, list[Any]] = collections.OrderedDict()

    def __repr__(self) -> str:
        where = self.base_url if self.state == "running" else self.state
        return f"OfflineResponsesServer({where}, dialect={self._dialect!r})"

    @property
    def dialect(self) -> Dialect:
        """The server's stream dialect (``openai`` or ``litellm``); only ``litellm`` reports a cost."""
        return self._dialect

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
            body = _json_body(request)
            model = body.get("model") if isinstance(body, dict) else None
            if not isinstance(model, str) or not model:
                message = "Missing required parameter: 'model'."
                raise RefusedError(message, code="missing_required_parameter", param="model")
            if model.startswith(OFFLINE_MODEL + ":"):
                scenario = model.partition(":")[2]
            applied = self._active(parse_model(model))
            asked = self._chained(body)
            reply = answer(
                asked, applied, dialect=self._dialect, seed=request_id, created_at=int(time.time())
            )
            self._store(asked, reply)
        except UnknownScenarioError as exc:
            reply = error_reply(400, str(exc), code="unknown_scenario", param="model")
        except RefusedError as exc:
            reply = error_reply(exc.status, str(exc), code=exc.code, param=exc.param)
        record = RecordedRequest(
            request.method, request.path, request.headers, body, scenario, applied, request_id, reply.status
        )
        with self._lock:
            self._requests.append(record)
        return reply

    def _chained(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with the stored conversation its ``previous_response_id`` names before its own input,
        as the Responses API reads a chained request; RefusedError (400) for an id it does not hold."""
        previous = body.get("previous_response_id")
        if previous is None:
            return body
        with self._lock:
            history = self._stored.get(previous) if isinstance(previous, str) else None
        if history is None:
            message = f"Previous response with id '{previous}' not found."
            raise RefusedError(message, code="previous_response_not_found", param="previous_response_id")
        chained = {key: value for key, value in body.items() if key != "previous_response_id"}
        chained["input"] = [*history, *_input_items(body.get("input"))]
        return chained

    def _store(self, body: Mapping[str, Any], reply: Reply) -> None:
        """Keep the conversation of a response asked with ``store: true``, for a later chained request."""
        document = reply.document
        if document is None or body.get("store") is not True:
            return
        with self._lock:
            self._stored[str(document["id"])] = [*_input_items(body.get("input")), *document["output"]]
            while len(self._stored) > _STORED_RESPONSES:
                self._stored.popitem(last=False)

    def _active(self, scenarios: Sequence[Scenario]) -> tuple[str, ...]:
        """The names of the scenarios that apply to this request: each ``name*N`` to N requests only."""
        with self._lock:
            self._counts.update(scenario.token for scenario in scenarios if scenario.times is not None)
            return tuple(
                scenario.name
                for scenario in scenarios
                if scenario.times is None or self._counts[scenario.token] <= scenario.times
            )
