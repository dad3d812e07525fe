"""A Responses gateway in memory: the real SDK client over ``httpx.MockTransport``, and what it is served.

Use it for anything about the wire format or the adapters' reading of it: :class:`Recorder` answers from a
queue and keeps every request, :func:`adapters_for` builds both adapters over it, :func:`served` is a
document as a streaming or a JSON request gets it, :func:`every_way` serves one answer to both adapters
both ways, :class:`Pieces` sends a body in pieces (then breaks or stalls). Build the bodies with
:mod:`adapters.offline.render`, the stand-in's own renderer (:func:`response_document` here adds a test's
defaults). :func:`sdk_over` is the SDK over any legacy httpx client, for tiers that talk to a real server.
Where a test needs real sockets, use :mod:`tests.support.local_server` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Literal

import attrs
import httpx
import openai
import pytest

from adapters.offline import render
from adapters.offline.render import sse, stream_events
from adapters.offline.render import usage as usage_block
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatError, ChatMessage, ChatPort, ChatResponse, ChatResponseUpdate

__all__ = [
    "API_KEY",
    "BASE_URL",
    "CREATED_AT",
    "JSON",
    "QUESTION",
    "REQUEST_ID",
    "SSE",
    "Adapter",
    "Pieces",
    "Recorder",
    "adapters_for",
    "all_updates",
    "answer",
    "answered_and_streamed",
    "assert_folds_to",
    "assert_shows_no_key",
    "assert_streams_what_it_answers",
    "client_for",
    "every_way",
    "mocked",
    "response_document",
    "sdk_over",
    "served",
    "streamed",
]

API_KEY = "sk-test-SECRET-4b1d"
BASE_URL = "http://gateway.test/v1"
SSE = "text/event-stream; charset=utf-8"
JSON = "application/json"
REQUEST_ID = "req_test_1"
QUESTION = (ChatMessage.user("Summarize the meeting"),)

Adapter = ResponsesSseAdapter | ResponsesJsonAdapter
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


def mocked(recorder: Recorder) -> httpx.AsyncClient:
    """A legacy httpx client that ``recorder`` answers."""
    return httpx.AsyncClient(transport=httpx.MockTransport(recorder))


def sdk_over(
    http_client: httpx.AsyncClient,
    *,
    base_url: str = BASE_URL,
    api_key: str = API_KEY,
    max_retries: int = 0,
    timeout: float = 5.0,
) -> openai.AsyncOpenAI:
    """The real SDK over a legacy httpx client, as the container builds it."""
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        # openai 3 is typed for httpx2 but accepts a legacy httpx client (the container hands it one).
        http_client=http_client,  # type: ignore[arg-type]
        max_retries=max_retries,
        timeout=timeout,
    )


def client_for(recorder: Recorder, *, max_retries: int = 0, timeout: float = 5.0) -> openai.AsyncOpenAI:
    """The SDK answered by ``recorder``."""
    return sdk_over(mocked(recorder), max_retries=max_retries, timeout=timeout)


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
    usage: tuple[int, int] | None = (11, 7),
    incomplete_reason: str | None = None,
    error: dict[str, Any] | None = None,
    litellm: bool = False,
) -> dict[str, Any]:
    """:func:`adapters.offline.render.response_document` with a test's defaults; ``usage`` as
    (input, output) tokens, with 3 cached and 2 reasoning tokens in OpenAI's dialect."""
    counts = (
        None if usage is None else usage_block(*usage, cached_tokens=3, reasoning_tokens=2, litellm=litellm)
    )
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


def served(
    document: dict[str, Any], *, streaming: bool, litellm: bool = False, **stream_options: Any
) -> httpx.Response:
    """``document`` as the answer a streaming request gets (an event stream; ``stream_options`` go to
    :func:`stream_events`) or a JSON request gets."""
    if not streaming:
        return answer(json.dumps(document), JSON)
    return answer(sse(stream_events(document, litellm=litellm, **stream_options), litellm=litellm), SSE)


def every_way(document: dict[str, Any], *, litellm: bool = False, **stream_options: Any) -> list[Adapter]:
    """Both adapters served ``document`` as an event stream (see :func:`served`), then both served it as a
    JSON body: four ways to the same answer."""
    answers = [served(document, streaming=way, litellm=litellm, **stream_options) for way in (True, False)]
    return [adapter for one in answers for adapter in adapters_for(Recorder([one]))]


# ---------------------------------------------------------------- bodies as a network delivers them


class Pieces(httpx.AsyncByteStream):
    """A body sent ``size`` bytes at a time (at once without a size), as from a socket, then ``then``:
    nothing more, an error raised as a dropped connection raises it, or a ``"stall"`` that never ends.

    ``httpx.MockTransport`` reads a ``content=`` body at once; serve this to read one as it arrives.
    """

    def __init__(
        self, data: bytes, size: int | None = None, then: BaseException | Literal["stall"] | None = None
    ) -> None:
        self._data = data
        self._size = size or max(len(data), 1)
        self._then = then
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._data), self._size):
            yield self._data[start : start + self._size]
        if self._then == "stall":
            await asyncio.Event().wait()
        elif self._then is not None:
            raise self._then

    async def aclose(self) -> None:
        self.closed = True


def streamed(body: Pieces, content_type: str = SSE, *, encoding: str | None = None) -> httpx.Response:
    """A 200 response whose body arrives as ``body`` sends it, under ``content_type`` and ``encoding``."""
    labels = {"content-type": content_type, "x-request-id": REQUEST_ID}
    if encoding is not None:
        labels["content-encoding"] = encoding
    return httpx.Response(200, headers=labels, stream=body)


# ---------------------------------------------------------------- streamed updates


def assert_folds_to(updates: Sequence[ChatResponseUpdate], response: ChatResponse) -> None:
    """The updates fold to ``response``, raw arguments included (which equality does not see)."""
    folded = ChatResponse.from_updates(updates)
    assert folded == response
    assert [c.raw_arguments for c in folded.function_calls] == [
        c.raw_arguments for c in response.function_calls
    ]


async def all_updates(
    adapter: ChatPort, messages: Sequence[ChatMessage] = QUESTION
) -> list[ChatResponseUpdate]:
    """Every update ``get_streaming_response`` yields for ``messages``."""
    return [update async for update in adapter.get_streaming_response(messages)]


async def assert_streams_what_it_answers(
    adapter: ChatPort, messages: Sequence[ChatMessage] = QUESTION
) -> None:
    """Asked twice, the adapter streams updates that fold to its whole answer, or fails the same way."""
    try:
        response = await adapter.get_response(messages)
    except ChatError as error:
        with pytest.raises(type(error)):
            await all_updates(adapter, messages)
        return
    assert_folds_to(await all_updates(adapter, messages), response)


@contextlib.contextmanager
def no_collection_mid_parse() -> Iterator[None]:
    """No garbage collection while a body is read; what is left is collected afterwards.

    A body may hold arguments nested thousands deep, which json gives up on at the recursion limit. A
    collection started at that depth would run an earlier exchange's async-generator finalizers there
    (the SDK's and httpx's stream generators, left suspended once an answer is complete), where they
    fail before they can even be reported: an "unraisable" exception, and under ``filterwarnings =
    error`` a failed test, one example in thousands (seen in random runs of the folding properties).
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
        gc.collect(1)


async def answered_and_streamed(
    body: str | bytes, content_type: str
) -> list[tuple[ChatResponse, list[ChatResponseUpdate]]]:
    """Each adapter's ``get_response`` and its streamed updates, for one body."""
    results = []
    for adapter in adapters_for(Recorder([answer(body, content_type)])):
        with no_collection_mid_parse():
            response = await adapter.get_response(QUESTION)
        with no_collection_mid_parse():
            results.append((response, await all_updates(adapter)))
    return results


# ---------------------------------------------------------------- secrets


def assert_shows_no_key(error: BaseException) -> None:
    """Neither ``error`` nor any exception behind it (cause or context) shows :data:`API_KEY`."""
    seen: list[BaseException] = []
    pending = [error]
    while pending:
        current = pending.pop()
        if any(current is known for known in seen):
            continue
        seen.append(current)
        assert API_KEY not in str(current), current
        assert API_KEY not in repr(current), current
        pending.extend(behind for behind in (current.__cause__, current.__context__) if behind is not None)
