"""Work proportional to the body, bounded by the deadline and the loop, over real sockets.

The SDK builds a whole event or document in one synchronous step, a millisecond or more per output
item: 10,000 untyped items in one 40 KB ``response.completed`` once held a 1 s request for 15-33 s and
stalled every task of the host. The adapters now fold such a body a few hundred items at a time and
give the loop control in between.

Nothing here is timed (how long that takes is the machine's business, and ``benchmarks/cpu.py``
reports it). What is counted instead: the fold's per-item steps, and how many of them ran between
two turns the loop gave a heartbeat task beside the request. A deadline is made to pass at a known
step of the fold, and the request must end there with the deadline's typed error and what had arrived.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol

import pytest

from adapters.offline.render import call_item, event_frame, message_item, stream_events
from adapters.responses import chat_adapters, folding, incremental, to_domain
from domain import ChatError, ChatMessage, ChatResponse, ChatTransportError, MalformedResponseError
from tests.support.gateway import response_document
from tests.support.local_server import ADAPTERS, AdapterType, Received, Sender, adapter_on, serve

ITEMS: Final = 10_000
# The yielding rule: the loop gets control every 256 output items of each pass over a terminal event
# (folding._STEP) or of a heavy JSON document (chat_adapters._ITEMS_PER_STEP). A pass ends with a
# stretch of fewer, and the next pass starts without a pause, and one item can take a few counted
# steps (matched, finished, ended): four times the rule is the most that may run between two turns.
STEPS_BETWEEN_TURNS: Final = 4 * max(folding._STEP, chat_adapters._ITEMS_PER_STEP)
# A deadline no other timer in the test process uses, so that the request's own scope can be found.
DEADLINE: Final = 321.0


class Fold:
    """Counts the fold's per-item steps; a heartbeat task counts how many ran between two of its turns.

    The steps are the per-item functions of the fold: matching a terminal event's item to what
    streamed, finishing and ending an item, mapping an item of a document. The heartbeat starts at
    the first step and takes every turn the loop offers it (``sleep(0)``), so ``longest`` is the
    most steps the fold ran without giving the loop control.
    """

    def __init__(self) -> None:
        self.steps = 0
        self.turns = 0
        self.longest = 0
        self.started = asyncio.Event()
        self._last = 0
        # (step, action): at that step, ``action`` runs once (e.g. the deadline passes there).
        self._at: tuple[int, Callable[[], None]] | None = None

    def counted(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            self.steps += 1
            self.started.set()
            if self._at is not None and self.steps == self._at[0]:
                self._at[1]()
            return function(*args, **kwargs)

        return step

    def at(self, step: int, action: Callable[[], None]) -> None:
        self._at = (step, action)

    def _turn(self) -> None:
        self.longest = max(self.longest, self.steps - self._last)
        self._last = self.steps

    async def heartbeat(self) -> None:
        await self.started.wait()
        while True:
            await asyncio.sleep(0)
            self.turns += 1
            self._turn()

    def reset(self) -> None:
        """The steps from here on are counted (the warm-up's are not)."""
        self.steps = 0

    def close(self) -> None:
        """The stretch after the last turn counts too."""
        self._turn()


@pytest.fixture
def fold(monkeypatch: pytest.MonkeyPatch) -> Fold:
    counter = Fold()
    monkeypatch.setattr(folding, "_match", counter.counted(folding._match))
    monkeypatch.setattr(folding, "item_contents", counter.counted(to_domain.item_contents))
    monkeypatch.setattr(folding._Item, "finish", counter.counted(folding._Item.finish))
    monkeypatch.setattr(folding._Item, "end", counter.counted(folding._Item.end))
    monkeypatch.setattr(chat_adapters, "item_contents", counter.counted(to_domain.item_contents))
    return counter


@pytest.fixture
def pass_the_deadline(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Makes the deadline of the latest request made with ``DEADLINE`` pass now: its scope, as the adapter
    opened it, is rescheduled to the loop's present time."""
    found: list[asyncio.Timeout] = []
    real = asyncio.timeout

    def timeout(delay: float | None) -> asyncio.Timeout:
        scope = real(delay)
        if delay == DEADLINE:
            found.append(scope)
        return scope

    def passes() -> None:
        found[-1].reschedule(asyncio.get_running_loop().time())

    monkeypatch.setattr(asyncio, "timeout", timeout)
    return passes


WARM_DOCUMENT: Final = response_document([message_item("msg_0", "warm")])
WARM_UP: Final = {
    "application/json": json.dumps(WARM_DOCUMENT).encode(),
    "text/event-stream": "".join(event_frame(e) for e in stream_events(WARM_DOCUMENT)).encode(),
}


def _served(body: bytes, content_type: str) -> Any:
    """The hostile ``body`` from the second request on; the first gets an ordinary answer, so that the
    SDK's one-time work (pydantic builds its models' schemas on first use) is not what is counted."""
    served: list[bytes] = []

    async def handler(_: Received, sender: Sender) -> None:
        if not served:
            served.append(WARM_UP[content_type])
            await sender.whole(200, WARM_UP[content_type], {"content-type": content_type})
            return
        await sender.whole(200, body, {"content-type": content_type})

    return handler


def _completed_with(output: list[Any]) -> bytes:
    # An ordinary response.created, as the SDK expects it, then the hostile terminal event.
    created = stream_events(response_document([], response_id="resp_many"))[0]
    completed = {
        "type": "response.completed",
        "response": {"id": "resp_many", "object": "response", "status": "completed", "output": output},
    }
    return (event_frame(created) + event_frame(completed)).encode()


def _body(output: list[Any], shape: str) -> tuple[bytes, str]:
    if shape == "stream":
        return _completed_with(output), "text/event-stream"
    document = {"id": "resp_many", "object": "response", "status": "completed", "output": output}
    return json.dumps(document).encode(), "application/json"


class _Counter(Protocol):
    """What a request is measured with: reset after the warm-up, a heartbeat task, closed at the end."""

    def reset(self) -> None: ...

    async def heartbeat(self) -> None: ...

    def close(self) -> None: ...


@asynccontextmanager
async def _beating(counter: _Counter) -> AsyncIterator[None]:
    task = asyncio.get_running_loop().create_task(counter.heartbeat())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        counter.close()


async def _asked(handler: Any, adapter_type: AdapterType, counter: _Counter, *, deadline: float) -> object:
    """One request for the hostile body (after a warm-up the counter does not count), with the heartbeat."""
    async with serve(handler) as server, adapter_on(server.base_url, adapter_type, deadline=deadline) as chat:
        async with adapter_on(server.base_url, adapter_type, deadline=60) as warm:
            await warm.get_response([ChatMessage.user("warm up")])
        counter.reset()
        async with _beating(counter):
            try:
                return await chat.get_response([ChatMessage.user("hello")])
            except ChatError as error:
                return error


@ADAPTERS
@pytest.mark.parametrize("shape", ["stream", "json"])
async def test_ten_thousand_untyped_items_are_folded_with_the_loop_running_every_few_hundred(
    adapter_type: AdapterType, shape: str, fold: Fold
) -> None:
    # One readable item last: an output none of whose items can be read is malformed, not an answer.
    body, content_type = _body([*[{}] * (ITEMS - 1), message_item("msg_1", "the one readable item")], shape)
    assert len(body) < 50_000

    outcome = await _asked(_served(body, content_type), adapter_type, fold, deadline=60)

    assert isinstance(outcome, ChatResponse)
    assert outcome.response_id == "resp_many"
    assert outcome.text == "the one readable item"
    # Every item was looked at, and the loop had control at least once per STEPS_BETWEEN_TURNS steps.
    assert fold.steps >= ITEMS
    assert fold.longest <= STEPS_BETWEEN_TURNS, f"{fold.longest} steps ran without the loop"
    assert fold.turns >= fold.steps // STEPS_BETWEEN_TURNS


@ADAPTERS
@pytest.mark.parametrize("shape", ["stream", "json"])
async def test_a_deadline_that_passes_in_the_middle_of_a_fold_ends_the_request_there_with_what_arrived(
    adapter_type: AdapterType, shape: str, fold: Fold, pass_the_deadline: Callable[[], None]
) -> None:
    """The deadline fires only when the loop gets control: it must get it within a few hundred items
    of the moment the deadline passes, so that the request ends there rather than after the fold."""
    calls = [
        call_item(f"fc_{n}", f"call_{n}", "record_decision", '{"decision": "ship"}') for n in range(ITEMS)
    ]
    body, content_type = _body(calls, shape)
    passes_at = ITEMS // 4
    fold.at(passes_at, pass_the_deadline)

    outcome = await _asked(_served(body, content_type), adapter_type, fold, deadline=DEADLINE)

    assert isinstance(outcome, ChatTransportError), outcome
    assert outcome.message == f"no complete answer within agent.deadline_seconds={DEADLINE:g} s"
    assert outcome.status_code is None
    # The fold stopped at the first turn the loop had after the deadline, not at its end.
    assert passes_at <= fold.steps <= passes_at + STEPS_BETWEEN_TURNS
    # What had arrived goes with the error: the response's id, and the calls mapped before the deadline.
    assert outcome.partial is not None
    assert outcome.partial.response_id == "resp_many"
    if shape == "json":
        assert 0 < len(outcome.partial.function_calls) <= fold.steps


@ADAPTERS
@pytest.mark.parametrize("shape", ["stream", "json"])
async def test_ten_thousand_calls_in_one_response_are_folded_with_the_loop_running_between(
    adapter_type: AdapterType, shape: str, fold: Fold
) -> None:
    """Real calls, each parsed: more work per item than the attacker's empty objects (before, the loop
    stood still for the whole fold, and the matching of items was quadratic)."""
    calls = [
        call_item(f"fc_{n}", f"call_{n}", "record_decision", '{"decision": "ship"}') for n in range(ITEMS)
    ]
    body, content_type = _body(calls, shape)

    outcome = await _asked(_served(body, content_type), adapter_type, fold, deadline=60)

    assert isinstance(outcome, ChatResponse)
    assert [call.call_id for call in outcome.function_calls] == [f"call_{n}" for n in range(ITEMS)]
    assert fold.steps >= ITEMS
    assert fold.longest <= STEPS_BETWEEN_TURNS, f"{fold.longest} steps ran without the loop"


@ADAPTERS
@pytest.mark.parametrize("shape", ["stream", "json"])
async def test_more_output_items_than_max_output_items_is_malformed_with_what_arrived(
    adapter_type: AdapterType, shape: str, fold: Fold
) -> None:
    output = [message_item(f"msg_{n}", "hi") for n in range(ITEMS + 1)]
    if shape == "stream":
        handler = _served(_completed_with(output), "text/event-stream")
    else:
        document = response_document(output, response_id="resp_over")
        handler = _served(json.dumps(document).encode(), "application/json")

    outcome = await _asked(handler, adapter_type, fold, deadline=60)

    assert isinstance(outcome, MalformedResponseError)
    assert outcome.message == f"the response holds more than agent.max_output_items ({ITEMS}) output items"
    assert outcome.partial is not None
    assert outcome.response_id in ("resp_many", "resp_over")


# One line of several MiB: json.loads would parse it in one call the loop cannot break into (and a
# worker thread would not help: it holds the GIL). It is parsed in steps instead.
LONG_TEXT: Final = 'A line with "quotes", a \\ backslash, {braces} and é.\n' * 50_000
STEP_TEXT: Final = 3 * incremental.PIECE + 64


class Parses:
    """Counts the text handed to the C scanner by the incremental parses; a heartbeat task counts how
    much of it was handed over between two of its turns."""

    def __init__(self) -> None:
        self.parsers: list[incremental.JsonInSteps] = []
        self.longest = 0
        self.turns = 0
        self._last = 0
        self._at: tuple[int, Callable[[], None]] | None = None

    @property
    def scanned(self) -> int:
        return sum(parser.scanned for parser in self.parsers)

    def at(self, scanned: int, action: Callable[[], None]) -> None:
        self._at = (scanned, action)

    def reset(self) -> None:
        """Nothing to forget: the warm-up's short answer is never parsed in steps."""

    def close(self) -> None:
        """The heartbeat measured every stretch it saw; nothing is left to count."""

    async def heartbeat(self) -> None:
        while True:
            await asyncio.sleep(0)
            now = self.scanned
            self.longest = max(self.longest, now - self._last)
            self._last = now
            self.turns += 1
            if self._at is not None and now >= self._at[0]:
                self._at[1]()
                self._at = None


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Parses:
    counter = Parses()
    real = incremental.JsonInSteps.__init__

    def init(parser: incremental.JsonInSteps, *args: Any, **kwargs: Any) -> None:
        real(parser, *args, **kwargs)
        counter.parsers.append(parser)

    monkeypatch.setattr(incremental.JsonInSteps, "__init__", init)
    return counter


def _long_bodies() -> dict[str, list[Any]]:
    calls = [
        call_item(f"fc_{n}", f"call_{n}", "record_decision", json.dumps({"decision": "ship " * 60}))
        for n in range(ITEMS)
    ]
    return {"long text": [message_item("msg_0", LONG_TEXT)], "calls": calls}


@ADAPTERS
@pytest.mark.parametrize("shape", ["stream", "json"])
@pytest.mark.parametrize("what", ["long text", "calls"])
async def test_a_line_of_megabytes_is_parsed_with_the_loop_running_every_few_pieces(
    adapter_type: AdapterType, shape: str, what: str, parses: Parses
) -> None:
    output = _long_bodies()[what]
    body, content_type = _body(output, shape)
    assert len(body) > 2 * incremental.LARGE

    outcome = await _asked(_served(body, content_type), adapter_type, parses, deadline=60)

    assert isinstance(outcome, ChatResponse), outcome
    if what == "long text":
        assert outcome.text == LONG_TEXT
    else:
        assert [call.call_id for call in outcome.function_calls] == [f"call_{n}" for n in range(ITEMS)]
    # The one large line was parsed in steps: all of it went to the scanner, never more than a few
    # pieces of it between two turns of the loop.
    assert len(parses.parsers) == 1
    assert parses.scanned >= len(body) * 0.9
    assert parses.longest <= STEP_TEXT, f"{parses.longest} characters parsed without the loop"
    assert parses.turns >= parses.scanned // STEP_TEXT


@ADAPTERS
@pytest.mark.parametrize("shape", ["stream", "json"])
async def test_a_deadline_that_passes_in_the_middle_of_a_parse_ends_the_request_there(
    adapter_type: AdapterType, shape: str, parses: Parses, pass_the_deadline: Callable[[], None]
) -> None:
    body, content_type = _body(_long_bodies()["calls"], shape)
    passes_at = len(body) // 4
    parses.at(passes_at, pass_the_deadline)

    outcome = await _asked(_served(body, content_type), adapter_type, parses, deadline=DEADLINE)

    assert isinstance(outcome, ChatTransportError), outcome
    assert outcome.message == f"no complete answer within agent.deadline_seconds={DEADLINE:g} s"
    # The parse stopped at the first turn the loop had after the deadline, not at the end of the line.
    assert passes_at <= parses.scanned <= passes_at + 2 * STEP_TEXT
    if shape == "stream":
        # What had arrived goes with the error: the response.created before the large line.
        assert outcome.partial is not None
        assert outcome.partial.response_id == "resp_many"
