"""A body broken in transit is asked for again within max_retries and the deadline (real sockets)."""

from __future__ import annotations

from typing import Any, Final

import pytest

from adapters.offline.render import message_item, sse, stream_events
from domain import (
    ChatError,
    ChatMessage,
    ChatTransportError,
    MalformedResponseError,
    ResponseFailedError,
)
from tests.support.gateway import response_document
from tests.support.local_server import ADAPTERS, AdapterType, Received, Sender, adapter_on, serve

WHOLE: Final = "The second answer, whole."
HALF: Final = "The first answer, cut off half way."


def _events(text: str, response_id: str, *, status: str = "completed") -> list[dict[str, Any]]:
    return stream_events(
        response_document([message_item("msg_1", text)], response_id=response_id, status=status)
    )


def _whole(response_id: str = "resp_whole") -> bytes:
    return sse(_events(WHOLE, response_id)).encode()


def _cut(events: list[dict[str, Any]]) -> bytes:
    """Everything up to the last text delta: half an answer, no terminal event."""
    last_delta = max(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    return sse(events[: last_delta + 1]).encode()


class Broken:
    """Serves event streams: the first ``broken`` requests get half a stream, then ``how`` happens."""

    def __init__(self, broken: int, how: str) -> None:
        self.broken = broken
        self.how = how
        self.requests: list[Received] = []

    async def __call__(self, request: Received, sender: Sender) -> None:
        number = len(self._seen(request))
        if number > self.broken:
            await sender.whole(
                200, _whole(), {"content-type": "text/event-stream", "x-request-id": f"req_{number}"}
            )
            return
        await sender.start(200, {"content-type": "text/event-stream", "x-request-id": f"req_{number}"})
        await sender.body(_cut(_events(HALF, f"resp_half_{number}")))
        if self.how == "ends":
            # A clean end of the body, without any terminal event.
            await sender.body(b"", more=False)
        # "resets": returning mid-body makes the server drop the connection.

    def _seen(self, request: Received) -> list[Received]:
        self.requests.append(request)
        return self.requests


@ADAPTERS
@pytest.mark.parametrize("how", ["resets", "ends"])
async def test_a_broken_body_is_asked_for_again_and_the_second_answer_is_used(
    adapter_type: AdapterType, how: str
) -> None:
    handler = Broken(1, how)
    async with serve(handler) as server, adapter_on(server.base_url, adapter_type, max_retries=2) as chat:
        response = await chat.get_response([ChatMessage.user("hello")])

    assert response.text == WHOLE
    assert response.response_id == "resp_whole"
    assert len(server.received) == 2
    # The same request both times: the retry is not a new conversation.
    assert server.received[0].json() == server.received[1].json()
    assert server.received[0].headers["x-initiator"] == server.received[1].headers["x-initiator"]


@ADAPTERS
@pytest.mark.parametrize("how", ["resets", "ends"])
async def test_without_retries_the_error_carries_the_text_that_arrived(
    adapter_type: AdapterType, how: str
) -> None:
    handler = Broken(1, how)
    async with serve(handler) as server, adapter_on(server.base_url, adapter_type, max_retries=0) as chat:
        with pytest.raises(ChatError) as caught:
            await chat.get_response([ChatMessage.user("hello")])

    assert isinstance(caught.value, ChatTransportError if how == "resets" else MalformedResponseError)
    assert caught.value.partial is not None
    assert caught.value.partial.text
    assert HALF.startswith(caught.value.partial.text)
    assert len(server.received) == 1


@ADAPTERS
@pytest.mark.parametrize("max_retries", [1, 3])
async def test_retries_stop_at_the_budget_and_the_error_keeps_the_last_attempt(
    adapter_type: AdapterType, max_retries: int
) -> None:
    handler = Broken(100, "resets")
    async with (
        serve(handler) as server,
        adapter_on(server.base_url, adapter_type, max_retries=max_retries) as chat,
    ):
        with pytest.raises(ChatTransportError) as caught:
            await chat.get_response([ChatMessage.user("hello")])

    assert len(server.received) == max_retries + 1
    assert caught.value.attempts == max_retries + 1
    assert caught.value.request_id == f"req_{max_retries + 1}"
    assert caught.value.partial is not None
    assert caught.value.partial.response_id == f"resp_half_{max_retries + 1}"


@ADAPTERS
async def test_a_failure_the_provider_reports_is_asked_for_once(adapter_type: AdapterType) -> None:
    async def failing(_: Received, sender: Sender) -> None:
        events = _events("partial", "resp_failed", status="failed")
        await sender.whole(200, sse(events).encode(), {"content-type": "text/event-stream"})

    async with serve(failing) as server, adapter_on(server.base_url, adapter_type, max_retries=3) as chat:
        with pytest.raises(ResponseFailedError):
            await chat.get_response([ChatMessage.user("hello")])

    assert len(server.received) == 1


@ADAPTERS
async def test_a_retry_never_outlives_the_deadline(adapter_type: AdapterType) -> None:
    handler = Broken(1000, "resets")
    deadline = 1.5
    async with (
        serve(handler) as server,
        adapter_on(server.base_url, adapter_type, max_retries=50, deadline=deadline) as chat,
    ):
        with pytest.raises(ChatTransportError) as caught:
            await chat.get_response([ChatMessage.user("hello")])

    # Back-off doubles from 0.5 s (less at most a quarter of jitter): within 1.5 s at most three attempts
    # fit, never the 51 the budget allows. A loaded machine only makes fewer fit, so this is no speed bar
    # (and how many do fit is: no lower bound beyond the first).
    received = len(server.received)
    assert 1 <= received <= 3
    # The deadline may cut the last attempt after the server read it and before its answer came back:
    # that one the client never saw answered, so it may be left out of the count, and only that one.
    assert caught.value.attempts in (received, received - 1)
