"""The stand-in's HTTP replies: a model turn or an error as status, headers and body, shaped by scenarios."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from adapters.offline import render as bodies
from adapters.offline.scenarios import ScenarioSelection
from adapters.offline.turns import FunctionCallOut, ModelTurn, ReasoningOut, TextOut

__all__ = ["Dialect", "Fault", "Reply", "error_reply", "http_fault", "render"]

Dialect = Literal["openai", "litellm"]
Fault = Literal["stall", "reset"]
"""Body markers: ``stall`` stops sending but keeps the connection; ``reset`` drops it."""

_HEARTBEATS: Final = 5000
_HUGE_BYTES: Final = 5 * 1024 * 1024
_FAILURE: Final = "The offline model failed on purpose (scenario {})."
# The SDK retries 429 and 5xx; Retry-After: 0 alone makes it fall back to half-second backoff, while
# retry-after-ms (read first) keeps the fault suite's retries fast.
_FAST_RETRY: Final = (("retry-after", "0"), ("retry-after-ms", "10"))
# Request fields a Response echoes; reasoning and store are echoed too, with their own defaults.
_ECHOED: Final = ("instructions", "max_output_tokens", "metadata", "parallel_tool_calls",
                  "previous_response_id", "temperature", "text", "tool_choice", "tools", "top_p")  # fmt: skip
_HTTP_FAULTS: Final[Mapping[str, tuple[int, str, str, str]]] = {
    "http-400": (400, "invalid_request_error", "invalid_request", "The offline endpoint rejected the request "
                 "on purpose (scenario http-400)."),
    "http-401": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided (offline "
                 "scenario http-401)."),
    "http-429": (429, "requests", "rate_limit_exceeded", "Rate limit reached for the offline model (scenario "
                 "http-429); retry after 0 seconds."),
    "http-500": (500, "server_error", "server_error", "The offline endpoint had an internal error on purpose "
                 "(scenario http-500)."),
}  # fmt: skip
_STOPS: Final = ("truncated-stream", "connection-reset", "stall")
_FAILURES: Final = ("response-failed", "error-event", "error-event-nested")


@attrs.frozen
class Reply:
    """One HTTP answer: status, headers, and the body as pieces to write, with fault markers.

    A body without a Content-Length header (an event stream) goes out chunked; a cut JSON body
    keeps the full length, as a dropped connection would leave it.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: tuple[bytes | Fault, ...]


def error_reply(status: int, message: str, *, kind: str, code: str | None, param: str | None = None) -> Reply:
    """An OpenAI-shaped error body."""
    body = json.dumps({"error": {"message": message, "type": kind, "param": param, "code": code}}).encode()
    headers: tuple[tuple[str, str], ...] = (
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
    )
    if status == 429 or status >= 500:
        headers += _FAST_RETRY
    return Reply(status=status, headers=headers, body=(body,))


def http_fault(scenarios: ScenarioSelection) -> Reply | None:
    """The HTTP error reply a scenario asks for, before the model is consulted; None for none."""
    for name, (status, kind, code, message) in _HTTP_FAULTS.items():
        if name in scenarios:
            return error_reply(status, message, kind=kind, code=code)
    return None


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def _response_id(seed: str, litellm: bool) -> str:
    inner = "resp_" + _digest(seed)[:48]
    if not litellm:
        return inner
    # LiteLLM encodes its routing into the id: base64 of provider, model id and the upstream id.
    routing = f"litellm:custom_llm_provider:openai;model_id:{_digest('model', seed)};response_id:{inner};"
    routing += _digest("pad", seed) * 2
    return "resp_" + base64.b64encode(routing.encode()).decode()


def _output(turn: ModelTurn, response_id: str, litellm: bool) -> list[dict[str, Any]]:
    items = []
    for index, item in enumerate(turn.items):
        suffix = _digest(response_id, index)[:48]
        if isinstance(item, ReasoningOut):
            items.append(bodies.reasoning_item("rs_" + suffix, [item.summary], item.encrypted_content))
        elif isinstance(item, FunctionCallOut):
            items.append(bodies.call_item("fc_" + suffix, item.call_id, item.name, item.arguments))
        else:
            items.append(bodies.message_item("msg_" + suffix, item.text, litellm=litellm))
    return items


def _shrink(turn: ModelTurn) -> ModelTurn:
    """The partial output of an incomplete response: half the text, or the first half of the calls."""
    items = list(turn.items)
    last = items[-1]
    if isinstance(last, TextOut):
        words = last.text.split(" ")
        items[-1] = TextOut(" ".join(words[: max(1, len(words) // 2)]))
    else:
        calls = [item for item in items if isinstance(item, FunctionCallOut)]
        dropped = calls[max(1, len(calls) // 2) :]
        items = [item for item in items if item not in dropped]
    return attrs.evolve(turn, items=tuple(items))


def _first_turn(body: Mapping[str, Any]) -> bool:
    items = body.get("input")
    return not isinstance(items, list) or not any(
        isinstance(item, Mapping) and item.get("type") == "function_call" for item in items
    )


def _huge(turn: ModelTurn, body: Mapping[str, Any]) -> ModelTurn:
    """One call carries ~5 MB of valid JSON: the first call of a first tool-calling turn gets a
    padding key, and a plain answer without tools on offer gets an extra call; a pipeline's closing
    text turn is left alone so the run can finish."""
    padding = "x" * _HUGE_BYTES
    if turn.calls:
        if not _first_turn(body):
            return turn
        first = turn.calls[0]
        padded = attrs.evolve(
            first, arguments=json.dumps({**json.loads(first.arguments), "padding": padding})
        )
        return attrs.evolve(turn, items=tuple(padded if item is first else item for item in turn.items))
    if body.get("tools"):
        return turn
    call_id = "call_" + _digest("huge", body.get("input"))[:24]
    call = FunctionCallOut(call_id, "offline_payload", json.dumps({"padding": padding}))
    return attrs.evolve(turn, items=(*turn.items, call))


def _stream(document: dict[str, Any], scenarios: ScenarioSelection, litellm: bool) -> list[bytes | Fault]:
    events = bodies.stream_events(document, chunk=None, litellm=litellm)
    # Faults strike halfway through the events before the terminal one.
    cut = 2 + max(1, (len(events) - 3) // 2)
    stop = next((name for name in _STOPS if name in scenarios), None)
    failure = next((name for name in _FAILURES if name in scenarios), None)
    if failure is not None or stop is not None:
        events = events[:cut]
    error = {
        "type": "server_error",
        "code": "server_error",
        "message": _FAILURE.format(failure),
        "param": None,
    }
    tail: list[dict[str, Any]] = []
    if failure == "response-failed":
        done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
        failed = {
            "status": "failed",
            "output": done,
            "error": {key: error[key] for key in ("code", "message")},
        }
        tail = [{"type": "response.failed", "response": {**document, **failed, "incomplete_details": None}}]
    elif failure == "error-event":
        tail = [{**error, "type": "error"}]
    elif failure == "error-event-nested":
        tail = [{"type": "error", "error": error}]
    events += bodies.numbered(tail, model=document["model"], litellm=litellm, start=len(events))
    body: list[bytes | Fault] = [bodies.event_frame(event, litellm=litellm).encode() for event in events]
    if "garbage-data" in scenarios:
        body.insert(
            min(cut, len(body)), b'data: {"type": "response.output_text.delta", "delta": "unterminated\n\n'
        )
    if "unknown-events" in scenarios:
        body = _with_heartbeats(body, litellm)
    if stop == "connection-reset":
        body.append("reset")
    elif stop == "stall":
        body.append("stall")
    elif stop is None and litellm:
        body.append(b"data: [DONE]\n\n")
    return body


def _with_heartbeats(body: list[bytes | Fault], litellm: bool) -> list[bytes | Fault]:
    """Spread the heartbeats evenly after the first event, keeping the real events in order."""
    slots = max(1, len(body) - 1)
    mixed: list[bytes | Fault] = body[:1]
    beat = 0
    for position, piece in enumerate(body[1:], start=1):
        for _ in range(_HEARTBEATS * position // slots - beat):
            mixed.append(
                bodies.event_frame({"type": "x-offline.heartbeat", "beat": beat}, litellm=litellm).encode()
            )
            beat += 1
        mixed.append(piece)
    return mixed


def _json(document: dict[str, Any], scenarios: ScenarioSelection) -> tuple[list[bytes | Fault], int]:
    """The JSON document, cut or spoiled as the scenarios ask; returns the pieces and a Content-Length."""
    if any(name in scenarios for name in _FAILURES):
        error = {"code": "server_error", "message": _FAILURE.format("+".join(scenarios.names))}
        document = {**document, "status": "failed", "output": [], "error": error, "incomplete_details": None}
    data = json.dumps(document).encode()
    half = data[: len(data) // 2]
    if "garbage-data" in scenarios:
        spoiled = half + b"<<garbage: not JSON>>"
        return [spoiled], len(spoiled)
    if "truncated-stream" in scenarios:
        return [half], len(half)
    if "connection-reset" in scenarios:
        return [half, "reset"], len(data)
    if "stall" in scenarios:
        return [half, "stall"], len(data)
    return [data], len(data)


def render(
    turn: ModelTurn,
    *,
    body: Mapping[str, Any],
    scenarios: ScenarioSelection,
    dialect: Dialect,
    seed: str,
    created_at: int,
) -> Reply:
    """The reply for ``turn``: an event stream or a JSON Response, shaped by the scenarios.

    ``seed`` makes the response id unique per request; ``dialect`` is the server's default, which
    the ``litellm`` scenario overrides. A turn longer than the request's ``max_output_tokens`` ends
    incomplete, as a real model's would.
    """
    litellm = dialect == "litellm" or "litellm" in scenarios
    limit = body.get("max_output_tokens")
    over = isinstance(limit, int) and not isinstance(limit, bool) and turn.usage.output_tokens > limit
    incomplete = over or "incomplete" in scenarios
    if incomplete:
        turn = _shrink(turn)
    if "huge-arguments" in scenarios:
        turn = _huge(turn, body)
    response_id = _response_id(seed, litellm)
    echoed = {key: body[key] for key in _ECHOED if key in body}
    if body.get("reasoning"):
        echoed["reasoning"] = body["reasoning"]
    counts = turn.usage
    document = bodies.response_document(
        _output(turn, response_id, litellm),
        response_id=response_id,
        model=str(body.get("model", "")),
        created_at=created_at,
        status="incomplete" if incomplete else "completed",
        usage=bodies.usage(
            counts.input_tokens,
            counts.output_tokens,
            reasoning_tokens=counts.reasoning_tokens,
            litellm=litellm,
        ),
        incomplete_reason="max_output_tokens" if incomplete else None,
        store=bool(body.get("store", False)),
        **echoed,
    )
    streamed = bool(body.get("stream"))
    if (streamed and "json-for-sse" not in scenarios) or (not streamed and "sse-for-json" in scenarios):
        headers = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"))
        return Reply(status=200, headers=headers, body=tuple(_stream(document, scenarios, litellm)))
    pieces, length = _json(document, scenarios)
    headers = (("content-type", "application/json"), ("content-length", str(length)))
    return Reply(status=200, headers=headers, body=tuple(pieces))
