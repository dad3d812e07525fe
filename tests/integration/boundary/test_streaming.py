"""Caller-facing streaming over real sockets: updates as they arrive, early exits close, retries unseen."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Final

import pytest

from adapters.offline.render import call_item, message_item, sse, stream_events
from domain import (
    ChatMessage,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    FunctionCallContent,
)
from tests.support.gateway import response_document
from tests.support.local_server import ADAPTERS, AdapterType, Received, Sender, adapter_on, serve

MESSAGES: Final = [ChatMessage.user("hello")]
TEXT: Final = "The first words arrive long before the last ones do."
# Every wait in these tests is bounded by this; a wait that runs out fails the test instead of hanging it.
BOUND: Final = 10.0
STREAM_HEADERS: Final = {"content-type": "text/event-stream"}


def _halves(response_id: str = "resp_live") -> tuple[bytes, bytes]:
    """One answer's stream cut after its first text delta: what comes first, and the rest."""
    events = stream_events(response_document([message_item("msg_1", TEXT)], response_id=response_id), chunk=6)
    first_delta = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    return sse(events[: first_delta + 1]).encode(), sse(events[first_delta + 1 :]).encode()


class Paced:
    """Sends the first part of the stream, then waits for the test's word before doing ``then``:
    "rest" sends the rest, "reset" drops the connection, "hold" waits for the client to leave."""

    def __init__(self, then: str, *, broken_before_content: int = 0) -> None:
        self.then = then
        self.go = asyncio.Event()
        self.left = asyncio.Event()
        self.broken_before_content = broken_before_content

    async def __call__(self, request: Received, sender: Sender) -> None:
        head, rest = _halves()
        await sender.start(200, STREAM_HEADERS)
        if self.broken_before_content:
            self.broken_before_content -= 1
            # Only the lifecycle events, no content yet, then the connection drops.
            await sender.body(head.split(b"event: response.output_text.delta")[0])
            return
        await sender.body(head)
        if self.then == "hold":
            await asyncio.wait_for(sender.disconnected.wait(), BOUND)
            self.left.set()
            return
        await asyncio.wait_for(self.go.wait(), BOUND)
        if self.then == "rest":
            await sender.body(rest, more=False)
        # "reset": returning mid-body makes the server drop the connection.


@ADAPTERS
async def test_the_first_update_arrives_before_the_server_has_sent_the_rest(
    adapter_type: AdapterType,
) -> None:
    paced = Paced("rest")
    updates: list[ChatResponseUpdate] = []
    async with serve(paced) as server, adapter_on(server.base_url, adapter_type, max_retries=0) as chat:
        async for update in chat.get_streaming_response(MESSAGES):
            updates.append(update)
            if update.text:
                # The server sends the rest only now: an adapter that buffered the body never gets here.
                paced.go.set()

    assert ChatResponse.from_updates(updates).text == TEXT
    assert updates[-1].status == "completed"


@ADAPTERS
async def test_leaving_the_iteration_early_closes_the_connection(adapter_type: AdapterType) -> None:
    paced = Paced("hold")
    async with serve(paced) as server, adapter_on(server.base_url, adapter_type, max_retries=0) as chat:
        stream = chat.get_streaming_response(MESSAGES)
        assert isinstance(stream, AsyncIterator)
        async for update in stream:
            if update.text:
                break
        await stream.aclose()  # type: ignore[attr-defined]  # an async generator, as the adapters' is
        await asyncio.wait_for(paced.left.wait(), BOUND)

    assert paced.left.is_set()
    assert len(server.received) == 1


@ADAPTERS
async def test_cancelling_the_reader_closes_the_connection(adapter_type: AdapterType) -> None:
    paced = Paced("hold")
    first = asyncio.Event()

    async def read(chat: ChatPort) -> None:
        async for update in chat.get_streaming_response(MESSAGES):
            if update.text:
                first.set()

    async with serve(paced) as server, adapter_on(server.base_url, adapter_type, max_retries=0) as chat:
        reader = asyncio.create_task(read(chat))
        await asyncio.wait_for(first.wait(), BOUND)
        reader.cancel()
        await asyncio.wait([reader], timeout=BOUND)
        await asyncio.wait_for(paced.left.wait(), BOUND)

    assert reader.cancelled()
    assert paced.left.is_set()


async def _failed_with_what_arrived(
    chat: ChatPort, on_text: Callable[[], None] | None = None
) -> tuple[ChatTransportError, str]:
    """The streamed answer read until it fails (``on_text`` called at each update with text), the error
    checked to carry what arrived: the text of the updates read before it, not nothing. The error and
    that text."""
    seen: list[ChatResponseUpdate] = []

    async def read() -> None:
        async for update in chat.get_streaming_response(MESSAGES):
            seen.append(update)
            if update.text and on_text is not None:
                on_text()

    with pytest.raises(ChatTransportError) as caught:
        await read()
    partial = caught.value.partial
    assert partial is not None
    assert partial.text == ChatResponse.from_updates(seen).text
    assert partial.text
    return caught.value, partial.text


@ADAPTERS
async def test_a_break_after_the_first_update_is_raised_with_what_arrived_and_not_retried(
    adapter_type: AdapterType,
) -> None:
    paced = Paced("reset")
    async with serve(paced) as server, adapter_on(server.base_url, adapter_type, max_retries=3) as chat:
        _, arrived = await _failed_with_what_arrived(chat, on_text=paced.go.set)

    assert len(server.received) == 1
    assert TEXT.startswith(arrived)


@ADAPTERS
async def test_a_break_before_the_first_update_is_asked_for_again(adapter_type: AdapterType) -> None:
    paced = Paced("rest", broken_before_content=1)
    paced.go.set()
    async with serve(paced) as server, adapter_on(server.base_url, adapter_type, max_retries=2) as chat:
        updates = [update async for update in chat.get_streaming_response(MESSAGES)]

    assert ChatResponse.from_updates(updates).text == TEXT
    assert len(server.received) == 2
    assert server.received[0].json() == server.received[1].json()


@ADAPTERS
async def test_a_stream_that_stalls_after_its_first_update_ends_at_the_deadline_with_what_arrived(
    adapter_type: AdapterType,
) -> None:
    paced = Paced("hold")
    async with (
        serve(paced) as server,
        adapter_on(server.base_url, adapter_type, max_retries=3, deadline=1.0) as chat,
    ):
        error, _ = await _failed_with_what_arrived(chat)
        # The request is given up at its deadline: the connection goes with it.
        await asyncio.wait_for(paced.left.wait(), BOUND)

    assert "deadline" in str(error)
    assert len(server.received) == 1


class CallsThenBreak:
    """An answer of two function calls; the first time it is cut right after the first call is whole."""

    def __init__(self) -> None:
        self.broken = False

    async def __call__(self, request: Received, sender: Sender) -> None:
        document = response_document(
            [call_item("fc_1", "c1", "list_steps", "{}"), call_item("fc_2", "c2", "list_steps", "{}")]
        )
        events = stream_events(document)
        await sender.start(200, STREAM_HEADERS)
        if self.broken:
            await sender.body(sse(events).encode(), more=False)
            return
        self.broken = True
        first_call = next(i for i, e in enumerate(events) if e["type"] == "response.output_item.done")
        await sender.body(sse(events[: first_call + 1]).encode())
        # Returning mid-body makes the server drop the connection.


@ADAPTERS
async def test_a_break_after_whole_calls_but_before_any_text_is_asked_for_again(
    adapter_type: AdapterType,
) -> None:
    # A caller acts on calls only once the answer is complete (and --stream shows none of them), so
    # nothing was handed over yet: the broken body is asked for again, as when read whole.
    handler = CallsThenBreak()
    async with serve(handler) as server, adapter_on(server.base_url, adapter_type, max_retries=2) as chat:
        updates = [update async for update in chat.get_streaming_response(MESSAGES)]

    calls = [c.call_id for u in updates for c in u.contents if isinstance(c, FunctionCallContent)]
    assert calls == ["c1", "c2"]  # each once: nothing of the broken attempt reached the caller
    assert len(server.received) == 2
