"""Per-request options: tools offered, reasoning settings and the request's initiator."""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Literal

import attrs

__all__ = ["ChatOptions", "Initiator", "ReasoningOptions", "ToolChoice", "ToolSpec"]

Initiator = Literal["user", "agent"]
ToolChoice = Literal["auto", "none", "required"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
ReasoningSummary = Literal["auto", "concise", "detailed"]


def _read_only(value: Mapping[str, object]) -> Mapping[str, object]:
    return types.MappingProxyType(dict(value))


def _tools(value: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    return tuple(value)


@attrs.frozen
class ToolSpec:
    """A function the model may call: its name, what it does and its JSON Schema parameters."""

    name: str = attrs.field(validator=attrs.validators.min_len(1))
    description: str = ""
    parameters: Mapping[str, object] = attrs.field(
        factory=lambda: {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
        converter=_read_only,
        hash=False,
    )
    strict: bool = True


@attrs.frozen
class ReasoningOptions:
    """Reasoning settings passed to the model; None leaves the provider's default."""

    effort: ReasoningEffort | None = None
    summary: ReasoningSummary | None = None


@attrs.frozen
class ChatOptions:
    """Everything about one request except the conversation itself.

    ``tool_choice`` is ``auto``, ``none``, ``required`` or the name of one offered tool.
    ``extra_body`` carries provider-specific keys that are sent as they are.
    ``deadline_seconds``, when set, bounds this request end to end where the chat's own deadline is
    longer (the tool loop passes a run's time left); it is not sent.

    ``response_format`` is the answer's format as the Responses API's ``text.format`` takes it (e.g.
    ``{"type": "json_schema", "name": ..., "schema": ..., "strict": True}``), for a host that brings
    its own schema; ``ToolLoop.run(..., output_type=T)`` derives one from a type instead.
    ``previous_response_id`` continues a conversation the provider stored, so the request carries
    only what is new since that response. ``prompt_cache_key`` groups requests that share a prefix
    for the provider's prompt cache; ``prompt_cache_retention`` asks it to keep them longer
    (``"24h"``).
    """

    instructions: str | None = None
    tools: tuple[ToolSpec, ...] = attrs.field(default=(), converter=_tools)
    tool_choice: ToolChoice | str | None = None
    reasoning: ReasoningOptions | None = None
    max_output_tokens: int | None = None
    initiator: Initiator = attrs.field(default="user", validator=attrs.validators.in_(("user", "agent")))
    model: str | None = None
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    store: bool | None = None
    metadata: Mapping[str, str] | None = attrs.field(default=None, hash=False)
    extra_body: Mapping[str, object] | None = attrs.field(default=None, hash=False)
    deadline_seconds: float | None = None
    response_format: Mapping[str, object] | None = attrs.field(
        default=None, converter=attrs.converters.optional(_read_only), hash=False
    )
    previous_response_id: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
