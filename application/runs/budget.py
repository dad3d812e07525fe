"""A run's budget: what one run may spend (requests, tokens, tool calls, dollars, time) and when it must stop.

The loop asks :class:`Spending` before each request and each tool call; a limit that the next step
would pass ends the run gracefully, with what it has and the :data:`StopReason`. The adapters only
report usage (tokens, ``Usage.cost_usd``); they know nothing of budgets.
"""

from __future__ import annotations

import json
import math
import time
import typing
from collections.abc import Iterable
from typing import Final, Literal

import attrs

from application.scrubbing import shown_json
from domain import (
    ChatMessage,
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    Usage,
)

__all__ = [
    "MIN_OUTPUT_TOKENS",
    "STOP_REASONS",
    "Ledger",
    "Reserved",
    "RunBudget",
    "Spending",
    "StopReason",
    "estimate_tokens",
]

StopReason = Literal[
    "budget.requests",
    "budget.input_tokens",
    "budget.output_tokens",
    "budget.tool_calls",
    "budget.cost_usd",
    "budget.unmetered",
    "deadline",
    "too_many_calls",
]
STOP_REASONS: Final[tuple[StopReason, ...]] = typing.get_args(StopReason)

MIN_OUTPUT_TOKENS: Final = 16
"""The smallest ``max_output_tokens`` the Responses API takes: with less output left, no request goes."""

CHARS_PER_TOKEN: Final = 4
"""How new text is counted in tokens before the provider has counted it: about four characters a token."""


def _positive_int(instance: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or value < 1):
        raise ValueError(f"run_budget.{attribute.name}: expected a positive whole number, got {value!r}")


def _positive_number(instance: object, attribute: attrs.Attribute[float | None], value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"run_budget.{attribute.name}: expected a positive number, got {value!r}")


@attrs.frozen
class RunBudget:
    """What one run may spend; a limit left None does not limit.

    ``requests`` counts requests sent to the model, ``tool_calls`` the calls the run answers (refused
    ones included), ``input_tokens``, ``output_tokens`` and ``cost_usd`` (what the gateway billed, as
    ``Usage.cost_usd`` reports it) are summed over the run's answers.

    A token limit is kept only by counting what the answers report: an answer with calls to run whose
    usage leaves out a count a token limit is set on ends the run (``budget.unmetered``), since the
    run could otherwise spend without end on a gateway that reports nothing. ``allow_unmetered`` lets
    such a run go on, its unreported tokens uncounted (a gateway known not to report usage).
    """

    requests: int | None = attrs.field(default=None, validator=_positive_int)
    input_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    output_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    tool_calls: int | None = attrs.field(default=None, validator=_positive_int)
    cost_usd: float | None = attrs.field(default=None, validator=_positive_number)
    allow_unmetered: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))

    def __bool__(self) -> bool:
        """Whether any limit is set."""
        limits = (self.requests, self.input_tokens, self.output_tokens, self.tool_calls, self.cost_usd)
        return any(value is not None for value in limits)

    def unmetered(self, usage: Usage | None) -> bool:
        """Whether ``usage`` leaves out a count that a token limit of this budget needs (and the budget
        does not allow that)."""
        if self.allow_unmetered:
            return False
        reported = usage or Usage()
        return (self.input_tokens is not None and reported.input_tokens is None) or (
            self.output_tokens is not None and reported.output_tokens is None
        )


def _chars(messages: Iterable[ChatMessage]) -> int:
    total = 0
    for message in messages:
        for content in message.contents:
            if isinstance(content, TextContent | ReasoningContent):
                total += len(content.text)
            elif isinstance(content, FunctionCallContent):
                total += len(content.name) + len(content.raw_arguments)
            elif isinstance(content, FunctionResultContent):
                result = content.result
                total += len(result) if isinstance(result, str) else len(shown_json(result, default=str))
    return total


def estimate_tokens(messages: Iterable[ChatMessage], options: ChatOptions | None = None) -> int:
    """About how many tokens ``messages`` (and the instructions and tools of ``options``) take as input:
    their characters over :data:`CHARS_PER_TOKEN`, rounded up."""
    chars = _chars(messages)
    if options is not None:
        chars += len(options.instructions or "")
        chars += sum(
            len(spec.name) + len(spec.description) + len(json.dumps(dict(spec.parameters), default=str))
            for spec in options.tools
        )
    return math.ceil(chars / CHARS_PER_TOKEN)


@attrs.define
class Reserved:
    """What the requests in flight can at most add: reserved before each is sent, released when it is
    answered (its reported usage then counts instead)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Reserved, sign: int = 1) -> None:
        self.requests += sign * other.requests
        self.input_tokens += sign * other.input_tokens
        self.output_tokens += sign * other.output_tokens
        # Never below zero from rounding: what is left in flight cannot cost less than nothing.
        self.cost_usd = max(self.cost_usd + sign * other.cost_usd, 0.0)


@attrs.define
class Ledger:
    """What one call (a run, or every chunk run of one long meeting) has spent and has in flight,
    against one budget and one deadline.

    Several runs may draw from one ledger at once (a long meeting's chunks, at most
    ``chunk_concurrency`` of them). The design that keeps "never passed, only approached" true for
    them is reservation: before a request is sent, what it can at most add (one request, its output
    cap, its estimated input, their estimated cost) is checked against spent plus reserved and, if it
    fits, reserved in the same synchronous step (no ``await`` between check and reservation, so on
    one event loop no other run can slip in between); its answer releases the reservation and adds
    what it reported. A tool call is counted when it is admitted. The first limit a run meets is
    ``stopped``; the other runs meet it at their next check, and a caller starts no new run after it.
    """

    budget: RunBudget
    deadline: float | None = None
    """``time.monotonic()`` at which the call must have ended; None for no deadline."""
    requests: int = 0
    tool_calls: int = 0
    usage: Usage = attrs.Factory(Usage)
    reserved: Reserved = attrs.Factory(Reserved)
    stopped: StopReason | None = None
    """The first limit a run of this ledger stopped at; None while every run may go on."""

    @classmethod
    def start(cls, budget: RunBudget, deadline_seconds: float | None) -> Ledger:
        deadline = None if deadline_seconds is None else time.monotonic() + deadline_seconds
        return cls(budget, deadline)

    def stop(self, reason: StopReason | None) -> StopReason | None:
        """Note ``reason`` (when it is the first) and return it."""
        if self.stopped is None:
            self.stopped = reason
        return reason

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self) -> bool:
        left = self.seconds_left()
        return left is not None and left <= 0

    def price(self) -> float | None:
        """Dollars a token so far (input and output alike), or None before any answer reported both."""
        usage = self.usage
        tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        if not usage.cost_usd or not tokens:
            return None
        return usage.cost_usd / tokens


@attrs.define
class Spending:
    """One run's view of its :class:`Ledger`: the checks before each step, with what this run's own
    conversation lets it estimate.

    Tokens and cost are what the answers reported. Before a request the check adds what that
    request can at most add: one request; for output tokens its ``max_output_tokens`` (which
    :meth:`output_cap` lowers to what is left, so the provider stops there); for input tokens the
    previous request's input and output plus the new messages at four characters a token (the whole
    conversation so estimated for the first); for cost, the ledger's price per token so far times
    those input tokens and the output cap. What other runs of the ledger have in flight counts as
    spent. A limit is so approached, never knowingly passed.
    """

    ledger: Ledger
    # The last answer's input and output tokens, and how many messages the conversation had then.
    last_input: int | None = None
    last_output: int | None = None
    last_cost: float | None = None
    last_length: int = 0
    pending: Reserved | None = None
    """What this run's request in flight has reserved in the ledger."""

    @classmethod
    def start(cls, budget: RunBudget, deadline_seconds: float | None) -> Spending:
        return cls(Ledger.start(budget, deadline_seconds))

    @property
    def budget(self) -> RunBudget:
        return self.ledger.budget

    @property
    def deadline(self) -> float | None:
        return self.ledger.deadline

    def seconds_left(self) -> float | None:
        return self.ledger.seconds_left()

    def out_of_time(self) -> bool:
        return self.ledger.out_of_time()

    def output_cap(self, configured: int | None) -> int | None:
        """The ``max_output_tokens`` the next request may have: ``configured``, lowered to the output
        budget left (None when neither limits it)."""
        ledger = self.ledger
        limit = ledger.budget.output_tokens
        if limit is None:
            return configured
        left = limit - (ledger.usage.output_tokens or 0) - ledger.reserved.output_tokens
        return left if configured is None else min(configured, left)

    def next_input(self, conversation: tuple[ChatMessage, ...], options: ChatOptions) -> int:
        """The input tokens the next request is expected to take (see the class)."""
        if self.last_input is None:
            return estimate_tokens(conversation, options)
        added = estimate_tokens(conversation[self.last_length :])
        return self.last_input + (self.last_output or 0) + added

    def before_request(
        self, conversation: tuple[ChatMessage, ...], options: ChatOptions, output_cap: int | None
    ) -> StopReason | None:
        """The limit the next request would pass (noted in the ledger), or None when it may go: what
        it can at most add is then reserved until :meth:`answered` or :meth:`settle`."""
        reason, reservation = self._check(conversation, options, output_cap)
        if reason is not None:
            return self.ledger.stop(reason)
        self.settle()
        self.pending = reservation
        self.ledger.reserved.add(reservation)
        return None

    def _check(
        self, conversation: tuple[ChatMessage, ...], options: ChatOptions, output_cap: int | None
    ) -> tuple[StopReason | None, Reserved]:
        ledger = self.ledger
        budget, reserved, usage = ledger.budget, ledger.reserved, ledger.usage
        reservation = Reserved(requests=1, output_tokens=output_cap or 0)
        if ledger.out_of_time():
            return "deadline", reservation
        if not budget:
            return None, reservation
        if budget.requests is not None and ledger.requests + reserved.requests + 1 > budget.requests:
            return "budget.requests", reservation
        if budget.output_tokens is not None and (output_cap is None or output_cap < MIN_OUTPUT_TOKENS):
            return "budget.output_tokens", reservation
        if budget.input_tokens is None and budget.cost_usd is None:
            return None, reservation
        next_input = self.next_input(conversation, options)
        reservation.input_tokens = next_input
        if (
            budget.input_tokens is not None
            and (usage.input_tokens or 0) + reserved.input_tokens + next_input > budget.input_tokens
        ):
            return "budget.input_tokens", reservation
        if budget.cost_usd is not None:
            next_output = output_cap if output_cap is not None else (self.last_output or 0)
            reservation.cost_usd = self._next_cost(next_input + next_output)
            if (usage.cost_usd or 0.0) + reserved.cost_usd + reservation.cost_usd > budget.cost_usd:
                return "budget.cost_usd", reservation
        return None, reservation

    def before_tool_call(self) -> StopReason | None:
        """The limit answering one more call would pass (noted in the ledger), or None when it may be
        answered: it is then counted."""
        ledger = self.ledger
        if ledger.out_of_time():
            return ledger.stop("deadline")
        limit = ledger.budget.tool_calls
        if limit is not None and ledger.tool_calls + 1 > limit:
            return ledger.stop("budget.tool_calls")
        ledger.tool_calls += 1
        return None

    def answered(self, usage: Usage | None, conversation_length: int) -> None:
        """A request was answered with ``usage``; the conversation, answer included, holds
        ``conversation_length`` messages."""
        self._release()
        ledger = self.ledger
        ledger.requests += 1
        if usage is not None:
            ledger.usage += usage
        self.last_input = usage.input_tokens if usage is not None else None
        self.last_output = usage.output_tokens if usage is not None else None
        self.last_cost = usage.cost_usd if usage is not None else None
        self.last_length = conversation_length

    def settle(self) -> None:
        """The request in flight, if any, ended with no answer (it failed, or the run was abandoned):
        it counts as one request sent, and its reservation is released."""
        if self._release():
            self.ledger.requests += 1

    def _release(self) -> bool:
        pending, self.pending = self.pending, None
        if pending is None:
            return False
        self.ledger.reserved.add(pending, -1)
        return True

    def _next_cost(self, tokens: int) -> float:
        # The ledger's price per token so far times the next request's tokens; with costs but no token
        # counts, what this run's last request cost (the next one sends all it sent, and more).
        price = self.ledger.price()
        if price is not None:
            return price * tokens
        if not self.ledger.usage.cost_usd:
            return 0.0
        return self.last_cost or 0.0
