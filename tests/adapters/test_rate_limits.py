"""Client-side rate limits (``adapters.rate_limits``): counted per minute on a virtual clock, shared by every
run of a container, bounded by each request's deadline, paced by a gateway's ``x-ratelimit-*`` headers."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any, Final, TypeVar

import pytest
from dependency_injector import providers
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.container import Container
from adapters.offline.render import message_item
from adapters.rate_limits import MAX_PACED_SECONDS, Booking, RateLimitedChat, RateLimiter, reset_seconds
from application import ToolRegistry, ToolRunError, estimate_tokens
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    RateLimitedError,
    TextContent,
    Usage,
    updates_of,
)
from tests.adapters.strategies import Arrival, arrivals
from tests.support.gateway import response_document
from tests.support.local_server import Received, Sender, serve
from tests.support.telemetry import Otel

_T = TypeVar("_T")
RUNS: Final = 200


class VirtualTime:
    """A clock and a sleep for the limiter: time moves only when every task it runs is asleep, to the
    earliest wake-up, so minutes of waiting take no time and the order of events is exact."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    async def run(self, work: Sequence[Coroutine[Any, Any, _T]]) -> list[_T]:
        """Run ``work`` concurrently to the end, moving the clock whenever all of it is asleep."""
        tasks = [asyncio.ensure_future(each) for each in work]
        for _ in range(1_000_000):
            await asyncio.sleep(0)
            alive = sum(not task.done() for task in tasks)
            if not alive:
                return [task.result() for task in tasks]
            asleep = [entry for entry in self._sleepers if not entry[2].done()]
            if len(asleep) == alive:
                wake = min(entry[0] for entry in asleep)
                self.now = max(self.now, wake)
                while self._sleepers and self._sleepers[0][0] <= wake:
                    future = heapq.heappop(self._sleepers)[2]
                    if not future.done():
                        future.set_result(None)
        raise AssertionError("the tasks neither finished nor all slept")


class CountingChat:
    """A model that answers at once, noting the (virtual) time each request arrived and reporting
    ``used`` tokens in its usage."""

    def __init__(self, time: VirtualTime, used: int | None = 100) -> None:
        self.time = time
        self.used = used
        self.arrivals: list[float] = []
        self.options: list[ChatOptions | None] = []
        # Each request's size as the limiter estimates it (no output cap is set in these tests).
        self.estimates: list[float] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.arrivals.append(self.time.now)
        self.options.append(options)
        self.estimates.append(estimate_tokens(messages, options))
        await asyncio.sleep(0)
        usage = None if self.used is None else Usage(total_tokens=self.used)
        return ChatResponse((ChatMessage("assistant", (TextContent("ok"),)),), usage=usage)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


def _most_in_a_minute(times: Sequence[float], amounts: Sequence[float] | None = None) -> float:
    """The largest count (or sum of ``amounts``) of ``times`` within any window of 60 s."""
    amounts = amounts if amounts is not None else [1.0] * len(times)
    pairs = sorted(zip(times, amounts, strict=True))
    return max(sum(a for t, a in pairs if start <= t < start + 60.0) for start, _ in pairs)


def _container(chat: Any, limiter: RateLimiter, **agent: Any) -> Container:
    container = Container()
    container.environ.override(providers.Object({}))
    container.config.from_dict(
        {
            "agent": {
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-rate-test",
                "telemetry": False,
                "requests_per_minute": 1,
                **agent,
            }
        }
    )
    container.chat_adapter.override(providers.Object(chat))
    container.rate_limiter.override(providers.Object(limiter))
    return container


@pytest.mark.parametrize(("rpm", "tpm"), [(30, None), (None, 5_000), (45, 9_000)])
async def test_no_minute_holds_more_than_the_limits_under_200_concurrent_runs(
    rpm: int | None, tpm: int | None
) -> None:
    time = VirtualTime()
    chat = CountingChat(time, used=120)
    limiter = RateLimiter(rpm, tpm, clock=time.clock, sleep=time.sleep)
    container = _container(chat, limiter, deadline_seconds=3_000.0)
    loop = container.tool_loop()
    runs = await time.run(
        [
            loop.run([ChatMessage.user(f"Meeting {n}: " + "x" * 400)], None, ToolRegistry())
            for n in range(RUNS)
        ]
    )
    await container.aclose()
    assert [run.text for run in runs] == ["ok"] * RUNS
    assert len(chat.arrivals) == RUNS
    # Every run drew from the one limiter: counted over every window of a minute, never over a limit.
    if rpm is not None:
        assert _most_in_a_minute(chat.arrivals) == rpm
    if tpm is not None:
        assert _most_in_a_minute(chat.arrivals, chat.estimates) <= tpm
    # ...and they waited for it: 200 requests at the tighter limit span this many minutes at least.
    per_minute = min(limit for limit in (rpm, tpm and int(tpm // max(chat.estimates))) if limit)
    assert max(chat.arrivals) >= 60.0 * ((RUNS - 1) // per_minute)


async def test_a_wait_past_the_deadline_fails_at_once_and_sends_nothing() -> None:
    time = VirtualTime()
    chat = CountingChat(time)
    limited = RateLimitedChat(
        chat, RateLimiter(1, clock=time.clock, sleep=time.sleep), deadline_seconds=600.0
    )
    await limited.get_response([ChatMessage.user("first")])
    with pytest.raises(RateLimitedError) as raised:
        await limited.get_response([ChatMessage.user("second")], ChatOptions(deadline_seconds=30.0))
    assert (raised.value.wait_seconds, raised.value.seconds_left, raised.value.limit) == (
        60.0,
        30.0,
        "requests",
    )
    assert time.now == 0.0
    assert len(chat.arrivals) == 1
    assert "agent.requests_per_minute" in str(raised.value)


async def test_a_wait_within_the_deadline_is_taken_off_what_the_request_has_left() -> None:
    time = VirtualTime()
    chat = CountingChat(time)
    limited = RateLimitedChat(
        chat, RateLimiter(1, clock=time.clock, sleep=time.sleep), deadline_seconds=100.0
    )
    await time.run([limited.get_response([ChatMessage.user(str(n))]) for n in range(2)])
    assert chat.arrivals == [0.0, 60.0]
    assert chat.options[0] is None
    assert chat.options[1] is not None
    assert chat.options[1].deadline_seconds == 40.0


async def test_a_run_the_limit_would_hold_past_its_deadline_stops_with_the_deadline_reason() -> None:
    time = VirtualTime()
    chat = CountingChat(time)
    container = _container(
        chat, RateLimiter(1, clock=time.clock, sleep=time.sleep), run_deadline_seconds=30.0
    )
    loop = container.tool_loop()
    first, second = await time.run(
        [loop.run([ChatMessage.user(str(n))], None, ToolRegistry()) for n in range(2)]
    )
    await container.aclose()
    assert (first.stop_reason, first.text) == (None, "ok")
    # Held a minute with 30 s left: no exception, the run ends there as a budget limit ends it.
    assert (second.stop_reason, second.responses) == ("deadline", ())
    assert len(chat.arrivals) == 1


async def test_a_request_larger_than_a_minute_of_tokens_is_an_error_even_with_a_run_deadline() -> None:
    time = VirtualTime()
    chat = CountingChat(time)
    container = _container(
        chat, RateLimiter(None, 100, clock=time.clock, sleep=time.sleep), run_deadline_seconds=30.0
    )
    with pytest.raises(ToolRunError) as raised:
        await container.tool_loop().run([ChatMessage.user("y" * 4_000)], None, ToolRegistry())
    await container.aclose()
    assert isinstance(raised.value, RateLimitedError)
    assert raised.value.limit == "tokens"
    assert chat.arrivals == []


async def _answer(chat: RateLimitedChat, text: str, *, stream: bool) -> ChatResponse:
    if stream:
        return ChatResponse.from_updates(
            [u async for u in chat.get_streaming_response([ChatMessage.user(text)])]
        )
    return await chat.get_response([ChatMessage.user(text)])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("used", "minutes"), [(10, 0.0), (None, 9.0)], ids=["reported", "unreported"])
async def test_the_usage_an_answer_reports_counts_instead_of_the_estimate(
    stream: bool, used: int | None, minutes: float
) -> None:
    time = VirtualTime()
    chat = CountingChat(time, used=used)
    limiter = RateLimiter(None, 1_000, clock=time.clock, sleep=time.sleep)
    limited = RateLimitedChat(chat, limiter, deadline_seconds=6_000.0, max_output_tokens=400)
    # Each request is estimated at 400 output tokens and more (two fit a minute). Reporting 10, each is
    # counted at 10 once answered, and all twenty go in the first minute; reporting nothing, each keeps
    # its estimate, and the twenty take ten minutes.
    for n in range(20):
        await time.run([_answer(limited, f"request {n}", stream=stream)])
    assert max(chat.arrivals) == 60.0 * minutes


async def test_a_request_waiting_for_its_turn_that_is_cancelled_gives_its_place_back() -> None:
    time = VirtualTime()
    limiter = RateLimiter(1, clock=time.clock, sleep=time.sleep)
    limiter.book(1, 600.0)
    waiting = asyncio.ensure_future(limiter.acquire(1, 600.0))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    # Its place (a minute from now) is free again: the next request is booked for it.
    assert limiter.book(1, 600.0).at == 60.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m", 3720.0),
        ("2.5", 2.5),
        ("59", 59.0),
        ("0.5s", 0.5),
    ],
)
def test_a_gateways_reset_time_reads_as_seconds(value: str, seconds: float) -> None:
    assert reset_seconds(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "soon", "-1", "1x", "s", "nan", "inf", "1s later"])
def test_a_reset_time_that_is_not_one_reads_as_none(value: str) -> None:
    assert reset_seconds(value) is None


def test_a_gateway_saying_nothing_is_left_holds_requests_until_its_reset() -> None:
    time = VirtualTime()
    limiter = RateLimiter(1_000, 1_000_000, clock=time.clock, sleep=time.sleep)
    limiter.observe({"x-ratelimit-remaining-requests": "2", "x-ratelimit-reset-requests": "20s"})
    assert [limiter.book(1, 600.0).at for _ in range(3)] == [0.0, 0.0, 20.0]
    limiter.observe({"x-ratelimit-remaining-tokens": "50", "x-ratelimit-reset-tokens": "1h"})
    # A reset further off than MAX_PACED_SECONDS is believed only that far.
    assert limiter.book(60, 600.0).at == MAX_PACED_SECONDS
    # Headers that say nothing usable change nothing.
    limiter.observe({"x-ratelimit-remaining-requests": "lots", "x-ratelimit-remaining-tokens": "-3"})
    assert limiter.book(1, 600.0).at == MAX_PACED_SECONDS


async def test_the_headers_of_a_real_answer_pace_the_container_limiter() -> None:
    async def answers_with_nothing_left(request: Received, sender: Sender) -> None:
        document = response_document([message_item("msg_1", "ok")], response_id="resp_1", model="m")
        headers = {
            "content-type": "application/json",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": "45s",
        }
        await sender.whole(200, json.dumps(document).encode(), headers)

    time = VirtualTime()
    async with serve(answers_with_nothing_left) as server:
        container = Container()
        container.environ.override(providers.Object({}))
        container.config.from_dict(
            {
                "agent": {
                    "base_url": server.base_url,
                    "api_key": "sk-paced",
                    "model": "m",
                    "requests_per_minute": 600,
                }
            }
        )
        container.rate_limiter.override(
            providers.Object(RateLimiter(600, clock=time.clock, sleep=time.sleep))
        )
        try:
            await container.chat().get_response([ChatMessage.user("first")])
            with pytest.raises(RateLimitedError) as raised:
                await container.chat().get_response(
                    [ChatMessage.user("second")], ChatOptions(deadline_seconds=10)
                )
        finally:
            await container.aclose()
    assert raised.value.wait_seconds == 45.0
    assert len(server.received) == 1


async def test_a_held_request_shows_its_wait_on_its_span() -> None:
    time = VirtualTime()
    chat = CountingChat(time)
    with Otel() as otel:
        container = _container(chat, RateLimiter(1, clock=time.clock, sleep=time.sleep), telemetry=True)
        container.tracer_provider.override(providers.Object(otel.tracer_provider))
        container.meter_provider.override(providers.Object(otel.meter_provider))
        chats = [container.chat(), container.chat()]
        await time.run([each.get_response([ChatMessage.user(str(n))]) for n, each in enumerate(chats)])
        await container.aclose()
        spans = otel.named("chat ")
    held = [
        (
            attributes.get("meeting_agents.rate_limit.wait_seconds"),
            attributes.get("meeting_agents.rate_limit.limit"),
        )
        for attributes in (dict(span.attributes or {}) for span in spans)
    ]
    # Two requests a minute apart: the first went at once, the second waited the minute.
    assert len(held) == 2
    assert (None, None) in held
    assert (60.0, "requests") in held


@given(requests=arrivals(max_tokens=400), rpm=st.integers(1, 20), tpm=st.integers(400, 2_000))
@settings(deadline=None)
def test_no_minute_ever_holds_more_than_the_limits_whatever_arrives(
    requests: list[Arrival], rpm: int, tpm: int
) -> None:
    now = 0.0
    limiter = RateLimiter(rpm, tpm, clock=lambda: now)
    booked: list[tuple[float, float]] = []
    last = 0.0
    for arrival in requests:
        now += arrival.gap
        booking = _book(limiter, arrival)
        if isinstance(booking, RateLimitedError):
            # Refused only when its turn is past its deadline, and then at once, booking nothing.
            assert booking.wait_seconds >= arrival.seconds_left
            continue
        # First come, first go; never before it asked; a wait only within its deadline.
        wait = booking.at - now
        assert wait == 0 or 0 < wait < arrival.seconds_left
        assert booking.at >= last
        last = booking.at
        limiter.settle(booking, None if arrival.used is None else Usage(total_tokens=arrival.used))
        booked.append((booking.at, arrival.tokens if arrival.used is None else arrival.used))
    times = [at for at, _ in booked]
    if booked:
        assert _most_in_a_minute(times) <= rpm
        assert _most_in_a_minute(times, [amount for _, amount in booked]) <= tpm


def _book(limiter: RateLimiter, arrival: Arrival) -> Booking | RateLimitedError:
    try:
        return limiter.book(arrival.tokens, arrival.seconds_left)
    except RateLimitedError as refused:
        return refused
