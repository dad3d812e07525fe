"""Rendering a model turn as a Responses API reply: JSON or an event stream, either dialect, with faults."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from adapters.offline.model import FunctionCallOut, ModelTurn, OutputItem, ReasoningOut, TextOut
from adapters.offline.scenarios import ScenarioSelection

__all__ = ["Dialect", "Fault", "Reply", "error_reply", "http_fault", "render"]

Dialect = Literal["openai", "litellm"]
Fault = Literal["stall", "reset"]
"""Body markers: ``stall`` stops sending but keeps the socket; ``reset`` drops the connection."""

_HEARTBEATS: Final = 5000
_HUGE_BYTES: Final = 5 * 1024 * 1024
_FAILURE: Final = "The offline model failed on purpose (scenario {})."
# The SDK retries 429 and 5xx; Retry-After: 0 alone makes it fall back to half-second backoff, while
# retry-after-ms (read first) keeps the fault suite's retries fast.
_FAST_RETRY: Final = (("retry-after", "0"), ("retry-after-ms", "10"))
_ECHOED: Final = (
    "instructions",
    "max_output_tokens",
    "parallel_tool_calls",
    "previous_response_id",
    "temperature",
    "tool_choice",
    "tools",
    "top_p",
    "metadata",
    "text",
)
_DEFAULTS: Final[Mapping[str, Any]] = {
    "instructions": None,
    "max_output_tokens": None,
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "temperature": 1.0,
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "metadata": {},
    "text": {"format": {"type": "text"}},
}


@attrs.frozen
class Reply:
    """One HTTP answer: status, headers, and the body as pieces to write (with fault markers).

    ``chunked`` bodies go out with chunked transfer encoding (event streams); the others carry a
    Content-Length, which for a cut JSON body is still the full length, as a dropped connection
    would leave it.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: tuple[bytes | Fault, ...]
    chunked: bool = False


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


_HTTP_FAULTS: Final[Mapping[str, tuple[int, str, str]]] = {
    "http-400": (400, "invalid_request_error", "invalid_request"),
    "http-401": (401, "invalid_request_error", "invalid_api_key"),
    "http-429": (429, "requests", "rate_limit_exceeded"),
    "http-500": (500, "server_error", "server_error"),
}
_HTTP_MESSAGES: Final[Mapping[str, str]] = {
    "http-400": "The offline endpoint rejected the request on purpose (scenario http-400).",
    "http-401": "Incorrect API key provided (offline scenario http-401).",
    "http-429": "Rate limit reached for the offline model (scenario http-429); retry after 0 seconds.",
    "http-500": "The offline endpoint had an internal error on purpose (scenario http-500).",
}


def http_fault(scenarios: ScenarioSelection) -> Reply | None:
    """The HTTP error reply a scenario asks for, before the model is consulted; None for none."""
    for name, (status, kind, code) in _HTTP_FAULTS.items():
        if name in scenarios:
            return error_reply(status, _HTTP_MESSAGES[name], kind=kind, code=code)
    return None


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def _response_id(seed: str, dialect: Dialect) -> str:
    inner = "resp_" + _digest(seed)[:48]
    if dialect == "openai":
        return inner
    # LiteLLM encodes its routing into the id: base64 of provider, model id and the upstream id.
    routing = f"litellm:custom_llm_provider:openai;model_id:{_digest('model', seed)};response_id:{inner};"
    routing += _digest("pad", seed) * 2
    return "resp_" + base64.b64encode(routing.encode()).decode()


def _usage(turn: ModelTurn, dialect: Dialect) -> dict[str, Any]:
    usage = turn.usage
    if dialect == "litellm":
        return {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _item(item: OutputItem, item_id: str, dialect: Dialect, *, done: bool = True) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if isinstance(item, ReasoningOut):
        summary = [{"type": "summary_text", "text": item.summary}] if done else []
        return {
            "id": item_id,
            "type": "reasoning",
            "summary": summary,
            "encrypted_content": item.encrypted_content,
        }
    if isinstance(item, FunctionCallOut):
        return {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments if done else "",
        }
    content = [_text_part(item.text, dialect)] if done else []
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


def _text_part(text: str, dialect: Dialect) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "output_text", "text": text, "annotations": []}
    if dialect == "openai":
        part["logprobs"] = []
    return part


def _item_id(response_id: str, index: int, item: OutputItem) -> str:
    prefix = {ReasoningOut: "rs_", FunctionCallOut: "fc_", TextOut: "msg_"}[type(item)]
    return prefix + _digest(response_id, index)[:48]


def _pieces(text: str, size: int | None = None) -> list[str]:
    """Text deltas: word by word, or fixed-size slices for argument strings."""
    if size is not None:
        return [text[at : at + size] for at in range(0, len(text), size)] or [""]
    return re.findall(r"\s*\S+|\s+$", text) or [""]


def _argument_size(arguments: str) -> int:
    return 24 if len(arguments) < 4096 else 65536


def _item_events(index: int, item: OutputItem, item_id: str, dialect: Dialect) -> list[dict[str, Any]]:
    where = {"item_id": item_id, "output_index": index}
    events: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": _item(item, item_id, dialect, done=False),
        }
    ]
    if isinstance(item, ReasoningOut):
        part = {"type": "summary_text", "text": item.summary}
        events.append({"type": "response.reasoning_summary_part.added", **where, "summary_index": 0,
                       "part": {"type": "summary_text", "text": ""}})  # fmt: skip
        events.extend(
            {"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0, "delta": delta}
            for delta in _pieces(item.summary)
        )
        events.append({"type": "response.reasoning_summary_text.done", **where, "summary_index": 0,
                       "text": item.summary})  # fmt: skip
        events.append(
            {"type": "response.reasoning_summary_part.done", **where, "summary_index": 0, "part": part}
        )
    elif isinstance(item, FunctionCallOut):
        events.extend(
            {"type": "response.function_call_arguments.delta", **where, "delta": delta}
            for delta in _pieces(item.arguments, _argument_size(item.arguments))
        )
        events.append({"type": "response.function_call_arguments.done", **where, "arguments": item.arguments})
    else:
        at = {**where, "content_index": 0}
        events.append({"type": "response.content_part.added", **at, "part": _text_part("", dialect)})
        for delta in _pieces(item.text):
            event = {"type": "response.output_text.delta", **at, "delta": delta}
            if dialect == "openai":
                event["logprobs"] = []
            events.append(event)
        done = {"type": "response.output_text.done", **at, "text": item.text}
        if dialect == "openai":
            done["logprobs"] = []
        events.append(done)
        events.append({"type": "response.content_part.done", **at, "part": _text_part(item.text, dialect)})
    events.append(
        {"type": "response.output_item.done", "output_index": index, "item": _item(item, item_id, dialect)}
    )
    return events


@attrs.frozen
class _Context:
    body: Mapping[str, Any]
    model: str
    response_id: str
    created_at: int
    dialect: Dialect
    turn: ModelTurn

    def response(self, status: str, items: Sequence[OutputItem], **extra: Any) -> dict[str, Any]:
        response: dict[str, Any] = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.model,
            "output": [
                _item(item, _item_id(self.response_id, self.turn.items.index(item), item), self.dialect)
                for item in items
            ],
            "reasoning": self.body.get("reasoning") or {"effort": None, "summary": None},
            "store": bool(self.body.get("store", False)),
            "truncation": "disabled",
            "usage": _usage(self.turn, self.dialect) if status != "in_progress" else None,
            "user": None,
        }
        for key in _ECHOED:
            response[key] = self.body.get(key, _DEFAULTS[key])
        response.update(extra)
        return response


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


def _huge(turn: ModelTurn, body: Mapping[str, Any]) -> ModelTurn:
    """One call carries ~5 MB of valid JSON: the first call of a first tool-calling turn gets a
    padding key, and a plain answer without tools on offer gets an extra call; a pipeline's closing
    text turn is left alone so the run can finish."""
    padding = "x" * _HUGE_BYTES
    items = list(turn.items)
    if turn.calls:
        if not _first_turn(body):
            return turn
        at = items.index(turn.calls[0])
        arguments = json.loads(turn.calls[0].arguments)
        arguments["padding"] = padding
        items[at] = attrs.evolve(turn.calls[0], arguments=json.dumps(arguments))
        return attrs.evolve(turn, items=tuple(items))
    if body.get("tools"):
        return turn
    call = FunctionCallOut("call_" + _digest("huge", body.get("input"))[:24], "offline_payload", "")
    call = attrs.evolve(call, arguments=json.dumps({"padding": padding}))
    return attrs.evolve(turn, items=(*items, call))


def _event_bytes(event: Mapping[str, Any], dialect: Dialect) -> bytes:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    if dialect == "litellm":
        return f"data: {data}\n\n".encode()
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def _stream(ctx: _Context, scenarios: ScenarioSelection) -> list[bytes | Fault]:
    dialect = ctx.dialect
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": ctx.response("in_progress", ())},
        {"type": "response.in_progress", "response": ctx.response("in_progress", ())},
    ]
    finished: list[int] = []  # event index after which each item is complete
    for index, item in enumerate(ctx.turn.items):
        events.extend(_item_events(index, item, _item_id(ctx.response_id, index, item), dialect))
        finished.append(len(events))
    cut = 2 + max(1, (len(events) - 2) // 2)
    done_by_cut = [item for item, end in zip(ctx.turn.items, finished, strict=True) if end <= cut]
    tail: list[dict[str, Any]] = []
    stop = next(
        (name for name in ("truncated-stream", "connection-reset", "stall") if name in scenarios), None
    )
    failure = next(
        (name for name in ("response-failed", "error-event", "error-event-nested") if name in scenarios), None
    )
    if failure == "response-failed":
        error = {"code": "server_error", "message": _FAILURE.format("response-failed")}
        tail = [{"type": "response.failed", "response": ctx.response("failed", done_by_cut, error=error)}]
    elif failure == "error-event":
        tail = [{"type": "error", "code": "server_error", "message": _FAILURE.format(failure), "param": None}]
    elif failure == "error-event-nested":
        nested: dict[str, Any] = {
            "type": "server_error",
            "code": "server_error",
            "message": _FAILURE.format(failure),
            "param": None,
        }
        tail = [{"type": "error", "error": nested}]
    if failure is not None or stop is not None:
        events = events[:cut] + tail
    elif "incomplete" in scenarios:
        details = {"reason": "max_output_tokens"}
        events.append(
            {
                "type": "response.incomplete",
                "response": ctx.response("incomplete", ctx.turn.items, incomplete_details=details),
            }
        )
    else:
        events.append({"type": "response.completed", "response": ctx.response("completed", ctx.turn.items)})
    for number, event in enumerate(events):
        if event["type"] != "error" or "error" not in event:
            event["sequence_number"] = number
        if dialect == "litellm":
            event["model"] = ctx.model
    body: list[bytes | Fault] = [_event_bytes(event, dialect) for event in events]
    if "garbage-data" in scenarios:
        body.insert(
            min(cut, len(body)), b'data: {"type": "response.output_text.delta", "delta": "unterminated\n\n'
        )
    if "unknown-events" in scenarios:
        body = _with_heartbeats(body, dialect)
    if stop == "connection-reset":
        body.append("reset")
    elif stop == "stall":
        body.append("stall")
    elif stop is None and dialect == "litellm":
        body.append(b"data: [DONE]\n\n")
    return body


def _with_heartbeats(body: list[bytes | Fault], dialect: Dialect) -> list[bytes | Fault]:
    """Spread the heartbeats evenly after the first event, keeping the real events in order."""
    slots = max(1, len(body) - 1)
    mixed: list[bytes | Fault] = body[:1]
    beat = 0
    for position, piece in enumerate(body[1:], start=1):
        share = _HEARTBEATS * position // slots - beat
        for _ in range(share):
            mixed.append(_event_bytes({"type": "x-offline.heartbeat", "beat": beat}, dialect))
            beat += 1
        mixed.append(piece)
    return mixed


def _json_body(ctx: _Context, scenarios: ScenarioSelection) -> tuple[list[bytes | Fault], int]:
    """The JSON document, cut or spoiled as the scenarios ask; returns the pieces and a Content-Length."""
    if "response-failed" in scenarios or "error-event" in scenarios or "error-event-nested" in scenarios:
        error = {"code": "server_error", "message": _FAILURE.format("+".join(scenarios.names))}
        document = ctx.response("failed", (), error=error)
    elif "incomplete" in scenarios:
        document = ctx.response(
            "incomplete", ctx.turn.items, incomplete_details={"reason": "max_output_tokens"}
        )
    else:
        document = ctx.response("completed", ctx.turn.items)
    if ctx.dialect == "litellm":
        document["model"] = ctx.model
    data = json.dumps(document, ensure_ascii=False).encode()
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
    """The reply for ``turn``: an HTTP fault, an event stream or a JSON Response, per the scenarios.

    ``seed`` makes the response id unique per request; ``dialect`` is the server's default, which
    the ``litellm`` scenario overrides. A turn longer than the request's ``max_output_tokens`` ends
    incomplete, as a real model's would.
    """
    fault = http_fault(scenarios)
    if fault is not None:
        return fault
    if "litellm" in scenarios:
        dialect = "litellm"
    limit = body.get("max_output_tokens")
    over = isinstance(limit, int) and not isinstance(limit, bool) and turn.usage.output_tokens > limit
    if over and "incomplete" not in scenarios:
        scenarios = attrs.evolve(
            scenarios, tokens=(*scenarios.tokens, "incomplete"), names=(*scenarios.names, "incomplete")
        )
    if "incomplete" in scenarios:
        turn = _shrink(turn)
    if "huge-arguments" in scenarios:
        turn = _huge(turn, body)
    model = str(body.get("model", ""))
    ctx = _Context(body, model, _response_id(seed, dialect), created_at, dialect, turn)
    streamed = bool(body.get("stream"))
    if (streamed and "json-for-sse" not in scenarios) or (not streamed and "sse-for-json" in scenarios):
        headers = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"))
        return Reply(status=200, headers=headers, body=tuple(_stream(ctx, scenarios)), chunked=True)
    pieces, length = _json_body(ctx, scenarios)
    headers = (("content-type", "application/json"), ("content-length", str(length)))
    return Reply(status=200, headers=headers, body=tuple(pieces))


def _first_turn(body: Mapping[str, Any]) -> bool:
    items = body.get("input")
    return not isinstance(items, list) or not any(
        isinstance(item, Mapping) and item.get("type") == "function_call" for item in items
    )
