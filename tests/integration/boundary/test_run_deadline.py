"""``agent.run_deadline_seconds`` over real sockets: against a gateway that answers the first request and
then stalls, the run ends at its deadline (each request's own deadline is the run's time left), gracefully,
with what it had: the first round's calls answered, the text that had arrived, stop_reason "deadline"."""

from __future__ import annotations

import json
import time
from typing import Final

import pytest

from adapters.offline.render import (
    call_item,
    response_document,
    sse,
    stream_events,
)
from application import LoopSettings, RunFinished, ToolLoop, ToolRun
from domain import ChatMessage, ChatOptions, ToolSpec
from tests.support.doubles import RecordingTools
from tests.support.local_server import (
    ADAPTERS,
    AdapterType,
    Received,
    Sender,
    adapter_on,
    endless_text,
    serve,
    warm_up_event_parsing,
)

# Long enough for the first round (one local request and a tool call) on a loaded machine, short enough
# that the suite stays quick.
RUN_DEADLINE: Final = 3.0
# Each request alone could take this long: only the run's deadline can end the stalled one.
REQUEST_DEADLINE: Final = 60.0

FIRST: Final = response_document(
    [call_item("fc_1", "call_1", "lookup", "{}")], response_id="resp_first", model="gpt-slow", created_at=1
)


async def _first_quick_then_stalled(request: Received, sender: Sender) -> None:
    """The first request gets a call at once; every later one a stream of text that never ends."""
    if not any(item.get("type") == "function_call_output" for item in request.json()["input"]):
        if request.json().get("stream"):
            body = sse(stream_events(FIRST)).encode()
            await sender.whole(200, body, {"content-type": "text/event-stream"})
        else:
            await sender.whole(200, json.dumps(FIRST).encode(), {"content-type": "application/json"})
        return
    await endless_text(sender)


async def _run(adapter_type: AdapterType, *, events: bool) -> tuple[ToolRun, float, RecordingTools]:
    tools = RecordingTools()
    options = ChatOptions(instructions="Look it up.", tools=(ToolSpec("lookup"),))
    messages = [ChatMessage.user("hello")]
    async with (
        serve(_first_quick_then_stalled) as server,
        adapter_on(server.base_url, adapter_type, deadline=REQUEST_DEADLINE) as chat,
    ):
        # What a process pays once, paid before the run's deadline starts: the SDK's lazy set-up of its event
        # types (seconds on a loaded machine) and a first exchange with this server (the quick answer).
        await warm_up_event_parsing()
        await chat.get_response(messages, options)
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
    # Ended by the run's deadline (a stream the peer ended, PEER_LIMIT later, would have no "x" text
    # cut short but an error); a deadline can be late on a loaded machine, never early.
    assert elapsed >= RUN_DEADLINE
