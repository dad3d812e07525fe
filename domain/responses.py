"""What a model answered, whole or as streamed updates: messages, metadata and token usage."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Final, Literal, TypeVar

import attrs

from domain.messages import (
    REASONING_SEPARATOR,
    ROLES,
    ChatMessage,
    Content,
    FunctionCallContent,
    HasContents,
    ReasoningContent,
    Role,
    TextContent,
    as_contents,
)

__all__ = ["ChatResponse", "ChatResponseUpdate", "FinishReason", "Usage", "updates_of"]

FinishReason = Literal["stop", "tool_calls", "length", "content_filter"]


_Number = TypeVar("_Number", int, float)


def _add(a: _Number | None, b: _Number | None) -> _Number | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@attrs.frozen
class Usage:
    """Token counts as the provider reported them, and what the request cost; what was not reported is None.

    ``cost_usd`` is what the gateway billed for the request, in US dollars, as it said so (LiteLLM's
    ``x-litellm-response-cost`` header); None when it did not say.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages field by field; a value missing on both sides stays None."""
        return Usage(
            _add(self.input_tokens, other.input_tokens),
            _add(self.output_tokens, other.output_tokens),
            _add(self.total_tokens, other.total_tokens),
            _add(self.cached_input_tokens, other.cached_input_tokens),
            _add(self.reasoning_tokens, other.reasoning_tokens),
            _add(self.cost_usd, other.cost_usd),
        )

    @property
    def cached_share(self) -> float | None:
        """The share of the input tokens the provider read from its prompt cache (0.0 to 1.0); None when
        either count was not reported or no input was counted."""
        if self.cached_input_tokens is None or not self.input_tokens:
            return None
        return self.cached_input_tokens / self.input_tokens

    def with_cost(self, cost_usd: float | None) -> Usage:
        """This usage with ``cost_usd`` set; None leaves it as it is."""
        return self if cost_usd is None else attrs.evolve(self, cost_usd=cost_usd)


def _messages(value: Iterable[ChatMessage]) -> tuple[ChatMessage, ...]:
    return tuple(value)


@attrs.frozen
class ChatResponseUpdate(HasContents):
    """One piece of a streamed answer, as it arrives; :meth:`ChatResponse.from_updates` folds them.

    ``contents`` holds text and reasoning as pieces, and each function call (or other item) once
    and whole. ``item_index`` and ``part_index`` say where the pieces belong: pieces of the same
    item and part, in any number of updates, fold into one content.

    - A ``TextContent`` piece continues the text part (``item_index``, ``part_index``); every part
      becomes one ``TextContent``, the parts of one item in ``part_index`` order. A piece's
      ``provider_item``, when set, becomes the part's (usually the part's last piece brings it).
    - A ``ReasoningContent`` piece continues part ``part_index`` of the reasoning item
      ``item_index``: a summary part when the piece's ``summary`` is ``(piece_text,)``, a reasoning
      text part when it is ``()``. The whole item becomes one ``ReasoningContent``
      (:meth:`ReasoningContent.from_parts`). A piece with ``part_index`` None adds no part, only
      its ``item_id``, ``encrypted_content`` and ``provider_item`` (which usually arrive when the
      item is done).
    - With ``item_index`` None, and for any other content (function calls, provider items, a
      ``ReasoningContent`` whose ``summary`` is neither ``()`` nor ``(text,)``), each content is
      whole and stands alone. A ``TextContent`` piece with ``part_index`` None belongs to part 0.

    ``position`` is where the item stands in the answer (the provider's ``output_index``), when the
    stream says so: contents appear in ``position`` order, an update without one standing right after
    the update that arrived before it (so updates that give none appear in the order their item's
    first piece arrived). An item only a stream's end reveals can so take its place among items that
    went out before it. A new message starts when the ``role`` changes. ``response_id``, ``model_id``,
    ``created_at``, ``status``, ``finish_reason``, ``usage`` and ``served_by`` are set on the updates
    where they become known; the last value given wins.
    """

    contents: tuple[Content, ...] = attrs.field(default=(), converter=as_contents)
    role: Role = attrs.field(default="assistant", validator=attrs.validators.in_(ROLES))
    item_index: int | None = None
    part_index: int | None = None
    response_id: str | None = None
    model_id: str | None = None
    created_at: datetime | None = None
    status: str | None = None
    finish_reason: FinishReason | None = None
    usage: Usage | None = None
    served_by: str | None = None
    position: int | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        """The response metadata this update gives, by field name: those of ``response_id``,
        ``model_id``, ``created_at``, ``status``, ``finish_reason``, ``usage`` and ``served_by`` that
        are not None.

        Folding an answer's updates is ``metadata.update(update.metadata)`` for each, in order.
        """
        if (
            self.response_id is None
            and self.model_id is None
            and self.created_at is None
            and self.status is None
            and self.finish_reason is None
            and self.usage is None
            and self.served_by is None
        ):
            # A streamed piece, most updates of an answer: no dictionary is built to be read empty.
            return {}
        return {name: value for name in _METADATA if (value := getattr(self, name)) is not None}


# The streamed pieces of an answer, one per delta event (tens of thousands for a long answer), are
# built by the constructors below: every slot is set directly, as attrs' own __init__ sets it, but
# without the converter and the validator, which have nothing to check in values typed as these are.
# The public constructors keep every check; tests hold each piece equal to the one they build.
_new: Final = object.__new__


def _setters(cls: type, *names: str) -> tuple[Callable[[object, object], None], ...]:
    """The slots' own setters (a frozen class's ``__setattr__`` refuses; the slot does not)."""
    return tuple(vars(cls)[name].__set__ for name in names)


(
    _set_contents,
    _set_role,
    _set_item_index,
    _set_part_index,
    _set_response_id,
    _set_model_id,
    _set_created_at,
    _set_status,
    _set_finish_reason,
    _set_usage,
    _set_served_by,
    _set_position,
) = _setters(
    ChatResponseUpdate,
    "contents",
    "role",
    "item_index",
    "part_index",
    "response_id",
    "model_id",
    "created_at",
    "status",
    "finish_reason",
    "usage",
    "served_by",
    "position",
)
_set_text, _set_provider_item = _setters(TextContent, "text", "provider_item")
(
    _set_reasoning_text,
    _set_item_id,
    _set_encrypted_content,
    _set_summary,
    _set_reasoning_provider_item,
) = _setters(ReasoningContent, "text", "item_id", "encrypted_content", "summary", "provider_item")


def piece_update(
    content: TextContent | ReasoningContent,
    item_index: int,
    part_index: int | None,
    position: int | None = None,
) -> ChatResponseUpdate:
    """``ChatResponseUpdate((content,), "assistant", item_index, part_index, position=position)``: one
    streamed piece."""
    update = _new(ChatResponseUpdate)
    _set_contents(update, (content,))
    _set_role(update, "assistant")
    _set_item_index(update, item_index)
    _set_part_index(update, part_index)
    _set_response_id(update, None)
    _set_model_id(update, None)
    _set_created_at(update, None)
    _set_status(update, None)
    _set_finish_reason(update, None)
    _set_usage(update, None)
    _set_served_by(update, None)
    _set_position(update, position)
    return update


def text_piece(
    text: str, item_index: int, part_index: int | None, position: int | None = None
) -> ChatResponseUpdate:
    """``piece_update(TextContent(text), item_index, part_index, position)``: a delta of an answer's text."""
    content = _new(TextContent)
    _set_text(content, text)
    _set_provider_item(content, None)
    # piece_update's steps in line: one of these is built for every text delta a caller streams.
    update = _new(ChatResponseUpdate)
    _set_contents(update, (content,))
    _set_role(update, "assistant")
    _set_item_index(update, item_index)
    _set_part_index(update, part_index)
    _set_response_id(update, None)
    _set_model_id(update, None)
    _set_created_at(update, None)
    _set_status(update, None)
    _set_finish_reason(update, None)
    _set_usage(update, None)
    _set_served_by(update, None)
    _set_position(update, position)
    return update


def reasoning_piece(
    text: str, item_index: int, part_index: int | None, *, summary: bool, position: int | None = None
) -> ChatResponseUpdate:
    """One delta of a reasoning item: of a summary part (``ReasoningContent(text, summary=(text,))``)
    or of its reasoning text (``ReasoningContent(text)``)."""
    content = _new(ReasoningContent)
    _set_reasoning_text(content, text)
    _set_item_id(content, None)
    _set_encrypted_content(content, None)
    _set_summary(content, (text,) if summary else ())
    _set_reasoning_provider_item(content, None)
    return piece_update(content, item_index, part_index, position)


class _TextItem:
    """The text parts of one item, each a list of pieces until the fold is done, and the provider's
    item each part came with."""

    __slots__ = ("parts", "provider")

    def __init__(self) -> None:
        self.parts: dict[int, list[str]] = {}
        self.provider: dict[int, str] = {}

    def add(self, piece: TextContent, part: int) -> None:
        self.parts.setdefault(part, []).append(piece.text)
        if piece.provider_item is not None:
            self.provider[part] = piece.provider_item

    def contents(self) -> list[Content]:
        provider = self.provider
        return [TextContent("".join(self.parts[index]), provider.get(index)) for index in sorted(self.parts)]


class _ReasoningItem:
    """One reasoning item: its summary parts, its text parts, and the item's id and encrypted state."""

    __slots__ = ("encrypted_content", "item_id", "provider_item", "summary", "texts")

    def __init__(self) -> None:
        self.summary: dict[int, list[str]] = {}
        self.texts: dict[int, list[str]] = {}
        self.item_id: str | None = None
        self.encrypted_content: str | None = None
        self.provider_item: str | None = None

    def add(self, piece: ReasoningContent, part_index: int | None) -> None:
        self.item_id = piece.item_id if piece.item_id is not None else self.item_id
        if piece.encrypted_content is not None:
            self.encrypted_content = piece.encrypted_content
        if piece.provider_item is not None:
            self.provider_item = piece.provider_item
        if part_index is not None:
            parts = self.summary if piece.summary else self.texts
            parts.setdefault(part_index, []).append(piece.text)

    def contents(self) -> list[Content]:
        return [
            ReasoningContent.from_parts(
                ["".join(self.summary[index]) for index in sorted(self.summary)],
                ["".join(self.texts[index]) for index in sorted(self.texts)],
                item_id=self.item_id,
                encrypted_content=self.encrypted_content,
                provider_item=self.provider_item,
            )
        ]


class _Whole:
    __slots__ = ("content",)

    def __init__(self, content: Content) -> None:
        self.content = content

    def contents(self) -> list[Content]:
        return [self.content]


_METADATA: Final = ("response_id", "model_id", "created_at", "status", "finish_reason", "usage", "served_by")

_Slot = _TextItem | _ReasoningItem | _Whole


def _is_piece(content: ReasoningContent) -> bool:
    return not content.summary or content.summary == (content.text,)


class _Fold:
    """The state of one :meth:`ChatResponse.from_updates`: contents by item, latest metadata."""

    def __init__(self) -> None:
        self.slots: list[tuple[Role, _Slot]] = []
        # Per slot, where it stands: its item's position (or the one before it's), then its arrival.
        self.places: list[tuple[int, int]] = []
        self.last = -1
        self.texts: dict[int, _TextItem] = {}
        self.reasonings: dict[int, _ReasoningItem] = {}
        # The metadata given so far, by field name; a field no update gave stays absent (None).
        self.metadata: dict[str, Any] = {}

    def add(self, update: ChatResponseUpdate) -> None:
        role, item, part, position = update.role, update.item_index, update.part_index, update.position
        for content in update.contents:
            if item is not None and isinstance(content, TextContent):
                text = self.texts.get(item)
                if text is None:
                    text = self.texts[item] = _TextItem()
                    self._slot(role, text, position)
                text.add(content, part or 0)
            elif item is not None and isinstance(content, ReasoningContent) and _is_piece(content):
                reasoning = self.reasonings.get(item)
                if reasoning is None:
                    reasoning = self.reasonings[item] = _ReasoningItem()
                    self._slot(role, reasoning, position)
                reasoning.add(content, part)
            else:
                self._slot(role, _Whole(content), position)
        # Metadata arrives as it becomes known; an update that does not know a value leaves it be.
        self.metadata.update(update.metadata)

    def _slot(self, role: Role, slot: _Slot, position: int | None) -> None:
        if position is not None:
            self.last = position
        self.places.append((self.last, len(self.slots)))
        self.slots.append((role, slot))

    def response(self) -> ChatResponse:
        grouped: list[tuple[Role, list[Content]]] = []
        slots = self.slots
        places = self.places
        if any(places[n] > places[n + 1] for n in range(len(places) - 1)):
            slots = [slots[arrival] for _, arrival in sorted(places)]
        for role, slot in slots:
            if not grouped or grouped[-1][0] != role:
                grouped.append((role, []))
            grouped[-1][1].extend(slot.contents())
        return ChatResponse(
            messages=[ChatMessage(role, contents) for role, contents in grouped],
            **self.metadata,
        )


def _pieces(text: str, count: int) -> list[str]:
    """``text`` cut into at most ``count`` pieces of near-equal length (one piece when empty)."""
    size = max(1, math.ceil(len(text) / count))
    return [text[start : start + size] for start in range(0, len(text), size)] or [text]


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
    served_by: str | None = None
    """The name of the failover target that gave this answer (``agent.fallbacks``); None without failover."""

    @property
    def text(self) -> str:
        """All assistant text, message by message, joined with newlines."""
        return "\n".join(m.text for m in self.messages if m.role == "assistant" and m.text)

    @property
    def function_calls(self) -> tuple[FunctionCallContent, ...]:
        """Every function call of every message, in order."""
        return tuple(call for m in self.messages for call in m.function_calls)

    @classmethod
    def from_updates(cls, updates: Iterable[ChatResponseUpdate]) -> ChatResponse:
        """The response that ``updates`` (a whole stream, in order) spell out.

        Folding the updates of a ``get_streaming_response`` call gives what ``get_response``
        returns for the same answer; see :class:`ChatResponseUpdate` for how pieces are joined.
        """
        fold = _Fold()
        for update in updates:
            fold.add(update)
        return fold.response()

    def to_updates(self, pieces: int = 1) -> Iterator[ChatResponseUpdate]:
        """This response as a stream would deliver it; :meth:`from_updates` folds them back.

        First an update with the ids, then each text and reasoning part in up to ``pieces``
        pieces and each other content whole, then one with the status, finish reason and usage.
        Messages without contents are not represented, and neither are consecutive messages of
        one role: they fold back as one.
        """
        if pieces < 1:
            raise ValueError(f"pieces must be at least 1, not {pieces}")
        yield ChatResponseUpdate(
            response_id=self.response_id,
            model_id=self.model_id,
            created_at=self.created_at,
            served_by=self.served_by,
        )
        item = 0
        for message in self.messages:
            for content in message.contents:
                yield from _content_updates(content, message.role, item, pieces)
                item += 1
        yield ChatResponseUpdate(status=self.status, finish_reason=self.finish_reason, usage=self.usage)


async def updates_of(ask: Callable[[], Awaitable[ChatResponse]]) -> AsyncGenerator[ChatResponseUpdate, None]:
    """The updates of an answer read whole: calls ``ask`` when iterated, then yields ``to_updates()``.

    How a chat that only has whole answers offers ``get_streaming_response``: the stream is one
    whole answer. ``ask`` is called only once the iteration starts, so a stream closed before it
    sends nothing and leaves no coroutine behind. A :class:`domain.errors.ChatError` raised by the
    request comes out of the iteration.
    """
    response = await ask()
    for update in response.to_updates():
        yield update


def _reasoning_text_parts(content: ReasoningContent) -> list[str] | None:
    """The reasoning-text parts that, after the summary, make up ``content.text``; None if none can."""
    if not content.summary:
        return [content.text] if content.text else []
    prefix = REASONING_SEPARATOR.join(content.summary)
    if content.text == prefix:
        return []
    if content.text.startswith(prefix + REASONING_SEPARATOR):
        return [content.text[len(prefix) + len(REASONING_SEPARATOR) :]]
    return None


def _content_updates(content: Content, role: Role, item: int, pieces: int) -> Iterator[ChatResponseUpdate]:
    if isinstance(content, TextContent):
        *first, last = _pieces(content.text, pieces)
        for piece in first:
            yield ChatResponseUpdate((TextContent(piece),), role, item, 0)
        yield ChatResponseUpdate((TextContent(last, content.provider_item),), role, item, 0)
        return
    texts = _reasoning_text_parts(content) if isinstance(content, ReasoningContent) else None
    if not isinstance(content, ReasoningContent) or texts is None:
        # Function calls and provider items come whole; so does reasoning its parts cannot spell.
        yield ChatResponseUpdate((content,), role)
        return
    for index, summary in enumerate(content.summary):
        for piece in _pieces(summary, pieces):
            yield ChatResponseUpdate(
                (ReasoningContent(piece, content.item_id, summary=(piece,)),), role, item, index
            )
    for index, text in enumerate(texts):
        for piece in _pieces(text, pieces):
            yield ChatResponseUpdate((ReasoningContent(piece, content.item_id),), role, item, index)
    # The item's id, encrypted state and provider item arrive with the finished item, after its parts.
    closing = ReasoningContent(
        "", content.item_id, content.encrypted_content, provider_item=content.provider_item
    )
    yield ChatResponseUpdate((closing,), role, item)
