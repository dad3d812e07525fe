"""A run's budget: what one run may spend (requests, tokens, tool calls, dollars, time) and when it must stop.

The loop asks :class:`Spending` before each request and each tool call; a limit that the next step
would pass ends the run gracefully, with what it has and the :data:`StopReason`. The adapters only
report usage (tokens, ``Usage.cost_usd``); they know nothing of budgets.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable
from typing import Final, Literal

import attrs

from domain import (
    ChatMessage,
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    Usage,
)

__all__ = ["MIN_OUTPUT_TOKENS", "STOP_REASONS", "RunBudget", "Spending", "StopReason", "estimate_tokens"]

StopReason = Literal[
    "budget.requests",
    "budget.input_tokens",
    "budget.output_tokens",
    "budget.tool_calls",
    "budget.cost_usd",
    "deadline",
]
STOP_REASONS: Final[tuple[StopReason, ...]] = (
    "budget.requests",
    "budget.input_tokens",
    "budget.output_tokens",
    "budget.tool_calls",
    "budget.cost_usd",
    "deadline",
)

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
    """

    requests: int | None = attrs.field(default=None, validator=_positive_int)
    input_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    output_tokens: int | None = attrs.field(default=None, validator=_positive_int)
    tool_calls: int | None = attrs.field(default=None, validator=_positive_int)
    cost_usd: float | None = attrs.field(default=None, validator=_positive_number)

    def __bool__(self) -> bool:
        """Whether any limit is set."""
        return any(value is not None for value in attrs.astuple(self))


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
                total += len(result) if isinstance(result, str) else len(json.dumps(result, default=str))
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
class Spending:
    """What one run has spent, checked against its budget and deadline before each step.

    Tokens and cost are what the answers reported. Before a request the check adds what that
    request can at most add: one request; for output tokens its ``max_output_tokens`` (which
    :meth:`output_cap` lowers to what is left, so the provider stops there); for input tokens the
    previous request's input and output plus the new messages at four characters a token (the whole
    conversation so estimated for the first); for cost, the run's price per token so far times
    those input tokens and the output cap. A limit is so approached, never knowingly passed.
    """

    budget: RunBudget
    deadline: float | None = None
    """``time.monotonic()`` at which the run must have ended; None for no deadline."""
    requests: int = 0
    tool_calls: int = 0
    usage: Usage = attrs.Factory(Usage)
    # The last answer's input and output tokens, and how many messages the conversation had then.
    last_input: int | None = None
    last_output: int | None = None
    last_cost: float | None = None
    last_length: int = 0

    @classmethod
    def start(cls, budget: RunBudget, deadline_seconds: float | None) -> Spending:
        deadline = None if deadline_seconds is None else time.monotonic() + deadline_seconds
        return cls(budget, deadline)

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def out_of_time(self) -> bool:
        left = self.seconds_left()
        return left is not None and left <= 0

    def output_cap(self, configured: int | None) -> int | None:
        """The ``max_output_tokens`` the next request may have: ``configured``, lowered to the output
        budget left (None when neither limits it)."""
        limit = self.budget.output_tokens
        if limit is None:
            return configured
        left = limit - (self.usage.output_tokens or 0)
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
        """The limit the next request would pass, or None when it may go."""
        budget = self.budget
        if self.out_of_time():
            return "deadline"
        if not budget:
            return None
        if budget.requests is not None and self.requests + 1 > budget.requests:
            return "budget.requests"
        if budget.output_tokens is not None and (output_cap is None or output_cap < MIN_OUTPUT_TOKENS):
            return "budget.output_tokens"
        if budget.input_tokens is None and budget.cost_usd is None:
            return None
        next_input = self.next_input(conversation, options)
        if (
            budget.input_tokens is not None
            and (self.usage.input_tokens or 0) + next_input > budget.input_tokens
        ):
            return "budget.input_tokens"
        if budget.cost_usd is not None:
            next_output = output_cap if output_cap is not None else (self.last_output or 0)
            if (self.usage.cost_usd or 0.0) + self._next_cost(next_input + next_output) > budget.cost_usd:
                return "budget.cost_usd"
        return None

    def before_tool_call(self) -> StopReason | None:
        """The limit answering one more call would pass, or None when it may be answered."""
        if self.out_of_time():
            return "deadline"
        limit = self.budget.tool_calls
        if limit is not None and self.tool_calls + 1 > limit:
            return "budget.tool_calls"
        return None

    def answered(self, usage: Usage | None, conversation_length: int) -> None:
        """A request was answered with ``usage``; the conversation, answer included, holds
        ``conversation_length`` messages."""
        self.requests += 1
        if usage is not None:
            self.usage += usage
        self.last_input = usage.input_tokens if usage is not None else None
        self.last_output = usage.output_tokens if usage is not None else None
        self.last_cost = usage.cost_usd if usage is not None else None
        self.last_length = conversation_length

    def _next_cost(self, tokens: int) -> float:
        # The run's price per token so far times the next request's tokens; with costs but no token
        # counts, what the last request cost (the next one sends all it sent, and more).
        usage = self.usage
        if not usage.cost_usd:
            return 0.0
        spent_tokens = (usage.input_tokens or 0) + (usage.output_tokens or 0)
        if not spent_tokens:
            return self.last_cost or 0.0
        return usage.cost_usd / spent_tokens * tokens
