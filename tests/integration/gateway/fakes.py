"""Loopback fakes behind the LiteLLM proxy: a chat-completions upstream, a Codex-style endpoint, a tripwire.

Use them only in the gateway tier: they speak just enough of each protocol for LiteLLM 1.108.7 to
relay, and every answer is decided by the request (the upstream model name and the conversation), so
a test knows what the proxy must hand back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

__all__ = [
    "CHATGPT_ACCESS_TOKEN",
    "CODEX_TEXT",
    "MALFORMED_ARGUMENTS",
    "SUMMARY_TEXT",
    "SUMMARY_TOOL_ROUNDS",
    "TEXT_REPLY",
    "WORKFLOW_TEXT",
    "WORKFLOW_TOOL_ROUNDS",
    "FakeServer",
    "RecordedRequest",
    "Route",
    "codex_handler",
    "tripwire_handler",
    "upstream_handler",
]

TEXT_REPLY = "The gateway relayed this text unchanged."
CODEX_TEXT = "Codex route: streamed, whatever was asked."
# A call cut off mid-object, the shape a model produces when it runs out of tokens inside arguments.
MALFORMED_ARGUMENTS = '{"zone": "Europe/Oslo", "format": '
CHATGPT_ACCESS_TOKEN = "fake-chatgpt-access-token"

# The summary pipeline's script: one round of tool calls (one of them malformed), then the summary text.
SUMMARY_TOOL_ROUNDS: tuple[tuple[tuple[str, str], ...], ...] = (
    (
        ("record_action_item", '{"owner": "Ana", "task": "Ship the gateway tier", "due": "Friday"}'),
        ("record_decision", '{"decision": "Stream every response"}'),
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

    def mentions(self, needle: str) -> bool:
        return needle in json.dumps(self.body)


class _Recorder:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []

    def add(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def snapshot(self) -> tuple[RecordedRequest, ...]:
        with self._lock:
            return tuple(self._requests)


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: every answer closes its connection, so a streamed body needs no chunked framing.
    protocol_version = "HTTP/1.0"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr line; the recorder keeps what a test needs."""

    def _record(self, body: Mapping[str, Any]) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.recorder.add(RecordedRequest(self.path, headers, body))

    def _read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            decoded = json.loads(raw or b"{}")
        except ValueError:
            decoded = {"_undecodable": raw.decode("utf-8", "replace")}
        body = decoded if isinstance(decoded, dict) else {"_not_an_object": decoded}
        self._record(body)
        return body

    def send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, frames: Iterator[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for frame in frames:
            self.wfile.write(frame.encode())
            self.wfile.flush()

    def do_GET(self) -> None:
        self._record({})
        self.server.route(self, {})

    def do_POST(self) -> None:
        self.server.route(self, self._read_json())

    def do_CONNECT(self) -> None:
        self._record({})
        self.server.route(self, {})


# What a fake answers: called with the request's handler and its decoded JSON body ({} for GET/CONNECT).
Route = Callable[["_Handler", dict[str, Any]], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, route: Route) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.recorder = _Recorder()
        self.route = route


class FakeServer:
    """A stdlib HTTP server on 127.0.0.1 and an ephemeral port, serving in a daemon thread until stopped."""

    def __init__(self, route: Route) -> None:
        self._server = _Server(route)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        return self._server.recorder.snapshot()

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


# ---------------------------------------------------------------- chat-completions upstream


def _tool_rounds_done(messages: list[dict[str, Any]]) -> int:
    """How many tool rounds the conversation has completed: assistant turns that carried tool calls."""
    return sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))


def _offered_tools(body: Mapping[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _plan(body: Mapping[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The scripted answer for this request: (text, tool calls); exactly one of them is non-empty."""
    model = str(body.get("model", ""))
    messages = list(body.get("messages") or ())
    done = _tool_rounds_done(messages)
    if model == "scripted-tool" or model == "scripted-malformed":
        if done == 0:
            arguments = '{"zone": "Europe/Oslo"}' if model == "scripted-tool" else MALFORMED_ARGUMENTS
            return "", (("current_time", arguments),)
        tool_outputs = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
        return "Tool said: " + " | ".join(tool_outputs), ()
    if model == "scripted-agent":
        offered = _offered_tools(body)
        rounds, final = (
            (SUMMARY_TOOL_ROUNDS, SUMMARY_TEXT)
            if "record_action_item" in offered
            else (WORKFLOW_TOOL_ROUNDS, WORKFLOW_TEXT)
        )
        if done < len(rounds):
            return "", rounds[done]
        return final, ()
    return TEXT_REPLY, ()


def _completion_id(body: Mapping[str, Any]) -> str:
    return f"chatcmpl-{_tool_rounds_done(list(body.get('messages') or ()))}"


def _call_id(index: int, body: Mapping[str, Any]) -> str:
    return f"call_{_tool_rounds_done(list(body.get('messages') or ()))}_{index}"


_UPSTREAM_MODELS = ("scripted-text", "scripted-tool", "scripted-malformed", "scripted-agent", "scripted-500")
_USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


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
    yield "data: " + json.dumps({**base, "choices": [], "usage": _USAGE}) + "\n\n"
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
        "usage": _USAGE,
    }


def _upstream(handler: _Handler, body: dict[str, Any]) -> None:
    if handler.command == "GET" and handler.path.rstrip("/").endswith("/models"):
        # The proxy lists the upstream's models while it starts; an honest list keeps its log quiet.
        models = [{"id": name, "object": "model", "owned_by": "fake"} for name in _UPSTREAM_MODELS]
        handler.send_json(200, {"object": "list", "data": models})
        return
    if not handler.path.rstrip("/").endswith("/chat/completions"):
        handler.send_json(404, {"error": {"message": f"no route {handler.path}", "type": "not_found"}})
        return
    if body.get("model") == "scripted-500":
        handler.send_json(500, {"error": {"message": "upstream exploded", "type": "server_error"}})
        return
    text, calls = _plan(body)
    if body.get("stream"):
        handler.send_sse(_chat_stream(body, text, calls))
    else:
        handler.send_json(200, _chat_json(body, text, calls))


def upstream_handler() -> Route:
    """An OpenAI-compatible ``/v1/chat/completions`` upstream; its answer is chosen by the model name.

    ``scripted-text`` answers :data:`TEXT_REPLY`; ``scripted-tool`` calls ``current_time`` with good
    arguments and ``scripted-malformed`` with :data:`MALFORMED_ARGUMENTS`, then either echoes the tool
    outputs it was sent; ``scripted-agent`` plays the summary or workflow script (chosen by the tools
    offered); ``scripted-500`` fails with HTTP 500. Streams when the request asks for it.
    """
    return _upstream


# ---------------------------------------------------------------- Codex-style /responses


def _codex_events(body: Mapping[str, Any]) -> Iterator[str]:
    response_id = "resp_codex_1"
    model = str(body.get("model", ""))
    shell = {"id": response_id, "object": "response", "created_at": 1_700_000_000, "model": model}
    item_id = "msg_codex_1"

    def event(payload: Mapping[str, Any]) -> str:
        return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n"

    yield event(
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {**shell, "status": "in_progress", "output": []},
        }
    )
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    yield event({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item})
    part = {"type": "output_text", "text": "", "annotations": []}
    yield event(
        {
            "type": "response.content_part.added",
            "sequence_number": 2,
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "part": part,
        }
    )
    sequence = 3
    for piece in _chunks(CODEX_TEXT, 6):
        yield event(
            {
                "type": "response.output_text.delta",
                "sequence_number": sequence,
                "item_id": item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
                "logprobs": [],
            }
        )
        sequence += 1
    done_part = {**part, "text": CODEX_TEXT}
    yield event(
        {
            "type": "response.output_text.done",
            "sequence_number": sequence,
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "text": CODEX_TEXT,
            "logprobs": [],
        }
    )
    done_item = {**item, "status": "completed", "content": [done_part]}
    yield event(
        {
            "type": "response.output_item.done",
            "sequence_number": sequence + 1,
            "output_index": 0,
            "item": done_item,
        }
    )
    usage = {
        "input_tokens": 21,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 30,
    }
    completed = {**shell, "status": "completed", "output": [done_item], "usage": usage}
    yield event({"type": "response.completed", "sequence_number": sequence + 2, "response": completed})


def _codex(handler: _Handler, body: dict[str, Any]) -> None:
    if not handler.path.rstrip("/").endswith("/responses"):
        handler.send_json(404, {"detail": f"no route {handler.path}"})
        return
    if handler.headers.get("Authorization") != f"Bearer {CHATGPT_ACCESS_TOKEN}":
        handler.send_json(401, {"detail": "missing the ChatGPT access token"})
        return
    handler.send_sse(_codex_events(body))


def codex_handler() -> Route:
    """A Codex-style ``/responses`` endpoint: always answers an event stream, even for ``stream: false``."""
    return _codex


# ---------------------------------------------------------------- tripwire


def _tripwire(handler: _Handler, body: dict[str, Any]) -> None:
    handler.send_json(403, {"error": "the gateway tier allows no outbound traffic"})


def tripwire_handler() -> Route:
    """An HTTP(S) forward proxy that refuses and records every request, set as the proxy's HTTP(S)_PROXY."""
    return _tripwire
