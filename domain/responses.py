"""What a model answered: messages, metadata and token usage."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Literal

import attrs

from domain.messages import ChatMessage, FunctionCallContent

__all__ = ["ChatResponse", "FinishReason", "Usage"]

FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@attrs.frozen
class Usage:
    """Token counts as the provider reported them; a count it did not report is None."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages field by field; a count missing on both sides stays None."""
        return Usage(
            _add(self.input_tokens, other.input_tokens),
            _add(self.output_tokens, other.output_tokens),
            _add(self.total_tokens, other.total_tokens),
            _add(self.cached_input_tokens, other.cached_input_tokens),
            _add(self.reasoning_tokens, other.reasoning_tokens),
        )


def _messages(value: Iterable[ChatMessage]) -> tuple[ChatMessage, ...]:
    return tuple(value)


@attrs.frozen
class ChatResponse:
    """One complete answer (or a whole tool-calling run) with the metadata that came with it."""

    messages: tuple[ChatMessage, ...] = attrs.field(default=(), converter=_messages)
    response_id: str | None = None
    model_id: str | None = None
    created_at: datetime | None = None
    status: str | None = None
    finish_reason: FinishReason | None = None
    usage: Usage | None = None

    @property
    def text(self) -> str:
        """All assistant text, message by message, joined with newlines."""
        return "\n".join(m.text for m in self.messages if m.role == "assistant" and m.text)

    @property
    def function_calls(self) -> tuple[FunctionCallContent, ...]:
        """Every function call of every message, in order."""
        return tuple(call for m in self.messages for call in m.function_calls)
