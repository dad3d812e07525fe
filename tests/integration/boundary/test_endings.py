"""How an answer ends, over real sockets: ``response.completed`` is the last word, whatever follows it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from adapters.offline.render import event_frame, message_item, stream_events
from domain import ChatMessage, ChatPort
from tests.support.gateway import response_document
from tests.support.local_server import (
    ADAPTERS,
    AdapterType,
    LocalServer,
    Received,
    Sender,
    adapter_on,
    serve,
)

# The peer holds the stream open this long at most: far longer than an answer may take to return.
PEER_LIMIT: Final = 20.0
DOCUMENT: Final = response_document([message_item("msg_1", "The whole answer.")], response_id="resp_done")
COMPLETE: Final = "".join(event_frame(event) for event in stream_events(DOCUMENT)).encode()


class HeldOpen:
    """Sends a whole answer, then holds the stream open until the client leaves (or the peer's own
    limit); ``left`` says, per request, whether the client left first."""

    def __init__(self) -> None:
        self.left: list[bool] = []

    async def __call__(self, _: Received, sender: Sender) -> None:
        await sender.start(200, {"content-type": "text/event-stream"})
        await sender.body(COMPLETE)
        try:
            await asyncio.wait_for(sender.disconnected.wait(), PEER_LIMIT)
        except TimeoutError:
            self.left.append(False)
        else:
            self.left.append(True)


@asynccontextmanager
async def _held_open(adapter_type: AdapterType) -> AsyncIterator[tuple[HeldOpen, LocalServer, ChatPort]]:
    """An adapter of ``adapter_type`` on a server that holds every stream open after its whole answer, with
    a deadline far past the peer's limit: the handler, the server and the adapter."""
    held = HeldOpen()
    async with serve(held) as server, adapter_on(server.base_url, adapter_type, deadline=60) as chat:
        yield held, server, chat


async def _then_garbage(_: Received, sender: Sender) -> None:
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(COMPLETE + b"data: {this is not json\n\n" + event_frame({"type": "error"}).encode())
    await sender.body(b"", more=False)


@ADAPTERS
async def test_a_stream_left_open_after_response_completed_returns_its_answer_at_once(
    adapter_type: AdapterType,
) -> None:
    async with _held_open(adapter_type) as (held, _, chat):
        response = await chat.get_response([ChatMessage.user("hello")])

    assert (response.text, response.response_id, response.status) == (
        "The whole answer.",
        "resp_done",
        "completed",
    )
    # The client let go while the peer still held the stream: it waited neither for the peer's end nor
    # for its idle timeout (10 s, which would have ended in an error rather than this answer).
    assert held.left == [True]


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
    async with _held_open(adapter_type) as (held, _, chat):
        updates = [update async for update in chat.get_streaming_response([ChatMessage.user("hello")])]

    assert "".join(update.text for update in updates) == "The whole answer."
    assert updates[-1].status == "completed"
    assert held.left == [True]


async def _ended(_: Received, sender: Sender) -> None:
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(COMPLETE, more=False)


@ADAPTERS
async def test_a_stream_that_ended_at_response_completed_leaves_its_connection_to_the_next_request(
    adapter_type: AdapterType,
) -> None:
    async with serve(_ended) as server, adapter_on(server.base_url, adapter_type) as chat:
        first = await chat.get_response([ChatMessage.user("hello")])
        streamed = [update async for update in chat.get_streaming_response([ChatMessage.user("again")])]
        third = await chat.get_response([ChatMessage.user("and again")])

    assert first.text == third.text == "".join(update.text for update in streamed) == "The whole answer."
    assert len(server.clients) == 3
    # One connection (one client address) served all three: the ended bodies were read to their end.
    assert len(set(server.clients)) == 1, server.clients


@ADAPTERS
async def test_a_stream_held_open_after_response_completed_is_not_kept_for_the_next_request(
    adapter_type: AdapterType,
) -> None:
    async with _held_open(adapter_type) as (held, server, chat):
        first = await chat.get_response([ChatMessage.user("hello")])
        second = await chat.get_response([ChatMessage.user("again")])

    assert first.text == second.text == "The whole answer."
    assert held.left == [True, True]
    # Its connection was closed, so the next request came on a new one.
    assert len(set(server.clients)) == 2, server.clients
