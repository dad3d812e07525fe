"""Fake servers on 127.0.0.1: :class:`FakeServer` serves one route and records every request it gets.

Each route decides its answer from the request alone (the model name, the conversation), so a test
knows what must come back:

- :func:`echo_route`: a hostile gateway that echoes the caller's API key back; for "the command never
  shows the key" (the CLI tier).
- :func:`upstream_route`, :func:`codex_route`, :func:`tripwire_route`: what stands behind a real LiteLLM
  proxy (a chat-completions provider, a Codex-style endpoint, a tripwire); only for the gateway tier.
  They speak just enough of each protocol for LiteLLM 1.108.7 to relay.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import attrs

from adapters.offline.render import (
    call_item,
    event_frame,
    message_item,
    response_document,
    stream_events,
    usage,
)
from adapters.offline.threaded import Receive, Scope, Send, ThreadedServer, read_request

__all__ = [
    "CACHED_TOKENS",
    "CHATGPT_ACCESS_TOKEN",
    "CODEX_TEXT",
    "MALFORMED_ARGUMENTS",
    "STRUCTURED_REPLY",
    "SUMMARY_TEXT",
    "SUMMARY_TOOL_ROUNDS",
    "TEXT_REPLY",
    "WORKFLOW_TEXT",
    "WORKFLOW_TOOL_ROUNDS",
    "Answer",
    "FakeServer",
    "RecordedRequest",
    "Route",
    "codex_route",
    "echo_route",
    "tripwire_route",
    "upstream_route",
]

TEXT_REPLY = "The gateway relayed this text unchanged."
CODEX_TEXT = "Codex route: streamed, whatever was asked."
# What both upstreams answer when asked for a typed answer: ``response_format`` on the chat upstream, the
# schema in the instructions (prompted mode) on the Codex-style one.
STRUCTURED_REPLY = '{"decision": "ship", "votes": 3}'
# Of the 11 input tokens, how many the chat upstream reports read from its cache when a request has a key.
CACHED_TOKENS = 8
# A call cut off mid-object, the shape a model produces when it runs out of tokens inside arguments.
MALFORMED_ARGUMENTS = '{"zone": "Europe/Oslo", "format": '
CHATGPT_ACCESS_TOKEN = "fake-chatgpt-access-token"

# The summary pipeline's script: one round of tool calls (one of them malformed), then the summary text.
SUMMARY_TOOL_ROUNDS: tuple[tuple[tuple[str, str], ...], ...] = (
    (
        (
            "record_action_item",
            '{"owner": "Ana", "task": "Ship the gateway tier", "due": "Friday", "lines": [1]}',
        ),
        ("record_decision", '{"decision": "Stream every response", "lines": [2, 3]}'),
        ("record_action_item", '{"owner": "Ben", "task": '),
    ),
)
# The workflow editor's script: add a step, rename the first one, then report.
WORKFLOW_TOOL_ROUNDS: tuple[tuple[tuple[str, str], ...], ...] = (
    (("add_step", '{"name": "Publish notes", "kind": "action", "after": null}'),),
    (("rename_step", '{"step_id": "s1", "name": "Collect agenda items"}'),),
)
SUMMARY_TEXT = "Summary: the team will ship the gateway tier and stream every response."
WORKFLOW_TEXT = "Added a publish step and renamed the first step."


@attrs.frozen
class RecordedRequest:
    """One request a fake received: its path, headers (lower-cased names) and JSON body."""

    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    method: str = "POST"

    def mentions(self, needle: str) -> bool:
        return needle in json.dumps(self.body)


@attrs.frozen
class Answer:
    """What a fake sends back: a status, a content type and the body in pieces, each sent as it comes."""

    status: int
    content_type: str
    pieces: Iterable[str]


def _json(status: int, payload: Mapping[str, Any]) -> Answer:
    return Answer(status, "application/json", [json.dumps(payload)])


def _sse(frames: Iterable[str]) -> Answer:
    return Answer(200, "text/event-stream", frames)


# What a fake answers, given the request (its body decoded, {} when there was none).
Route = Callable[[RecordedRequest], Answer]


class FakeServer(ThreadedServer):
    """A fake on 127.0.0.1 and an ephemeral port: uvicorn in a thread of its own until stopped."""

    def __init__(self, route: Route) -> None:
        super().__init__(self._serve, name="fake-server")
        self._route = route
        self._requests: list[RecordedRequest] = []

    @property
    def base_url(self) -> str:
        return self.origin

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        return tuple(self._requests)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await read_request(scope, receive)
        try:
            decoded = json.loads(request.body or b"{}")
        except ValueError:
            decoded = {"_undecodable": request.body.decode("utf-8", "replace")}
        body = decoded if isinstance(decoded, dict) else {"_not_an_object": decoded}
        recorded = RecordedRequest(request.path, request.headers, body, request.method)
        self._requests.append(recorded)
        answer = self._route(recorded)
        headers = [(b"content-type", answer.content_type.encode()), (b"cache-control", b"no-cache")]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        for piece in answer.pieces:
            await send({"type": "http.response.body", "body": piece.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b""})


# ---------------------------------------------------------------- the echoing gateway


def echo_route(request: RecordedRequest) -> Answer:
    """A Responses gateway that quotes the caller's API key back; point the command at its server's base URL.

    The model name picks what comes back: ``echo-text`` (a completed answer whose text quotes the key),
    ``echo-401`` (an error body quoting it), ``echo-failed`` (a failed response whose message quotes it),
    ``echo-straddle`` (a failed response whose text has the key across the 500th character, where ``-v``
    cuts what had arrived), ``echo-call`` (a call whose arguments have the key across the 100th
    character, where the text report cuts them) or ``echo-escapes`` (text full of terminal escapes).
    """
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    model = str(request.body.get("model"))
    if model in _STRADDLING:
        return _json(200, _STRADDLING[model](key))
    if model == "echo-401":
        refusal = {"message": f"Incorrect API key provided: {key}", "type": "auth", "code": "bad_key"}
        return _json(401, {"error": refusal})
    document = response_document(
        [message_item("msg_1", f"Summary. Your key is {key}.")],
        response_id="resp_echo",
        model=model,
        created_at=1_700_000_000,
        usage=usage(11, 7),
    )
    if model == "echo-failed":
        document.update(
            output=[], status="failed", error={"code": "server_error", "message": f"key {key} refused"}
        )
    return _json(200, document)


def _echo_document(output: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return response_document(output, response_id="resp_echo", model=model, created_at=1_700_000_000)


def _straddling_text(key: str) -> dict[str, Any]:
    text = "x" * (500 - len(key) // 2) + key + " and more"
    document = _echo_document([message_item("msg_1", text)], "echo-straddle")
    document.update(status="failed", error={"code": "server_error", "message": "it broke"})
    return document


def _straddling_call(key: str) -> dict[str, Any]:
    arguments = json.dumps({"decision": "y" * (90 - len(key) // 2) + key, "lines": [1]})
    return _echo_document([call_item("fc_1", "call_echo", "record_decision", arguments)], "echo-call")


def _escapes(key: str) -> dict[str, Any]:
    text = "Summary.\x1b]0;pwned\x07 \x1b[2J\x1b[31mred\x1b[0m \x9b1A\rover\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"
    return _echo_document([message_item("msg_1", text)], "echo-escapes")


_STRADDLING: Final = {
    "echo-straddle": _straddling_text,
    "echo-call": _straddling_call,
    "echo-escapes": _escapes,
}


# ---------------------------------------------------------------- chat-completions upstream


def _tool_rounds_done(body: Mapping[str, Any]) -> int:
    """How many tool rounds the conversation has completed: assistant turns that carried tool calls."""
    return sum(1 for m in body.get("messages") or () if m.get("role") == "assistant" and m.get("tool_calls"))


def _plan(body: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The scripted answer for this request: (text, tool calls); exactly one of them is non-empty."""
    model = str(body.get("model", ""))
    done = _tool_rounds_done(body)
    if model == "scripted-tool" or model == "scripted-malformed":
        if done == 0:
            arguments = '{"zone": "Europe/Oslo"}' if model == "scripted-tool" else MALFORMED_ARGUMENTS
            return "", (("current_time", arguments),)
        tool_outputs = [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]
        return "Tool said: " + " | ".join(tool_outputs), ()
    response_format = body.get("response_format")
    if (
        model == "scripted-text"
        and isinstance(response_format, Mapping)
        and response_format.get("type") == "json_schema"
    ):
        return STRUCTURED_REPLY, ()
    if model == "scripted-agent":
        offered = {tool["function"]["name"] for tool in body.get("tools") or ()}
        summary = "record_action_item" in offered
        rounds, final = (
            (SUMMARY_TOOL_ROUNDS, SUMMARY_TEXT) if summary else (WORKFLOW_TOOL_ROUNDS, WORKFLOW_TEXT)
        )
        if done < len(rounds):
            return "", rounds[done]
        return final, ()
    return TEXT_REPLY, ()


def _completion_id(body: Mapping[str, Any]) -> str:
    return f"chatcmpl-{_tool_rounds_done(body)}"


def _call_id(index: int, body: Mapping[str, Any]) -> str:
    return f"call_{_tool_rounds_done(body)}_{index}"


_UPSTREAM_MODELS = ("scripted-text", "scripted-tool", "scripted-malformed", "scripted-agent", "scripted-500")
_USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def _usage(body: Mapping[str, Any]) -> dict[str, Any]:
    """The token counts; a request with a ``prompt_cache_key`` is told :data:`CACHED_TOKENS` were cached."""
    if body.get("prompt_cache_key") is None:
        return _USAGE
    return {**_USAGE, "prompt_tokens_details": {"cached_tokens": CACHED_TOKENS}}


def _chunks(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _chat_stream(body: Mapping[str, Any], text: str, calls: tuple[tuple[str, str], ...]) -> Iterator[str]:
    base = {"id": _completion_id(body), "object": "chat.completion.chunk", "created": 1_700_000_000}
    base["model"] = body.get("model", "")

    def frame(delta: Mapping[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return "data: " + json.dumps({**base, "choices": [choice]}) + "\n\n"

    yield frame({"role": "assistant", "content": ""})
    for piece in _chunks(text, 9):
        yield frame({"content": piece})
    for index, (name, arguments) in enumerate(calls):
        opening = {"index": index, "id": _call_id(index, body), "type": "function"}
        yield frame({"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]})
        # Small argument fragments, so the proxy has to reassemble them.
        for piece in _chunks(arguments, 7):
            yield frame({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield frame({}, "tool_calls" if calls else "stop")
    yield "data: " + json.dumps({**base, "choices": [], "usage": _usage(body)}) + "\n\n"
    yield "data: [DONE]\n\n"


def _chat_json(body: Mapping[str, Any], text: str, calls: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": _call_id(i, body), "type": "function", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(calls)
        ]
    return {
        "id": _completion_id(body),
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": _usage(body),
    }


def upstream_route(request: RecordedRequest) -> Answer:
    """An OpenAI-compatible ``/v1/chat/completions`` upstream; its answer is chosen by the model name.

    ``scripted-text`` answers :data:`TEXT_REPLY`; ``scripted-tool`` calls ``current_time`` with good
    arguments and ``scripted-malformed`` with :data:`MALFORMED_ARGUMENTS`, then either echoes the tool
    outputs it was sent; ``scripted-agent`` plays the summary or workflow script (chosen by the tools
    offered); ``scripted-500`` fails with HTTP 500. Streams when the request asks for it.
    """
    path, body = request.path.rstrip("/"), request.body
    if request.method == "GET" and path.endswith("/models"):
        # The proxy lists the upstream's models while it starts; an honest list keeps its log quiet.
        models = [{"id": name, "object": "model", "owned_by": "fake"} for name in _UPSTREAM_MODELS]
        return _json(200, {"object": "list", "data": models})
    if not path.endswith("/chat/completions"):
        return _json(404, {"error": {"message": f"no route {request.path}", "type": "not_found"}})
    if body.get("model") == "scripted-500":
        return _json(500, {"error": {"message": "upstream exploded", "type": "server_error"}})
    text, calls = _plan(body)
    if body.get("stream"):
        return _sse(_chat_stream(body, text, calls))
    return _json(200, _chat_json(body, text, calls))


# ---------------------------------------------------------------- Codex-style /responses


_PREVIOUS_NOT_FOUND = {
    "type": "invalid_request_error",
    "param": "previous_response_id",
    "code": "previous_response_not_found",
}


def codex_route(request: RecordedRequest) -> Answer:
    """A Codex-style ``/responses`` endpoint: always answers an event stream, even for ``stream: false``;
    :data:`STRUCTURED_REPLY` when the instructions carry a JSON Schema (a typed answer in prompted mode);
    a 400 ``previous_response_not_found``, as OpenAI words it, for any ``previous_response_id``."""
    if not request.path.rstrip("/").endswith("/responses"):
        return _json(404, {"detail": f"no route {request.path}"})
    if request.headers.get("authorization") != f"Bearer {CHATGPT_ACCESS_TOKEN}":
        return _json(401, {"detail": "missing the ChatGPT access token"})
    previous = request.body.get("previous_response_id")
    if previous is not None:
        # It stores nothing (the route sends store: false), so no response it gave can be continued.
        return _json(
            400,
            {
                "error": {
                    **_PREVIOUS_NOT_FOUND,
                    "message": f"Previous response with id '{previous}' not found.",
                }
            },
        )
    prompted = "JSON Schema" in str(request.body.get("instructions") or "")
    document = response_document(
        [message_item("msg_codex_1", STRUCTURED_REPLY if prompted else CODEX_TEXT)],
        response_id="resp_codex_1",
        model=str(request.body.get("model", "")),
        created_at=1_700_000_000,
        usage=usage(21, 9),
    )
    return _sse(event_frame(event) for event in stream_events(document, chunk=6))


# ---------------------------------------------------------------- tripwire


def tripwire_route(request: RecordedRequest) -> Answer:
    """A forward proxy that refuses every request, set as the LiteLLM proxy's HTTP(S)_PROXY."""
    return _json(403, {"error": "the gateway tier allows no outbound traffic"})
