"""Test helpers for the Responses adapters: a real SDK client over httpx.MockTransport, and the bodies it
is served (rendered by :mod:`adapters.offline.render`, the stand-in's own renderer)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import attrs
import httpx
import openai

from adapters.offline import render
from adapters.offline.render import call_item, message_item, reasoning_item, sse, stream_events
from adapters.offline.render import usage as usage_block
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter

__all__ = [
    "API_KEY",
    "BASE_URL",
    "CREATED_AT",
    "JSON",
    "REQUEST_ID",
    "SSE",
    "Recorder",
    "adapters_for",
    "answer",
    "call_item",
    "client_for",
    "message_item",
    "reasoning_item",
    "response_document",
    "sse",
    "stream_events",
]

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


# ---------------------------------------------------------------- rendering model outputs as bodies
CREATED_AT = 1_764_000_000


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
    """:func:`adapters.offline.render.response_document` with a test's defaults; ``usage`` as
    (input, output, total) tokens, with 3 cached and 2 reasoning tokens in OpenAI's dialect."""
    counts = None
    if usage is not None:
        counts = {
            **usage_block(usage[0], usage[1], cached_tokens=3, reasoning_tokens=2, litellm=litellm),
            "total_tokens": usage[2],
        }
    return render.response_document(
        output,
        response_id=response_id,
        model=model,
        created_at=CREATED_AT,
        status=status,
        usage=counts,
        error=error,
        incomplete_reason=incomplete_reason,
    )
