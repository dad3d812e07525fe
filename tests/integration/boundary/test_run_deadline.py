"""``agent.run_deadline_seconds`` over real sockets: against a gateway that answers the first request and
then stalls, the run ends at its deadline (each request's own deadline is the run's time left), gracefully,
with what it had: the first round's calls answered, the text that had arrived, stop_reason "deadline"."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Final

import pytest

from adapters.offline.render import (
    call_item,
    event_frame,
    response_document,
    sse,
    stream_events,
)
from application import LoopSettings, RunFinished, ToolLoop, ToolRun
from domain import ChatMessage, ChatOptions, ChatTransportError, FunctionResultContent, ToolSpec
from tests.support.doubles import RecordingTools
from tests.support.local_server import ADAPTERS, AdapterType, Received, Sender, adapter_on, serve

RUN_DEADLINE: Final = 1.0
# Each request alone could take this long: only the run's deadline can end the stalled one.
REQUEST_DEADLINE: Final = 60.0
# A peer that never finishes stops by itself after this long, whatever the client does.
PEER_LIMIT: Final = 30.0
# Far beyond the deadline, so a loaded machine does not fail the test, far below the peer's own limit.
BOUND: Final = PEER_LIMIT / 3

FIRST: Final = response_document(
    [call_item("fc_1", "call_1", "lookup", "{}")], response_id="resp_first", model="gpt-slow", created_at=1
)
CREATED: Final = {
    "type": "response.created",
    "sequence_number": 0,
    "response": {
        "id": "resp_slow",
        "object": "response",
        "model": "gpt-slow",
        "status": "in_progress",
        "output": [],
    },
}
ADDED: Final = {
    "type": "response.output_item.added",
    "sequence_number": 1,
    "output_index": 0,
    "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []},
}
DELTA: Final = {
    "type": "response.output_text.delta",
    "sequence_number": 2,
    "item_id": "msg_1",
    "output_index": 0,
    "content_index": 0,
    "delta": "x",
    "logprobs": [],
}


async def _first_quick_then_stalled(request: Received, sender: Sender) -> None:
    """The first request gets a call at once; every later one a stream of text that never ends."""
    if not any(item.get("type") == "function_call_output" for item in request.json()["input"]):
        if request.json().get("stream"):
            body = sse(stream_events(FIRST)).encode()
            await sender.whole(200, body, {"content-type": "text/event-stream"})
        else:
            await sender.whole(200, json.dumps(FIRST).encode(), {"content-type": "application/json"})
        return
    await sender.start(200, {"content-type": "text/event-stream"})
    await sender.body(event_frame(CREATED).encode() + event_frame(ADDED).encode())
    loop = asyncio.get_running_loop()
    stop = loop.time() + PEER_LIMIT
    while not sender.disconnected.is_set() and loop.time() < stop:
        try:
            await sender.body(event_frame(DELTA).encode())
        except OSError:
            return
        await asyncio.sleep(0.02)


async def _run(adapter_type: AdapterType, *, events: bool) -> tuple[ToolRun, float, RecordingTools]:
    tools = RecordingTools()
    options = ChatOptions(instructions="Look it up.", tools=(ToolSpec("lookup"),))
    messages = [ChatMessage.user("hello")]
    async with (
        serve(_first_quick_then_stalled) as server,
        adapter_on(server.base_url, adapter_type, deadline=REQUEST_DEADLINE) as chat,
    ):
        # The first stalled stream a process reads pays for the SDK's lazy set-up of its event types (seconds
        # of blocking work on a loaded machine): paid here, once, so the run's deadline is not spent on it.
        stalled = [*messages, ChatMessage("tool", (FunctionResultContent("call_0", "warm-up"),))]
        with pytest.raises(ChatTransportError):
            await chat.get_response(stalled, ChatOptions(deadline_seconds=0.2))
        loop = ToolLoop(chat, LoopSettings(run_deadline_seconds=RUN_DEADLINE))
        started = time.monotonic()
        if events:
            finished = [e async for e in loop.run_events(messages, options, tools)][-1]
            assert isinstance(finished, RunFinished)
            run = finished.result
        else:
            run = await loop.run(messages, options, tools)
        elapsed = time.monotonic() - started
        assert len(server.received) == 3
    return run, elapsed, tools


@ADAPTERS
@pytest.mark.parametrize("events", [False, True], ids=["run", "run_events"])
async def test_the_run_ends_at_its_deadline_with_what_it_had(adapter_type: AdapterType, events: bool) -> None:
    run, elapsed, tools = await _run(adapter_type, events=events)

    assert run.stop_reason == "deadline"
    assert not run.complete
    # The first round stands: its answer and its call, run once.
    assert run.responses[0].response_id == "resp_first"
    assert [record.call.call_id for record in run.tool_calls] == ["call_1"]
    assert [call.call_id for call in tools.calls] == ["call_1"]
    # The stalled answer ends the run as what had arrived of it: text, cut short.
    assert len(run.responses) == 2
    assert run.final.status == "incomplete"
    assert run.text
    assert set(run.text) == {"x"}
    # Bounded by the run's deadline, not the request's (60 s) nor the peer's (30 s).
    assert RUN_DEADLINE <= elapsed < BOUND
