"""The transport promises over real sockets: an overall deadline, Retry-After against it, no redirects."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Final

import pytest

from adapters.offline.render import event_frame, message_item, sse, stream_events
from domain import ChatMessage, ChatTransportError
from tests.support.gateway import response_document
from tests.support.local_server import (
    ADAPTERS,
    STALLED_CREATED,
    AdapterType,
    Received,
    Sender,
    adapter_on,
    endless_text,
    send_until_gone,
    serve,
    warm_up_event_parsing,
)

# Long enough for the first events of a local answer to arrive on a loaded machine (the SDK's lazy set-up
# is paid before it starts), short enough that the suite stays quick. Never a speed bar: only the deadline
# can end these answers (the peer goes on for PEER_LIMIT), so "deadline" in the error is the proof.
DEADLINE: Final = 1.5
Handler = Callable[[Received, Sender], Awaitable[None]]


async def _keep_alive(_: Received, sender: Sender) -> None:
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(event_frame(STALLED_CREATED).encode())
    await send_until_gone(sender, b": keep-alive\n\n", every=0.05)


async def _trickled_json(_: Received, sender: Sender) -> None:
    body = json.dumps(response_document([message_item("msg_1", "never whole")], response_id="resp_trickle"))
    await sender.start(200, {"content-type": "application/json"})
    for byte in body.encode():
        if sender.disconnected.is_set():
            return
        try:
            await sender.body(bytes([byte]))
        except OSError:
            return
        await asyncio.sleep(0.05)


async def _expect_deadline(handler: Handler, adapter_type: AdapterType) -> ChatTransportError:
    await warm_up_event_parsing()
    async with serve(handler) as server, adapter_on(server.base_url, adapter_type, deadline=DEADLINE) as chat:
        started = time.monotonic()
        with pytest.raises(ChatTransportError) as caught:
            await chat.get_response([ChatMessage.user("hello")])
        # Not a speed bar: a deadline can be late on a loaded machine, never early.
        assert time.monotonic() - started >= DEADLINE
    return caught.value


@ADAPTERS
async def test_a_stream_of_keep_alive_comments_ends_at_the_deadline(adapter_type: AdapterType) -> None:
    error = await _expect_deadline(_keep_alive, adapter_type)

    assert "deadline" in error.message
    assert error.status_code is None
    assert error.partial is not None
    assert error.partial.response_id == "resp_slow"


@ADAPTERS
async def test_an_endless_run_of_deltas_ends_at_the_deadline_with_the_text_that_arrived(
    adapter_type: AdapterType,
) -> None:
    error = await _expect_deadline(lambda _, sender: endless_text(sender), adapter_type)

    assert "deadline" in error.message
    assert error.partial is not None
    assert error.partial.text
    assert set(error.partial.text) == {"x"}


@ADAPTERS
async def test_a_json_body_trickled_a_byte_at_a_time_ends_at_the_deadline(adapter_type: AdapterType) -> None:
    error = await _expect_deadline(_trickled_json, adapter_type)

    assert "deadline" in error.message


def _rate_limited_then_ok(retry_after: dict[str, str]) -> Handler:
    async def handler(request: Received, sender: Sender) -> None:
        if request.headers.get("x-stainless-retry-count", "0") == "0":
            error = {"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limited"}}
            await sender.whole(
                429, json.dumps(error).encode(), {"content-type": "application/json", **retry_after}
            )
            return
        events = stream_events(
            response_document([message_item("msg_1", "after the wait")], response_id="resp_ok")
        )
        if request.json().get("stream"):
            await sender.whole(200, sse(events).encode(), {"content-type": "text/event-stream"})
        else:
            await sender.whole(
                200, json.dumps(events[-1]["response"]).encode(), {"content-type": "application/json"}
            )

    return handler


@ADAPTERS
async def test_a_retry_after_that_would_pass_the_deadline_is_not_waited(adapter_type: AdapterType) -> None:
    handler = _rate_limited_then_ok({"retry-after": "300"})
    async with (
        serve(handler) as server,
        adapter_on(server.base_url, adapter_type, deadline=30, max_retries=2) as chat,
    ):
        with pytest.raises(ChatTransportError) as caught:
            await chat.get_response([ChatMessage.user("hello")])

    # The 429 itself, at once: a wait that was begun would have ended in the deadline's error instead.
    assert caught.value.status_code == 429
    assert "deadline" not in caught.value.message
    assert caught.value.attempts == 1
    assert len(server.received) == 1


@ADAPTERS
async def test_an_attempt_the_deadline_cuts_before_any_answer_is_counted(adapter_type: AdapterType) -> None:
    async def refused_then_silent(request: Received, sender: Sender) -> None:
        if request.headers.get("x-stainless-retry-count", "0") == "0":
            error = {"error": {"message": "try again", "type": "server_error", "code": "overloaded"}}
            await sender.whole(
                500, json.dumps(error).encode(), {"content-type": "application/json", "retry-after-ms": "20"}
            )
            return
        await sender.silent_until_gone()

    await warm_up_event_parsing()
    async with (
        serve(refused_then_silent) as server,
        adapter_on(server.base_url, adapter_type, deadline=DEADLINE, max_retries=2) as chat,
    ):
        with pytest.raises(ChatTransportError) as caught:
            await chat.get_response([ChatMessage.user("hello")])

    assert "deadline" in caught.value.message
    # The second attempt was sent and went unanswered until the deadline: it is one of the attempts.
    assert len(server.received) == 2
    assert caught.value.attempts == 2
    assert caught.value.status_code is None


@ADAPTERS
async def test_a_retry_after_within_the_deadline_is_waited_and_retried(adapter_type: AdapterType) -> None:
    handler = _rate_limited_then_ok({"retry-after-ms": "20"})
    async with (
        serve(handler) as server,
        adapter_on(server.base_url, adapter_type, deadline=5, max_retries=2) as chat,
    ):
        response = await chat.get_response([ChatMessage.user("hello")])

    assert response.text == "after the wait"
    assert len(server.received) == 2


@ADAPTERS
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_refused_and_its_target_receives_nothing(
    adapter_type: AdapterType, status: int
) -> None:
    async def elsewhere(_: Received, sender: Sender) -> None:
        events = stream_events(response_document([message_item("msg_1", "answer from an impostor")]))
        await sender.whole(200, sse(events).encode(), {"content-type": "text/event-stream"})

    async with serve(elsewhere) as impostor:

        async def redirecting(_: Received, sender: Sender) -> None:
            await sender.whole(status, b"", {"location": f"{impostor.base_url}/responses"})

        async with (
            serve(redirecting) as gateway,
            # A host's client that follows redirects: the adapter refuses them all the same.
            adapter_on(
                gateway.base_url, adapter_type, follow_redirects=True, max_retries=2, deadline=DEADLINE
            ) as chat,
        ):
            with pytest.raises(ChatTransportError) as caught:
                await chat.get_response([ChatMessage.user("the whole transcript")])

    assert caught.value.status_code == status
    assert len(gateway.received) == 1
    assert impostor.received == []
