"""How an answer ends, over real sockets: ``response.completed`` is the last word, whatever follows it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Final

from adapters.offline.render import event_frame, message_item, stream_events
from domain import ChatMessage
from tests.support.gateway import response_document
from tests.support.local_server import ADAPTERS, AdapterType, Received, Sender, adapter_on, serve

# The peer holds the stream open this long at most: far longer than an answer may take to return.
PEER_LIMIT: Final = 20.0
DOCUMENT: Final = response_document([message_item("msg_1", "The whole answer.")], response_id="resp_done")
COMPLETE: Final = "".join(event_frame(event) for event in stream_events(DOCUMENT)).encode()


async def _then_held_open(_: Received, sender: Sender) -> None:
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(COMPLETE)
    # Held open until the client leaves (or the peer's own limit): the answer is already whole.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(sender.disconnected.wait(), PEER_LIMIT)


async def _then_garbage(_: Received, sender: Sender) -> None:
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(COMPLETE + b"data: {this is not json\n\n" + event_frame({"type": "error"}).encode())
    await sender.body(b"", more=False)


@ADAPTERS
async def test_a_stream_left_open_after_response_completed_returns_its_answer_at_once(
    adapter_type: AdapterType,
) -> None:
    async with (
        serve(_then_held_open) as server,
        adapter_on(server.base_url, adapter_type, deadline=60) as chat,
    ):
        started = time.monotonic()
        response = await chat.get_response([ChatMessage.user("hello")])
        elapsed = time.monotonic() - started

    assert (response.text, response.response_id, response.status) == (
        "The whole answer.",
        "resp_done",
        "completed",
    )
    # The idle timeout is 10 s and the peer would hold on for 20: neither was waited for.
    assert elapsed < PEER_LIMIT / 4


@ADAPTERS
async def test_a_bad_line_after_response_completed_does_not_cost_the_answer(
    adapter_type: AdapterType,
) -> None:
    async with serve(_then_garbage) as server, adapter_on(server.base_url, adapter_type) as chat:
        response = await chat.get_response([ChatMessage.user("hello")])
        streamed = [update async for update in chat.get_streaming_response([ChatMessage.user("hello")])]

    assert response.text == "The whole answer."
    assert "".join(update.text for update in streamed) == "The whole answer."


@ADAPTERS
async def test_the_streaming_caller_gets_its_answer_while_the_peer_still_holds_the_stream(
    adapter_type: AdapterType,
) -> None:
    async with (
        serve(_then_held_open) as server,
        adapter_on(server.base_url, adapter_type, deadline=60) as chat,
    ):
        started = time.monotonic()
        updates = [update async for update in chat.get_streaming_response([ChatMessage.user("hello")])]
        elapsed = time.monotonic() - started

    assert "".join(update.text for update in updates) == "The whole answer."
    assert updates[-1].status == "completed"
    assert elapsed < PEER_LIMIT / 4
