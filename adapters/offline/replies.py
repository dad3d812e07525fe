"""The stand-in's HTTP replies: the model's answer or an error as status, headers and body."""

from __future__ import annotations

import base64
import json
from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

import attrs

from adapters.offline.render import call_item, event_frame, numbered, response_document, stream_events
from adapters.offline.turns import Item, ModelRequest, digest, respond

__all__ = [
    "COST_HEADER",
    "INPUT_USD_PER_MILLION_TOKENS",
    "OUTPUT_USD_PER_MILLION_TOKENS",
    "Dialect",
    "Fault",
    "Reply",
    "answer",
    "error_reply",
    "response_cost",
]

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
_MARKERS: Final[Mapping[str, Fault]] = {"connection-reset": "reset", "stall": "stall"}
_FAILURES: Final = ("response-failed", "error-event", "error-event-nested")
_ID_PREFIXES: Final = {"message": "msg_", "function_call": "fc_", "reasoning": "rs_"}
_GARBAGE: Final = b'data: {"type": "response.output_text.delta", "delta": "unterminated\n\n'
_SSE: Final = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"))
COST_HEADER: Final = "x-litellm-response-cost"
# What the stand-in bills in its litellm dialect, as a LiteLLM proxy would for a small model.
INPUT_USD_PER_MILLION_TOKENS: Final = 0.15
OUTPUT_USD_PER_MILLION_TOKENS: Final = 0.60


@attrs.frozen
class Reply:
    """One HTTP answer: status, headers, and the body as pieces to write, with fault markers.

    A body without a Content-Length header (an event stream) goes out chunked; a cut JSON body
    keeps the full length, as a dropped connection would leave it.
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: tuple[bytes | Fault, ...]
    document: Mapping[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    """The Response a 200 carries, whole (what a stored response is kept as); None for an error."""


def error_reply(
    status: int,
    message: str,
    *,
    kind: str = "invalid_request_error",
    code: str | None,
    param: str | None = None,
) -> Reply:
    """An OpenAI-shaped error body."""
    body = json.dumps({"error": {"message": message, "type": kind, "param": param, "code": code}}).encode()
    headers: tuple[tuple[str, str], ...] = (
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
    )
    if status == 429 or status >= 500:
        headers += _FAST_RETRY
    return Reply(status, headers, (body,))


def _response_id(seed: str, litellm: bool) -> str:
    inner = "resp_" + digest(seed)[:48]
    if not litellm:
        return inner
    # LiteLLM encodes its routing into the id: base64 of provider, model id and the upstream id.
    routing = f"litellm:custom_llm_provider:openai;model_id:{digest('model', seed)};response_id:{inner};"
    routing += digest("pad", seed) * 2
    return "resp_" + base64.b64encode(routing.encode()).decode()


def _shrink(output: list[Item]) -> list[Item]:
    """The partial output of an incomplete response: half the text, or the first half of the calls."""
    if output[-1]["type"] == "message":
        part = output[-1]["content"][0]
        words = part["text"].split(" ")
        part["text"] = " ".join(words[: max(1, len(words) // 2)])
        return output
    calls = [item for item in output if item["type"] == "function_call"]
    dropped = calls[max(1, len(calls) // 2) :]
    return [item for item in output if item not in dropped]


def _huge(output: list[Item], request: ModelRequest, body: Mapping[str, Any]) -> list[Item]:
    """One call carries ~5 MB of valid JSON: the first call of a first tool-calling turn gets a
    padding key, and a plain answer without tools on offer gets an extra call; a pipeline's closing
    text turn is left alone so the run can finish."""
    padding = "x" * _HUGE_BYTES
    calls = [item for item in output if item["type"] == "function_call"]
    if calls and not request.calls:
        calls[0]["arguments"] = json.dumps({**json.loads(calls[0]["arguments"]), "padding": padding})
    elif not calls and not body.get("tools"):
        call_id = "call_" + digest("huge", body.get("input"))[:24]
        output.append(call_item("", call_id, "offline_payload", json.dumps({"padding": padding})))
    return output


def _stream(document: dict[str, Any], names: Collection[str], litellm: bool) -> list[bytes | Fault]:
    events = stream_events(document, chunk=None, litellm=litellm)
    # Faults strike halfway through the events before the terminal one.
    cut = 2 + max(1, (len(events) - 3) // 2)
    stop = next((name for name in _STOPS if name in names), None)
    failure = next((name for name in _FAILURES if name in names), None)
    if failure is not None or stop is not None:
        events = events[:cut]
    failed = {"code": "server_error", "message": _FAILURE.format(failure)}
    error = {"type": "server_error", **failed, "param": None}
    tail: list[dict[str, Any]] = []
    if failure == "response-failed":
        done = [event["item"] for event in events if event["type"] == "response.output_item.done"]
        response = {
            **document,
            "status": "failed",
            "output": done,
            "error": failed,
            "incomplete_details": None,
        }
        tail = [{"type": "response.failed", "response": response}]
    elif failure == "error-event":
        tail = [{**error, "type": "error"}]
    elif failure == "error-event-nested":
        tail = [{"type": "error", "error": error}]
    events += numbered(tail, model=document["model"], litellm=litellm, start=len(events))
    body: list[bytes | Fault] = [event_frame(event, litellm=litellm).encode() for event in events]
    if "garbage-data" in names:
        body.insert(min(cut, len(body)), _GARBAGE)
    if "unknown-events" in names:
        body = _with_heartbeats(body, litellm)
    if stop is not None and stop in _MARKERS:
        body.append(_MARKERS[stop])
    elif stop is None and litellm:
        body.append(b"data: [DONE]\n\n")
    return body


def _with_heartbeats(body: list[bytes | Fault], litellm: bool) -> list[bytes | Fault]:
    """Spread the heartbeats evenly after the first event, keeping the real events in order."""
    slots = max(1, len(body) - 1)
    mixed = body[:1]
    for position, piece in enumerate(body[1:], start=1):
        for beat in range(_HEARTBEATS * (position - 1) // slots, _HEARTBEATS * position // slots):
            mixed.append(event_frame({"type": "x-offline.heartbeat", "beat": beat}, litellm=litellm).encode())
        mixed.append(piece)
    return mixed


def _json(document: dict[str, Any], names: Collection[str]) -> tuple[list[bytes | Fault], int]:
    """The JSON document, cut or spoiled as the scenarios ask; returns the pieces and a Content-Length."""
    if any(name in names for name in _FAILURES):
        error = {"code": "server_error", "message": _FAILURE.format("+".join(names))}
        document = {**document, "status": "failed", "output": [], "error": error, "incomplete_details": None}
    data = json.dumps(document).encode()
    half = data[: len(data) // 2]
    if "garbage-data" in names:
        spoiled = half + b"<<garbage: not JSON>>"
        return [spoiled], len(spoiled)
    if "truncated-stream" in names:
        return [half], len(half)
    marker = next((marker for name, marker in _MARKERS.items() if name in names), None)
    return ([data], len(data)) if marker is None else ([half, marker], len(data))


def answer(
    body: Mapping[str, Any], names: Collection[str], *, dialect: Dialect, seed: str, created_at: int
) -> Reply:
    """The reply to ``body`` under the scenarios ``names``: an HTTP fault, an event stream or a JSON Response.

    Raises :class:`~adapters.offline.turns.RefusedError` for a body the API would refuse. ``seed``
    makes the response id unique per request; ``dialect`` is the server's default, which the
    ``litellm`` scenario overrides. An answer longer than the request's ``max_output_tokens`` ends
    incomplete, as a real model's would.
    """
    for name, (status, kind, code, message) in _HTTP_FAULTS.items():
        if name in names:
            return error_reply(status, message, kind=kind, code=code)
    request = ModelRequest.from_body(body)
    litellm = dialect == "litellm" or "litellm" in names
    output, usage = respond(
        request,
        malformed="malformed-arguments" in names,
        miscite="ungrounded-citation" in names,
        litellm=litellm,
    )
    output = _formatted(output, body.get("text"))
    limit = body.get("max_output_tokens")
    over = isinstance(limit, int) and not isinstance(limit, bool) and usage["output_tokens"] > limit
    incomplete = over or "incomplete" in names
    if incomplete:
        output = _shrink(output)
    if "huge-arguments" in names:
        output = _huge(output, request, body)
    response_id = _response_id(seed, litellm)
    for index, item in enumerate(output):
        item["id"] = _ID_PREFIXES[item["type"]] + digest(response_id, index)[:48]
    echoed = {key: body[key] for key in _ECHOED if key in body}
    if body.get("reasoning"):
        echoed["reasoning"] = body["reasoning"]
    document = response_document(
        output,
        response_id=response_id,
        model=str(body.get("model", "")),
        created_at=created_at,
        status="incomplete" if incomplete else "completed",
        usage=usage,
        incomplete_reason="max_output_tokens" if incomplete else None,
        store=bool(body.get("store", False)),
        **echoed,
    )
    # LiteLLM says what it billed in a response header; OpenAI itself says nothing of cost.
    billed = ((COST_HEADER, repr(response_cost(usage))),) if litellm else ()
    streamed = bool(body.get("stream"))
    if (streamed and "json-for-sse" not in names) or (not streamed and "sse-for-json" in names):
        return Reply(200, (*_SSE, *billed), tuple(_stream(document, names, litellm)), document)
    pieces, length = _json(document, names)
    json_headers = (("content-type", "application/json"), ("content-length", str(length)))
    return Reply(200, (*json_headers, *billed), tuple(pieces), document)


def _formatted(output: list[Any], text: object) -> list[Any]:
    """``output`` with its answer's text replaced by JSON fitting the request's ``text.format`` schema, as
    a model constrained by a strict schema answers; unchanged without one, or when the answer calls tools."""
    form = text.get("format") if isinstance(text, Mapping) else None
    if (
        not isinstance(form, Mapping)
        or form.get("type") != "json_schema"
        or not isinstance(form.get("schema"), Mapping)
    ):
        return output
    answer = json.dumps(schema_example(form["schema"]))
    for item in output:
        if item.get("type") == "message":
            item["content"] = [{**part, "text": answer} for part in item["content"][:1]]
    return output


def schema_example(schema: Mapping[str, Any]) -> object:
    """A plain value a JSON schema (the strict subset a typed answer sends) accepts: an enum's first value,
    the first non-null type, an array of one item, each property of an object."""
    if "enum" in schema:
        return next((value for value in schema["enum"] if value is not None), None)
    options = schema.get("anyOf")
    if isinstance(options, list) and options:
        useful = [option for option in options if option.get("type") != "null"]
        return schema_example(useful[0] if useful else options[0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: schema_example(value) for name, value in properties.items()}
    if kind == "array":
        items = schema.get("items")
        return [schema_example(items)] if isinstance(items, Mapping) else []
    return {"string": "offline", "integer": 0, "number": 0.0, "boolean": False}.get(str(kind))


def response_cost(usage: Mapping[str, Any]) -> float:
    """What the stand-in bills for a response with ``usage`` (its usage block), in US dollars."""
    input_tokens: int = usage["input_tokens"]
    output_tokens: int = usage["output_tokens"]
    return (
        input_tokens * INPUT_USD_PER_MILLION_TOKENS + output_tokens * OUTPUT_USD_PER_MILLION_TOKENS
    ) / 1_000_000
