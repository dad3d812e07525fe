"""Test helpers for the Responses adapters: a real SDK client over httpx.MockTransport, and body renderers."""

from __future__ import annotations

import json
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
    recorder: Recorder, settings: ResponsesSettings | None = None, **client_options: Any
) -> tuple[ResponsesSseAdapter, ResponsesJsonAdapter]:
    client = client_for(recorder, **client_options)
    settings = settings or ResponsesSettings(model="gpt-test")
    return ResponsesSseAdapter(client, settings), ResponsesJsonAdapter(client, settings)


def sse(events: Iterable[Mapping[str, Any]], *, litellm: bool = False) -> str:
    """An event stream in OpenAI's dialect (event: lines) or LiteLLM's (data only, then [DONE])."""
    chunks = []
    for event in events:
        data = json.dumps(event, separators=(",", ":"))
        chunks.append(f"data: {data}\n\n" if litellm else f"event: {event['type']}\ndata: {data}\n\n")
    if litellm:
        chunks.append("data: [DONE]\n\n")
    return "".join(chunks)
