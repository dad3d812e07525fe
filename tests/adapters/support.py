"""Test helpers for the Responses adapters: a real SDK client over httpx.MockTransport, and body renderers."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
import httpx
import openai

from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter

API_KEY = "sk-test-SECRET-4b1d"
BASE_URL = "http://gateway.test/v1"
SSE = "text/event-stream; charset=utf-8"
JSON = "application/json"
REQUEST_ID = "req_test_1"

Handler = Callable[[httpx.Request], httpx.Response]


@attrs.define
class Recorder:
    """A MockTransport handler that answers from a queue of responses and keeps every request."""

    answers: list[httpx.Response | BaseException | Handler]
    requests: list[httpx.Request] = attrs.field(factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(request)
        return answer

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]


def answer(body: bytes | str, content_type: str = JSON, status: int = 200, **headers: str) -> httpx.Response:
    content = body.encode() if isinstance(body, str) else body
    return httpx.Response(
        status,
        content=content,
        # retry-after-ms keeps the SDK's back-off short when a test makes it retry.
        headers={"content-type": content_type, "x-request-id": REQUEST_ID, "retry-after-ms": "1", **headers},
    )


def client_for(recorder: Recorder, *, max_retries: int = 0, timeout: float = 5.0) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url=BASE_URL,
        # openai 3 is typed for httpx2 but accepts a legacy httpx client (the container hands it one).
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),  # type: ignore[arg-type]
        max_retries=max_retries,
        timeout=timeout,
    )


def adapters_for(
    recorder: Recorder,
    settings: ResponsesSettings | None = None,
    *,
    logger: logging.Logger | None = None,
    **client_options: Any,
) -> tuple[ResponsesSseAdapter, ResponsesJsonAdapter]:
    client = client_for(recorder, **client_options)
    settings = settings or ResponsesSettings(model="gpt-test")
    return (
        ResponsesSseAdapter(client, settings, logger=logger),
        ResponsesJsonAdapter(client, settings, logger=logger),
    )


def sse(events: Iterable[Mapping[str, Any]], *, litellm: bool = False) -> str:
    """An event stream in OpenAI's dialect (event: lines) or LiteLLM's (data only, then [DONE])."""
    chunks = []
    for event in events:
        data = json.dumps(event, separators=(",", ":"))
        chunks.append(f"data: {data}\n\n" if litellm else f"event: {event['type']}\ndata: {data}\n\n")
    if litellm:
        chunks.append("data: [DONE]\n\n")
    return "".join(chunks)


# ---------------------------------------------------------------- rendering model outputs as bodies
CREATED_AT = 1_764_000_000


def message_item(item_id: str, *texts: str) -> dict[str, Any]:
    parts = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []} for text in texts]
    return {"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": parts}


def reasoning_item(
    item_id: str, summary: Iterable[str] = (), encrypted: str | None = None, texts: Iterable[str] = ()
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": text} for text in summary],
    }
    content = [{"type": "reasoning_text", "text": text} for text in texts]
    if content:
        item["content"] = content
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def call_item(item_id: str, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def response_document(
    output: list[dict[str, Any]],
    *,
    response_id: str = "resp_test",
    model: str = "gpt-test-2026",
    status: str = "completed",
    usage: tuple[int, int, int] | None = (11, 7, 18),
    incomplete_reason: str | None = None,
    error: dict[str, Any] | None = None,
    litellm: bool = False,
) -> dict[str, Any]:
    usage_body: dict[str, Any] | None = None
    if usage is not None:
        usage_body = {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": usage[2]}
        if not litellm:
            usage_body["input_tokens_details"] = {"cached_tokens": 3}
            usage_body["output_tokens_details"] = {"reasoning_tokens": 2}
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "model": model,
        "output": output,
        "usage": usage_body,
        "error": error,
        "incomplete_details": None if incomplete_reason is None else {"reason": incomplete_reason},
        "tools": [],
        "parallel_tool_calls": True,
    }


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _item_events(index: int, item: dict[str, Any], chunk: int, litellm: bool) -> list[dict[str, Any]]:
    """What OpenAI streams for one output item: added, deltas, the parts' done events, item done."""
    kind, item_id = item["type"], item.get("id")
    skeleton = {**item}
    if kind == "message":
        skeleton["content"] = []
    elif kind == "reasoning":
        skeleton["summary"] = []
        skeleton.pop("content", None)
    elif kind == "function_call":
        skeleton["arguments"] = ""
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": skeleton}
    ]
    where = {"item_id": item_id, "output_index": index}
    if kind == "message":
        for part_index, part in enumerate(item["content"]):
            at = {**where, "content_index": part_index}
            events.append({"type": "response.content_part.added", **at, "part": {**part, "text": ""}})
            for delta in _chunks(part["text"], chunk):
                event = {"type": "response.output_text.delta", **at, "delta": delta}
                if not litellm:
                    event["logprobs"] = []
                events.append(event)
            events.append({"type": "response.output_text.done", **at, "text": part["text"]})
            events.append({"type": "response.content_part.done", **at, "part": part})
    elif kind == "reasoning":
        for summary_index, part in enumerate(item["summary"]):
            at = {**where, "summary_index": summary_index}
            events.append(
                {"type": "response.reasoning_summary_part.added", **at, "part": {**part, "text": ""}}
            )
            for delta in _chunks(part["text"], chunk):
                events.append({"type": "response.reasoning_summary_text.delta", **at, "delta": delta})
            events.append({"type": "response.reasoning_summary_text.done", **at, "text": part["text"]})
        for content_index, part in enumerate(item.get("content", ())):
            at = {**where, "content_index": content_index}
            for delta in _chunks(part["text"], chunk):
                events.append({"type": "response.reasoning_text.delta", **at, "delta": delta})
            events.append({"type": "response.reasoning_text.done", **at, "text": part["text"]})
    elif kind == "function_call":
        for delta in _chunks(item["arguments"], chunk):
            events.append({"type": "response.function_call_arguments.delta", **where, "delta": delta})
        events.append(
            {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
        )
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def stream_events(
    document: dict[str, Any],
    *,
    chunk: int = 3,
    litellm: bool = False,
    terminal_output: bool = True,
    terminal: bool = True,
) -> list[dict[str, Any]]:
    """The events a provider streams for ``document``; ``terminal_output=False`` empties the final output."""
    opening = {**document, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(document["output"]):
        events.extend(_item_events(index, item, chunk, litellm))
    if terminal:
        final = document if terminal_output else {**document, "output": []}
        kind = {"incomplete": "response.incomplete", "failed": "response.failed"}.get(
            document["status"], "response.completed"
        )
        events.append({"type": kind, "response": final})
    for number, event in enumerate(events):
        event["sequence_number"] = number
        if litellm:
            # LiteLLM repeats the model at the top level of every event.
            event["model"] = document["model"]
    return events
