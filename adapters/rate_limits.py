"""A ChatPort decorator: the client's own requests and tokens per minute, shared by every run of a process."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Final, Literal

import attrs
import httpx

from adapters.telemetry import annotate_request
from adapters.telemetry import conventions as c
from application import estimate_tokens
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    RateLimitedError,
    Usage,
)

__all__ = [
    "MAX_PACED_SECONDS",
    "WINDOW_SECONDS",
    "Booking",
    "PacingHook",
    "RateLimitedChat",
    "RateLimiter",
    "reset_seconds",
]

WINDOW_SECONDS: Final = 60.0
"""The limits are per minute: every window this long holds at most the limit."""
MAX_PACED_SECONDS: Final = 60.0
"""A gateway's reset time is believed up to this long: a longer one (a daily limit, a hostile value)
is taken as this, and asked about again when it has passed."""

LimitName = Literal["requests", "tokens"]

_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d*)?)(ms|h|m|s)")
_UNIT_SECONDS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def reset_seconds(value: str) -> float | None:
    """A gateway's ``x-ratelimit-reset-*`` value in seconds: OpenAI's durations (``1s``, ``6m0s``,
    ``20ms``) or a plain number of seconds (LiteLLM's); None for anything else."""
    text = value.strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(number + unit for number, unit in parts) != text:
            return None
        seconds = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        count = int(value.strip())
    except ValueError:
        return None
    return count if count >= 0 else None


@attrs.define(eq=False)
class _Entry:
    """One request's share of a window: when it goes, and how much it counts."""

    at: float
    amount: float


class _Window:
    """What went (and is booked to go) within the last minute, against one limit; and what the gateway
    last said is left of its own: at most ``paced_left`` more until ``paced_until``."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        # In the order they go: each booking goes no earlier than the one before (first come, first go).
        self.entries: deque[_Entry] = deque()
        self.paced_left: float | None = None
        self.paced_until = -math.inf

    def earliest(self, amount: float, now: float, after: float) -> float:
        """The first time from ``after`` on at which ``amount`` more keeps every minute within the limit
        and within what the gateway said is left; ``math.inf`` when ``amount`` alone is over the limit."""
        entries = self.entries
        while entries and entries[0].at <= now - WINDOW_SECONDS:
            entries.popleft()
        at = after
        limit = self.limit
        if limit is not None:
            if amount > limit:
                return math.inf
            # The window ending at ``at`` holds every entry after ``at - WINDOW_SECONDS`` (all are <= at).
            counted = [entry for entry in entries if entry.at > at - WINDOW_SECONDS]
            total = sum(entry.amount for entry in counted)
            index = 0
            while total + amount > limit:
                # Move the window's end past the oldest entries still in it, a moment at a time.
                oldest = counted[index].at
                while index < len(counted) and counted[index].at == oldest:
                    total -= counted[index].amount
                    index += 1
                at = max(at, oldest + WINDOW_SECONDS)
        if self.paced_left is not None and at < self.paced_until and self.paced_left < amount:
            at = self.paced_until
        return at

    def book(self, amount: float, at: float) -> _Entry:
        entry = _Entry(at, amount)
        self.entries.append(entry)
        if self.paced_left is not None and at < self.paced_until:
            self.paced_left -= amount
        return entry

    def cancel(self, entry: _Entry) -> None:
        with contextlib.suppress(ValueError):  # already out of the last minute
            self.entries.remove(entry)

    def pace(self, left: int, until: float) -> None:
        self.paced_left, self.paced_until = float(left), until


@attrs.define(eq=False)
class Booking:
    """A request's place under the limits: when it may go (``at``) and its share of each window."""

    at: float
    waited: float
    limit: LimitName | None
    requests: _Entry
    tokens: _Entry


class RateLimiter:
    """Requests and tokens per minute for everything sent through it: no window of a minute ever holds
    more than ``requests_per_minute`` requests or ``tokens_per_minute`` tokens (a request counts its
    estimate until its usage is known, then its usage).

    Requests go first come, first go: each is booked, as it asks, the earliest time that keeps every
    window within the limits, and waits until then; a wait past the request's deadline is refused at
    once (:class:`domain.RateLimitedError`) and books nothing. A gateway's ``x-ratelimit-remaining-*``
    and ``x-ratelimit-reset-*`` headers (:meth:`observe`) can only hold requests back further.

    ``clock`` and ``sleep`` are the event loop's (``time.monotonic``, ``asyncio.sleep``); tests give
    a virtual clock.
    """

    def __init__(
        self,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._requests = _Window(requests_per_minute)
        self._tokens = _Window(tokens_per_minute)
        self._clock = clock
        self._sleep = sleep
        self._last = -math.inf

    def __repr__(self) -> str:
        requests, tokens = self._requests.limit, self._tokens.limit
        return f"RateLimiter(requests_per_minute={requests}, tokens_per_minute={tokens})"

    def book(self, tokens: int, seconds_left: float) -> Booking:
        """Book a request of about ``tokens`` tokens, or raise :class:`RateLimitedError` when it could
        not go within ``seconds_left``; synchronous, so that no other request books in between."""
        now = self._clock()
        after = max(now, self._last)
        by_requests = self._requests.earliest(1, now, after)
        by_tokens = self._tokens.earliest(tokens, now, after)
        at = max(by_requests, by_tokens)
        wait = at - now
        limit: LimitName | None = None
        if at > after:
            limit = "tokens" if by_tokens > by_requests else "requests"
        if wait > 0 and wait >= seconds_left:
            raise self._refused(limit or "requests", wait, seconds_left, tokens)
        self._last = at
        return Booking(at, max(wait, 0.0), limit, self._requests.book(1, at), self._tokens.book(tokens, at))

    async def acquire(self, tokens: int, seconds_left: float) -> Booking:
        """:meth:`book`, then wait until the booking's time; a wait cut short gives its place back."""
        booking = self.book(tokens, seconds_left)
        if booking.waited > 0:
            try:
                await self._sleep(booking.waited)
            except BaseException:
                self.cancel(booking)
                raise
        return booking

    def cancel(self, booking: Booking) -> None:
        """A booked request that never went: its place is freed."""
        self._requests.cancel(booking.requests)
        self._tokens.cancel(booking.tokens)

    def settle(self, booking: Booking, usage: Usage | None) -> None:
        """The request was answered: it counts the tokens its usage reports instead of its estimate."""
        if usage is None:
            return
        used = usage.total_tokens
        if used is None and (usage.input_tokens is not None or usage.output_tokens is not None):
            used = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        if used is not None and used >= 0:
            booking.tokens.amount = used

    def observe(self, headers: Mapping[str, str]) -> None:
        """What a gateway's answer says is left of its limits (``x-ratelimit-remaining-requests`` and
        ``-tokens``, until ``x-ratelimit-reset-requests`` and ``-tokens``, a minute when it says no
        reset, at most :data:`MAX_PACED_SECONDS`): no more than that goes until then."""
        now = self._clock()
        for window, kind in ((self._requests, "requests"), (self._tokens, "tokens")):
            left = _count(headers.get(f"x-ratelimit-remaining-{kind}"))
            if left is None:
                continue
            reset_header = headers.get(f"x-ratelimit-reset-{kind}")
            reset = reset_seconds(reset_header) if reset_header is not None else None
            window.pace(left, now + min(WINDOW_SECONDS if reset is None else reset, MAX_PACED_SECONDS))

    def _refused(self, limit: LimitName, wait: float, seconds_left: float, tokens: int) -> RateLimitedError:
        window = self._requests if limit == "requests" else self._tokens
        key = f"agent.{limit}_per_minute"
        if math.isinf(wait):
            message = (
                f"a request of about {tokens} tokens is more than {key} ({window.limit}) lets go in a minute"
            )
        else:
            message = (
                f"the client-side rate limit ({key} = {window.limit}, or what the gateway said is left) "
                f"would hold this request {wait:.1f} s, past its deadline "
                f"({max(seconds_left, 0.0):.1f} s left)"
            )
        return RateLimitedError(message, wait_seconds=wait, seconds_left=seconds_left, limit=limit)


class PacingHook:
    """An httpx response hook that tells ``limiter`` what each answer's rate-limit headers say."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter

    async def __call__(self, response: httpx.Response) -> None:
        self.limiter.observe(response.headers)


@attrs.define(eq=False)
class RateLimitedChat:
    """A ``ChatPort`` whose requests wait for their turn under a shared :class:`RateLimiter`.

    The wait counts against the request's deadline (``deadline_seconds``, or the options' when
    shorter; the inner chat gets what is left); a wait past it raises :class:`RateLimitedError` at
    once. A request counts its input tokens estimated from its size (``application.estimate_tokens``)
    plus its output cap, then what its usage reports. A request held shows the wait on its span.
    """

    _inner: ChatPort
    _limiter: RateLimiter
    _deadline_seconds: float = attrs.field(kw_only=True, repr=False)
    _max_output_tokens: int | None = attrs.field(default=None, kw_only=True, repr=False)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        booking, asked = await self._turn(messages, options)
        response = await self._inner.get_response(messages, asked)
        self._limiter.settle(booking, response.usage)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        booking, asked = await self._turn(messages, options)
        updates = aiter(self._inner.get_streaming_response(messages, asked))
        usage: Usage | None = None
        try:
            async for update in updates:
                if update.usage is not None:
                    usage = update.usage
                yield update
        finally:
            close = getattr(updates, "aclose", None)
            if close is not None:
                await close()
        self._limiter.settle(booking, usage)

    async def _turn(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None
    ) -> tuple[Booking, ChatOptions | None]:
        """Wait for the request's turn; the options it then goes with (its deadline less the wait)."""
        seconds = self._deadline_seconds
        if options is not None and options.deadline_seconds is not None:
            seconds = min(seconds, options.deadline_seconds)
        output = (options.max_output_tokens if options is not None else None) or self._max_output_tokens
        tokens = estimate_tokens(messages, options) + (output or 0)
        booking = await self._limiter.acquire(tokens, seconds)
        if booking.waited <= 0:
            return booking, options
        annotate_request({c.RATE_LIMIT_WAIT: booking.waited, c.RATE_LIMIT_LIMIT: booking.limit or "requests"})
        left = max(seconds - booking.waited, 0.0)
        return booking, attrs.evolve(options or ChatOptions(), deadline_seconds=left)
