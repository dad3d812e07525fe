"""Chat messages and the typed contents they carry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, TypeAlias

import attrs

from domain.arguments import ArgumentsParseError, parse_arguments

__all__ = [
    "REASONING_SEPARATOR",
    "ChatMessage",
    "Content",
    "FunctionCallContent",
    "FunctionResultContent",
    "JsonValue",
    "ProviderItemContent",
    "ReasoningContent",
    "Role",
    "TextContent",
]

Role = Literal["system", "developer", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "developer", "user", "assistant", "tool")

JsonValue: TypeAlias = (
    "bool | int | float | str | list[JsonValue] | tuple[JsonValue, ...] | Mapping[str, JsonValue] | None"
)


@attrs.frozen
class TextContent:
    """Plain text written by a person or by the model.

    ``provider_item`` is set on text the provider sent: its output item as JSON (an object, without
    the texts of its parts, which the item's contents hold), with the item's id, status, phase and
    each part's annotations. Every part of one item carries the same string; the item goes back to
    the provider in history as it came. Text a host writes has None and goes as a plain message.
    """

    text: str
    provider_item: str | None = None


# Between the parts of one reasoning item in ``ReasoningContent.text``.
REASONING_SEPARATOR: Final = "\n\n"


@attrs.frozen
class ReasoningContent:
    """The model's reasoning: readable text and, where the provider sent it, the encrypted state.

    ``summary`` keeps the summary parts as they arrived so that the reasoning item can be sent back
    unchanged; ``text`` is what a person reads (the summary parts, then any reasoning text).
    ``provider_item`` is the output item as the provider sent it (JSON, without its encrypted
    content, which ``encrypted_content`` holds); None when unknown.
    """

    text: str
    item_id: str | None = None
    encrypted_content: str | None = None
    summary: tuple[str, ...] = ()
    provider_item: str | None = None

    @classmethod
    def from_parts(
        cls,
        summary: Sequence[str] = (),
        texts: Sequence[str] = (),
        *,
        item_id: str | None = None,
        encrypted_content: str | None = None,
        provider_item: str | None = None,
    ) -> ReasoningContent:
        """One reasoning item from its summary parts and its reasoning-text parts, in order."""
        return cls(
            REASONING_SEPARATOR.join((*summary, *texts)),
            item_id,
            encrypted_content,
            tuple(summary),
            provider_item,
        )


@attrs.frozen
class FunctionCallContent:
    """A function call requested by the model.

    ``raw_arguments`` is exactly the string the model wrote and is what goes back in history.
    ``arguments`` and ``parse_error`` are derived from it; build instances with :meth:`parse`.
    ``provider_item`` is the output item as the provider sent it (JSON, without the arguments);
    None for a call a host built. Equality covers every field; the hash covers the identity fields only.
    """

    call_id: str
    name: str
    raw_arguments: str
    arguments: Mapping[str, object] | None = attrs.field(default=None, hash=False)
    parse_error: ArgumentsParseError | None = attrs.field(default=None, hash=False)
    item_id: str | None = None
    provider_item: str | None = attrs.field(default=None, hash=False)

    @classmethod
    def parse(
        cls,
        *,
        call_id: str,
        name: str,
        raw_arguments: str,
        item_id: str | None = None,
        provider_item: str | None = None,
    ) -> FunctionCallContent:
        """Build a call from the model's raw argument string; never raises for bad arguments."""
        parsed = parse_arguments(raw_arguments)
        if isinstance(parsed, ArgumentsParseError):
            return cls(call_id, name, raw_arguments, None, parsed, item_id, provider_item)
        return cls(call_id, name, raw_arguments, parsed, None, item_id, provider_item)

    @property
    def is_valid(self) -> bool:
        """True when the arguments parsed into a JSON object."""
        return self.parse_error is None and self.arguments is not None


@attrs.frozen
class FunctionResultContent:
    """The result of one function call, matched to it by ``call_id``.

    ``result`` is a JSON value; a string goes on the wire as it is, anything else as compact JSON.
    """

    call_id: str
    result: JsonValue = attrs.field(hash=False)
    is_error: bool = False


@attrs.frozen
class ProviderItemContent:
    """An output item this package does not interpret (compaction, hosted tool calls, ...).

    ``raw_json`` is the item as the provider sent it, every field and value kept (written
    compactly, keys sorted, so one item reads the same however it arrived); it goes back in
    history unchanged, so opaque state such as compaction survives a round trip.
    """

    type: str
    raw_json: str
    item_id: str | None = None


Content: TypeAlias = (
    TextContent | ReasoningContent | FunctionCallContent | FunctionResultContent | ProviderItemContent
)


def as_contents(value: Iterable[Content]) -> tuple[Content, ...]:
    """The converter of every ``contents`` field: any iterable of contents, kept as a tuple."""
    return tuple(value)


class HasContents:
    """What a value with ``contents`` tells of them: its text and its function calls."""

    __slots__ = ()
    contents: tuple[Content, ...]

    @property
    def text(self) -> str:
        """The text parts joined in order (reasoning is not text)."""
        return "".join(c.text for c in self.contents if isinstance(c, TextContent))

    @property
    def function_calls(self) -> tuple[FunctionCallContent, ...]:
        return tuple(c for c in self.contents if isinstance(c, FunctionCallContent))


@attrs.frozen
class ChatMessage(HasContents):
    """One message of a conversation: a role and an ordered tuple of contents."""

    role: Role = attrs.field(validator=attrs.validators.in_(ROLES))
    contents: tuple[Content, ...] = attrs.field(default=(), converter=as_contents)

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        return cls("system", (TextContent(text),))

    @classmethod
    def developer(cls, text: str) -> ChatMessage:
        return cls("developer", (TextContent(text),))

    @classmethod
    def user(cls, text: str) -> ChatMessage:
        return cls("user", (TextContent(text),))

    @classmethod
    def assistant(cls, text: str) -> ChatMessage:
        return cls("assistant", (TextContent(text),))
