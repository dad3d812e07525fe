"""The one event folder: SDK stream events in, one ChatResponse (or a finding the adapter maps) out."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Final

from adapters.responses.errors import CutShortError, UnreadableResponseError
from adapters.responses.mapping import (
    chat_response,
    field,
    integer,
    is_object,
    item_contents,
    item_identity,
    items_of,
    mend_surrogates,
    provider_failure,
    raise_if_failed,
    reasoning_content,
    text,
)
from domain import ChatResponse, Content, FunctionCallContent, TextContent

__all__ = ["EventFolder"]


# Deltas are joined this many at a time as they arrive: 80k deltas then leave a few hundred strings
# behind instead of 80k small ones, and every character is still copied only twice (linear time).
_CHUNK: Final = 256
_TERMINAL_STATUS: Final = {"response.completed": "completed", "response.incomplete": "incomplete"}


class _Text:
    """One text part arriving as deltas: kept in joined chunks plus a short tail of recent deltas."""

    __slots__ = ("chunks", "tail")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.tail: list[str] = []

    def add(self, delta: object) -> None:
        if not isinstance(delta, str):
            # A delta event without its text (or with something else there) adds nothing.
            return
        tail = self.tail
        tail.append(delta)
        if len(tail) >= _CHUNK:
            self.chunks.append("".join(tail))
            tail.clear()

    def settle(self, whole: object) -> None:
        """The whole text, as a ".done" event repeats it; without it the deltas stand."""
        if isinstance(whole, str):
            self.chunks = [whole]
            self.tail = []

    def __bool__(self) -> bool:
        return bool(self.chunks or self.tail)

    def value(self) -> str:
        # A surrogate pair split across two deltas is one character once the deltas are joined.
        return mend_surrogates("".join([*self.chunks, *self.tail]))


def _joined(parts: dict[int | None, _Text]) -> list[str]:
    return [parts[index].value() for index in sorted(parts, key=lambda index: index or 0)]


def _text(parts: dict[int | None, _Text], index: object) -> _Text:
    key = integer(index)
    part = parts.get(key)
    if part is None:
        part = parts[key] = _Text()
    return part


class _Item:
    """One output item of the stream: finished (its contents known) or still arriving (its deltas)."""

    __slots__ = (
        "added",
        "arguments",
        "call_id",
        "finished",
        "index",
        "item_id",
        "kind",
        "name",
        "reasoning",
        "sequence",
        "summary",
        "texts",
    )

    def __init__(self, index: int, sequence: int) -> None:
        self.index = index
        self.sequence = sequence
        self.finished: list[Content] | None = None
        self.kind: str | None = None
        self.item_id: str | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.added: Any = None
        self.texts: dict[int | None, _Text] = {}
        self.summary: dict[int | None, _Text] = {}
        self.reasoning: dict[int | None, _Text] = {}
        self.arguments = _Text()

    @property
    def identity(self) -> str | None:
        return self.item_id or self.call_id

    def describe(self, item: Any) -> None:
        """Take what ``item`` says about itself; what it leaves out stays as it was."""
        self.added = item if is_object(item) else self.added
        self.kind = text(field(item, "type")) or self.kind
        self.item_id = text(field(item, "id")) or self.item_id
        self.call_id = text(field(item, "call_id")) or self.call_id
        self.name = text(field(item, "name")) or self.name

    def is_other_than(self, item: Any) -> bool:
        """True when ``item`` is visibly a different item from this one (another id or kind)."""
        item_id, kind = text(field(item, "id")), text(field(item, "type"))
        return (self.item_id is not None and item_id is not None and item_id != self.item_id) or (
            self.kind is not None and kind is not None and kind != self.kind
        )

    def contents(self) -> list[Content]:
        if self.finished is not None:
            return self.finished
        kind = self.kind
        if kind == "function_call" or (kind is None and self.arguments):
            return [
                FunctionCallContent.parse(
                    call_id=self.call_id or self.item_id or "",
                    name=self.name or "",
                    raw_arguments=self.arguments.value(),
                    item_id=self.item_id,
                )
            ]
        if kind == "reasoning" or (kind is None and (self.summary or self.reasoning)):
            encrypted = text(field(self.added, "encrypted_content"))
            return [
                reasoning_content(self.item_id, _joined(self.summary), _joined(self.reasoning), encrypted)
            ]
        if kind == "message" or kind is None:
            return [TextContent(part) for part in _joined(self.texts)]
        # A hosted-tool item that never finished: all we have is how it started.
        return item_contents(self.added) if self.added is not None else []


class EventFolder:
    """Folds one response's events, in order, into a :class:`ChatResponse`.

    Feed every event to :meth:`feed`, then call :meth:`result`. Dispatch is on the ``type`` string
    alone because the SDK maps unknown types onto unrelated classes; unknown types (and a ``type``
    that is not a string) are skipped. Deltas are kept only until their item finishes.

    Nothing that streamed is dropped: an item missing from the terminal event's ``output`` is kept
    in its ``output_index`` place, and two items streamed on one ``output_index`` are both kept.

    ``response.failed`` and ``error`` events raise a :class:`ProviderFailureError` finding as they
    arrive; :meth:`result` raises :class:`CutShortError` when no terminal event came. The
    adapters map both to domain errors (see ``adapters.responses.errors``).
    """

    __slots__ = ("_current", "_handlers", "_items", "_sequence", "_snapshot", "_terminal")

    def __init__(self) -> None:
        self._snapshot: Any = None
        self._terminal: str | None = None
        self._items: list[_Item] = []
        self._current: dict[int, _Item] = {}
        self._sequence = itertools.count()
        self._handlers: dict[str, Callable[[str, Any], None]] = {
            "response.created": self._on_lifecycle,
            "response.queued": self._on_lifecycle,
            "response.in_progress": self._on_lifecycle,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_failed,
            "error": self._on_error,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.output_text.delta": self._on_text_delta,
            "response.output_text.done": self._on_text_done,
            "response.refusal.delta": self._on_text_delta,
            "response.refusal.done": self._on_refusal_done,
            "response.reasoning_summary_text.delta": self._on_summary_delta,
            "response.reasoning_summary_text.done": self._on_summary_done,
            "response.reasoning_text.delta": self._on_reasoning_delta,
            "response.reasoning_text.done": self._on_reasoning_done,
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
        }

    def feed(self, event: Any) -> None:
        """Fold one event; raises a finding for failure events and unusable ones."""
        kind = field(event, "type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(kind, event)

    def result(self) -> ChatResponse:
        """The folded response; raises :class:`CutShortError` if no terminal event arrived."""
        if self._terminal is None:
            raise CutShortError(
                "the event stream ended before a terminal event (response.completed, .incomplete or .failed)",
                self.partial(),
            )
        contents = self._merged(items_of(field(self._snapshot, "output")))
        # Without a usable response object the terminal event's own type still says how it ended.
        status = text(field(self._snapshot, "status")) or _TERMINAL_STATUS.get(self._terminal)
        return chat_response(self._snapshot, contents, status=status)

    def partial(self) -> ChatResponse | None:
        """What has arrived so far, or None when nothing has."""
        if self._snapshot is None and not self._items:
            return None
        return chat_response(self._snapshot, self._streamed())

    def _streamed(self) -> list[Content]:
        ordered = sorted(self._items, key=lambda item: (item.index, item.sequence))
        return [content for item in ordered for content in item.contents()]

    def _merged(self, output: Sequence[Any]) -> list[Content]:
        """The terminal output (the provider's final word on each item it lists), with every
        streamed item it leaves out kept in its ``output_index`` place."""
        if not output:
            return self._streamed()
        unmatched = sorted(self._items, key=lambda item: (item.index, item.sequence))
        placed: list[tuple[tuple[int, int], list[Content]]] = []
        for position, final in enumerate(output):
            match = self._match(final, position, unmatched)
            if match is not None:
                unmatched.remove(match)
            anchor = (match.index, match.sequence) if match is not None else (position, -1)
            final_contents = item_contents(final)
            if not final_contents and match is not None:
                # An unusable final form does not erase what the stream brought for that item.
                final_contents = match.contents()
            placed.append((anchor, final_contents))
        contents: list[Content] = []
        pending = iter(unmatched)
        waiting = next(pending, None)
        for anchor, final_contents in placed:
            while waiting is not None and (waiting.index, waiting.sequence) < anchor:
                contents.extend(waiting.contents())
                waiting = next(pending, None)
            contents.extend(final_contents)
        while waiting is not None:
            contents.extend(waiting.contents())
            waiting = next(pending, None)
        return contents

    @staticmethod
    def _match(final: Any, position: int, candidates: list[_Item]) -> _Item | None:
        """The streamed item ``final`` is the finished form of: the same id, else the same place
        and no sign of being another item."""
        identity = item_identity(final)
        if identity is not None:
            for item in candidates:
                if item.identity == identity:
                    return item
        for item in candidates:
            if item.index == position and not item.is_other_than(final):
                return item
        return None

    def _index(self, kind: str, event: Any) -> int:
        index = integer(field(event, "output_index"))
        if index is None:
            # The SDK builds events without validation, so a field the provider left out reads as None.
            raise UnreadableResponseError(
                f"a {kind!r} event lacks a required field (output_index)", self.partial()
            )
        return index

    def _arriving(self, kind: str, event: Any) -> _Item:
        """The item still arriving at the event's output_index; a stream resumed with
        starting_after can begin mid-item, without the item's "added"."""
        index = self._index(kind, event)
        item = self._current.get(index)
        if item is None:
            item = self._current[index] = _Item(index, next(self._sequence))
            self._items.append(item)
        return item

    def _on_lifecycle(self, kind: str, event: Any) -> None:
        response = field(event, "response")
        if is_object(response):
            self._snapshot = response

    def _on_terminal(self, kind: str, event: Any) -> None:
        self._on_lifecycle(kind, event)
        self._terminal = kind
        # The terminal event is the provider's last word: whatever follows cannot change the answer.
        self._handlers = {}

    def _on_failed(self, kind: str, event: Any) -> None:
        self._on_terminal(kind, event)
        response = self._snapshot
        raise_if_failed(chat_response(response, self._streamed(), status="failed"), response)

    def _on_error(self, kind: str, event: Any) -> None:
        raise provider_failure(event, "the provider sent an error event", self.partial())

    def _on_item_added(self, kind: str, event: Any) -> None:
        item = field(event, "item")
        index = self._index(kind, event)
        arriving = self._current.get(index)
        if arriving is not None and arriving.is_other_than(item):
            # A second item on the same output_index: the first keeps what it has so far.
            del self._current[index]
        self._arriving(kind, event).describe(item)

    def _on_item_done(self, kind: str, event: Any) -> None:
        item = field(event, "item")
        index = self._index(kind, event)
        arriving = self._current.pop(index, None)
        if arriving is not None and arriving.is_other_than(item):
            # The item that was arriving here never finished: it stays, with what it had.
            arriving = None
        if arriving is None:
            arriving = _Item(index, next(self._sequence))
            self._items.append(arriving)
        already = arriving.contents()
        arriving.describe(item)
        if field(item, "type") == "function_call" and not isinstance(field(item, "arguments"), str):
            # Some gateways finish a call without repeating its arguments: the deltas are all there is.
            arriving.kind = "function_call"
            arriving.finished = arriving.contents()
        else:
            # An unusable finished item does not erase what its deltas had already brought.
            arriving.finished = item_contents(item) or already
        self._merge_repeat(arriving)

    def _merge_repeat(self, finished: _Item) -> None:
        """A repeated "done" for one item (same id, same place) is that item again, not another one:
        the first keeps its place and takes the latest contents."""
        identity = finished.identity
        if identity is None:
            return
        for item in self._items:
            if item is finished:
                return
            if item.finished is not None and item.index == finished.index and item.identity == identity:
                item.finished = finished.finished
                self._items.remove(finished)
                return

    def _late(self, kind: str, event: Any) -> _Item | None:
        """The item a part event belongs to, or None for a late repeat of a finished item's part
        (no item is arriving at its index, and the finished one there is the one it names)."""
        index = self._index(kind, event)
        if index not in self._current:
            named = text(field(event, "item_id"))
            for item in self._items:
                if item.index == index and item.finished is not None and named in (None, item.item_id):
                    return None
        return self._arriving(kind, event)

    def _on_text_delta(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.texts, field(event, "content_index")).add(field(event, "delta"))

    # A ".done" event repeats the whole text, so it replaces the deltas and frees them; one that
    # arrives without its text (a gateway left the field out) leaves the deltas as they are.

    def _on_text_done(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.texts, field(event, "content_index")).settle(field(event, "text"))

    def _on_refusal_done(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.texts, field(event, "content_index")).settle(field(event, "refusal"))

    def _on_summary_delta(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.summary, field(event, "summary_index")).add(field(event, "delta"))

    def _on_summary_done(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.summary, field(event, "summary_index")).settle(field(event, "text"))

    def _on_reasoning_delta(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.reasoning, field(event, "content_index")).add(field(event, "delta"))

    def _on_reasoning_done(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            _text(item.reasoning, field(event, "content_index")).settle(field(event, "text"))

    def _on_arguments_delta(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            item.arguments.add(field(event, "delta"))

    def _on_arguments_done(self, kind: str, event: Any) -> None:
        item = self._late(kind, event)
        if item is not None:
            item.arguments.settle(field(event, "arguments"))
