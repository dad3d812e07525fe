"""agent.deadline_seconds bounds one request end to end, and the transport can ask how much is left."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import pytest

from adapters.responses import ResponsesSettings
from adapters.responses.http_front import LISTENER
from domain import ChatMessage, ChatTransportError
from tests.support.gateway import (
    JSON,
    REQUEST_ID,
    SSE,
    Recorder,
    adapters_for,
    answer,
    message_item,
    response_document,
    sse,
    stream_events,
)

QUESTION = [ChatMessage.user("Summarize the meeting")]
DEADLINE = 0.3
# Far beyond the deadline: reaching it means the deadline did not hold, and the test fails instead of hanging.
TEST_BOUND = 30.0


class _NeverEnds(httpx.AsyncByteStream):
    """Sends ``head``, then waits for more that never comes (a gateway holding the stream open)."""

    def __init__(self, head: bytes) -> None:
        self._head = head

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self._head
        await asyncio.Event().wait()


def _hanging_stream(request: httpx.Request) -> httpx.Response:
    document = response_document([message_item("msg_1", "What arrived before the gateway stalled")])
    head = sse(stream_events(document, chunk=5, terminal=False)[:6]).encode()
    return httpx.Response(
        200, headers={"content-type": SSE, "x-request-id": REQUEST_ID}, stream=_NeverEnds(head)
    )


async def _never_answers(request: httpx.Request) -> httpx.Response:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


@pytest.mark.parametrize("content_type", [SSE, JSON])
async def test_a_stream_that_stalls_ends_at_the_deadline_with_what_arrived(content_type: str) -> None:
    def stalling(request: httpx.Request) -> httpx.Response:
        response = _hanging_stream(request)
        # The JSON adapter reads a stream labelled JSON as it arrives too, so what came is kept.
        response.headers["content-type"] = content_type
        return response

    settings = ResponsesSettings(model="gpt-test", deadline_seconds=DEADLINE)
    for adapter in adapters_for(Recorder([stalling]), settings, timeout=TEST_BOUND):
        async with asyncio.timeout(TEST_BOUND):
            with pytest.raises(ChatTransportError) as caught:
                await adapter.get_response(QUESTION)
        error = caught.value
        assert error.message == "no complete answer within agent.deadline_seconds=0.3 s"
        assert (error.status_code, error.attempts, error.request_id) == (None, 1, REQUEST_ID)
        assert error.partial is not None
        assert error.partial.text.startswith("What")
        assert error.response_id == "resp_test"
        assert error.__cause__ is None
        assert error.__context__ is None


async def test_a_gateway_that_never_answers_ends_at_the_deadline_with_nothing_partial() -> None:
    settings = ResponsesSettings(model="gpt-test", deadline_seconds=DEADLINE)
    # MockTransport awaits a handler's coroutine; Recorder's type names only plain handlers.
    for adapter in adapters_for(Recorder([cast(Any, _never_answers)]), settings, timeout=TEST_BOUND):
        async with asyncio.timeout(TEST_BOUND):
            with pytest.raises(ChatTransportError) as caught:
                await adapter.get_response(QUESTION)
        assert "deadline_seconds=0.3" in caught.value.message
        assert caught.value.partial is None


async def test_the_transport_is_told_the_seconds_left_of_the_current_request() -> None:
    told: list[float | None] = []
    ok = json.dumps(response_document([message_item("msg_1", "ok")]))

    def answering(request: httpx.Request) -> httpx.Response:
        listener = LISTENER.get()
        told.append(None if listener is None else listener.seconds_left())
        return answer(ok, JSON)

    settings = ResponsesSettings(model="gpt-test", deadline_seconds=42.0)
    for adapter in adapters_for(Recorder([answering]), settings):
        assert (await adapter.get_response(QUESTION)).text == "ok"

    assert len(told) == 2
    for left in told:
        assert left is not None
        assert 0 < left <= 42.0
    assert LISTENER.get() is None
