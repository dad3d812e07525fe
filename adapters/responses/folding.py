"""The one event folder: SDK stream events in, caller-facing updates and one ChatResponse out."""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
from openai.types.responses import ResponseFunctionCallArgumentsDeltaEvent, ResponseTextDeltaEvent

from adapters.responses.cost import with_cost
from adapters.responses.error_mapping import CutShortError, UnreadableResponseError
from adapters.responses.to_domain import (
    chat_response,
    created_at,
    field,
    final_status,
    integer,
    is_object,
    item_contents,
    item_identity,
    items_of,
    provider_failure,
    provider_item,
    raise_if_failed,
    reasoning_content,
    text,
    text_key,
    unfinished,
    unreadable,
)
from domain import (
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    ReasoningContent,
    TextContent,
)
from domain.arguments import mend_surrogates
from domain.responses import reasoning_piece, text_piece

__all__ = ["EventFolder"]


# Deltas are joined this many at a time as they arrive: 80k deltas then leave a few hundred strings
# behind instead of 80k small ones, and every character is still copied only twice (linear time).
_CHUNK: Final = 256
# Output items folded between two steps of a terminal event (see EventFolder.feed_in_steps).
_STEP: Final = 256
_MATCH_AT_INDEX: Final = 16
_TERMINAL_STATUS: Final = {"response.completed": "completed", "response.incomplete": "incomplete"}
# What a _Text's pieces become in an update: message text, a reasoning summary part, reasoning text.
_TEXT, _SUMMARY, _REASONING, _ARGUMENTS = range(4)
# A kind of text part: the type of the item it is in, the item's map of such parts (_Item.texts, summary,
# reasoning), what the part's pieces become, and the field of its events that gives the part's index.
_PartPlace = tuple[str, str, int, str]
_MESSAGE_PART: Final[_PartPlace] = ("message", "texts", _TEXT, "content_index")
_SUMMARY_PART: Final[_PartPlace] = ("reasoning", "summary", _SUMMARY, "summary_index")
_REASONING_PART: Final[_PartPlace] = ("reasoning", "reasoning", _REASONING, "content_index")
# The events that add to one text part: its kind, the field holding the text, and whether that is the
# part's whole text (a ".done", which repeats it: what it adds to the deltas is added, and one without
# its text, a field a gateway left out, leaves the deltas as they are) or a piece of it (a ".delta").
_PART_EVENTS: Final[dict[str, tuple[_PartPlace, str, bool]]] = {
    "response.output_text.delta": (_MESSAGE_PART, "delta", False),
    "response.output_text.done": (_MESSAGE_PART, "text", True),
    "response.refusal.delta": (_MESSAGE_PART, "delta", False),
    "response.refusal.done": (_MESSAGE_PART, "refusal", True),
    "response.reasoning_summary_text.delta": (_SUMMARY_PART, "delta", False),
    "response.reasoning_summary_text.done": (_SUMMARY_PART, "text", True),
    "response.reasoning_text.delta": (_REASONING_PART, "delta", False),
    "response.reasoning_text.done": (_REASONING_PART, "text", True),
}
# The events that make up the bulk of a stream, as the SDK builds them (see EventFolder.feed).
_TEXT_DELTA: Final = ResponseTextDeltaEvent
_ARGUMENTS_DELTA: Final = ResponseFunctionCallArgumentsDeltaEvent


def _high_surrogate(character: str) -> bool:
    return "\ud800" <= character <= "\udbff"


def _piece(kind: int, piece: str, item: int, part: int | None, position: int) -> ChatResponseUpdate:
    """The update of one piece: message text, a reasoning summary part's (``summary`` is the piece
    itself) or reasoning text's. Built by the domain's per-delta constructors: the values are typed."""
    if kind == _TEXT:
        return text_piece(piece, item, part, position)
    return reasoning_piece(piece, item, part, summary=kind == _SUMMARY, position=position)


class _Text:
    """One text part arriving as deltas: kept in joined chunks plus a short tail of recent deltas.

    Text that has arrived stands: a later whole form of the part (a ".done" event, the finished
    item, the terminal output) only adds what extends it. That is what lets each piece go to the
    caller the moment it arrives, and still fold to exactly what the whole response says.
    """

    __slots__ = ("chunks", "held", "item", "kind", "part", "provided", "seen", "tail")

    def __init__(self, item: _Item, kind: int, part: int) -> None:
        self.chunks: list[str] = []
        self.tail: list[str] = []
        self.item = item
        self.kind = kind
        self.part = part
        # True once the part holds text: from then on it is one content of the answer.
        self.seen = False
        # A high surrogate that ended the last piece: its pair may start the next delta.
        self.held = ""
        # True once ``chunks`` holds the provider's whole string (a ".done" event's, a finished item's).
        self.provided = False

    def add(self, delta: object) -> None:
        if not isinstance(delta, str):
            # A delta event without its text (or with something else there) adds nothing.
            return
        tail = self.tail
        tail.append(delta)
        if len(tail) >= _CHUNK:
            self.chunks.append("".join(tail))
            tail.clear()
        kind = self.kind
        if kind == _ARGUMENTS:
            return
        item = self.item
        out = item.folder.out
        if out is not None:
            if self.seen and not self.held and delta and not "\ud800" <= delta[-1] <= "\udbff":
                # The common case, kept short: one delta that ends in no high surrogate, one update.
                if kind == _TEXT:
                    out.append(text_piece(delta, item.sequence, self.part, item.index))
                else:
                    out.append(_piece(kind, delta, item.sequence, self.part, item.index))
            else:
                self._emit(delta)
        elif not self.seen:
            # Nobody streams: only the first piece matters, for the item's place in the answer.
            self.seen = True
            item.emit(kind, self.part, "")

    def settle(self, whole: object) -> None:
        """The whole text, as a ".done" event or a finished item repeats it: what it adds to the
        text that arrived is added; a whole text that contradicts it is not taken."""
        if not isinstance(whole, str):
            return
        if self.kind == _ARGUMENTS:
            # A call goes out whole, once finished, so its final arguments are the ones it has.
            self.chunks, self.tail, self.provided = [whole], [], True
            return
        arrived = self._prefix_of(whole) if self.seen else 0
        if arrived is None:
            # Not piece by piece (a pair split across two deltas is one character in ``whole``).
            joined = self.value()
            if joined and _high_surrogate(joined[-1]):
                # The first half of a pair never went out (it is held back): the whole text says
                # what it became.
                joined = joined[:-1]
            if not whole.startswith(joined):
                return
            arrived = len(joined)
        elif arrived and _high_surrogate(whole[arrived - 1]):
            arrived -= 1
        self.held = ""
        rest = whole[arrived:]
        self.chunks, self.tail, self.provided = [whole], [], True
        if rest or not self.seen:
            self._emit(rest)

    def adopt(self, whole: object) -> None:
        """A whole form of the part that only repeats it (a "content_part.done"): the text is then
        held as ``whole``, the provider's newest string, instead of as what was held. Nothing else
        changes (a form that differs in any way is not taken), but the text is held once: the SDK
        keeps the event it handed over last while it parses the next, so the string taken from it
        is the very one the SDK holds when the next whole form (the finished item, the terminal
        output) is read, not a second copy beside it."""
        if not isinstance(whole, str) or not self.seen or self.held or self.kind == _ARGUMENTS:
            return
        chunks, tail = self.chunks, self.tail
        if self.provided and not tail and len(chunks) == 1:
            # A ".done" event's string: the two are compared at memory speed.
            if chunks[0] != whole:
                return
        elif self._prefix_of(whole) != len(whole) or mend_surrogates(whole) is not whole:
            # The pieces, compared in place: equal only when they spell ``whole`` exactly (and a
            # pair they split would be one character in ``whole``, so that is never equal).
            return
        self.chunks, self.tail, self.provided = [whole], [], True

    def _prefix_of(self, whole: str) -> int | None:
        """How long a start of ``whole`` the pieces that arrived are, compared in place (no joined
        copy of the text is made while the provider's own is being read); None when they are not."""
        at = 0
        for piece in (*self.chunks, *self.tail):
            if not whole.startswith(piece, at):
                return None
            at += len(piece)
        return at

    def flush(self) -> None:
        """The end of the part: a high surrogate held back goes out as it is."""
        if self.held:
            held, self.held = self.held, ""
            self.item.emit(self.kind, self.part, held)

    def _emit(self, piece: str) -> None:
        if self.held:
            # JSON joins a pair within one string, so a pair can only form across deltas: here.
            piece = mend_surrogates(self.held + piece)
            self.held = ""
        if piece and _high_surrogate(piece[-1]):
            self.held = piece[-1]
            piece = piece[:-1]
        if piece or not self.seen:
            self.seen = True
            self.item.emit(self.kind, self.part, piece)

    def value(self) -> str:
        chunks, tail = self.chunks, self.tail
        if self.provided and not tail and len(chunks) == 1:
            # The provider's own string, as its JSON decoded it (a pair is already one character):
            # the answer holds it, not a copy, and nothing transient is made while it is asked for.
            return chunks[0]
        # A surrogate pair split across two deltas is one character once the deltas are joined.
        return mend_surrogates("".join([*chunks, *tail]))


class _Item:
    """One output item of the stream: its parts as they arrive, and how it ended.

    ``index`` is its ``output_index``: the answer lists items by it, and every update of the item
    carries it as its ``position``, so :meth:`ChatResponse.from_updates` lists them alike.
    """

    __slots__ = (
        "added",
        "arguments",
        "call_id",
        "closed",
        "encrypted",
        "final",
        "folder",
        "index",
        "item_id",
        "kind",
        "name",
        "provider",
        "reasoning",
        "sequence",
        "summary",
        "texts",
        "whole",
    )

    def __init__(self, folder: EventFolder, index: int, sequence: int) -> None:
        self.folder = folder
        self.index = index
        self.sequence = sequence
        self.kind: str | None = None
        self.item_id: str | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.added: Any = None
        self.texts: dict[int, _Text] = {}
        self.summary: dict[int, _Text] = {}
        self.reasoning: dict[int, _Text] = {}
        self.arguments = _Text(self, _ARGUMENTS, 0)
        # Contents that went out whole (a call, a provider item); None while none has.
        self.whole: list[Content] | None = None
        # A reasoning item's id and encrypted state, as its end gave them; None until it ends.
        self.closed: tuple[str | None, str | None] | None = None
        self.encrypted: str | None = None
        # The finished item as the provider sent it (see to_domain.provider_item); None until it finishes.
        self.provider: str | None = None
        # A finished call whose content is not built yet (see finish); None otherwise.
        self.final: Any = None

    @property
    def identity(self) -> str | None:
        return self.item_id or self.call_id

    @property
    def finished(self) -> bool:
        return (
            self.whole is not None
            or self.final is not None
            or self.closed is not None
            or self.kind == "message-done"
        )

    def describe(self, item: Any) -> None:
        """Take what ``item`` says about itself; what it leaves out stays as it was."""
        self.added = item if is_object(item) else self.added
        kind = text(field(item, "type"))
        if self.kind != "message-done":
            self.kind = kind or self.kind
        self.item_id = text(field(item, "id")) or self.item_id
        self.call_id = text(field(item, "call_id")) or self.call_id
        self.name = text(field(item, "name")) or self.name

    def shape(self) -> str | None:
        """The item's type: as it said, else as its parts show (what went out decides what it is)."""
        if self.kind is not None:
            return "message" if self.kind == "message-done" else self.kind
        if any(part.seen for part in self.texts.values()):
            return "message"
        if any(part.seen for part in (*self.summary.values(), *self.reasoning.values())):
            return "reasoning"
        if self.arguments.chunks or self.arguments.tail:
            return "function_call"
        return None

    def is_other_than(self, item: Any) -> bool:
        """True when ``item`` is visibly a different item from this one (another id or type)."""
        item_id, kind = text(field(item, "id")), text(field(item, "type"))
        shape = self.shape()
        return (self.item_id is not None and item_id is not None and item_id != self.item_id) or (
            shape is not None and kind is not None and kind != shape
        )

    def part(self, parts: dict[int, _Text], kind: int, index: object) -> _Text:
        key = integer(index) or 0
        found = parts.get(key)
        if found is None:
            found = parts[key] = _Text(self, kind, key)
        return found

    def emit(self, kind: int, part: int | None, piece: str) -> None:
        folder = self.folder
        out = folder.out
        if out is None:
            return
        out.append(_piece(kind, piece, self.sequence, part, self.index))

    def emit_whole(self, contents: list[Content]) -> None:
        self.whole = contents
        if not contents:
            return
        folder = self.folder
        if folder.out is not None:
            folder.out.append(ChatResponseUpdate(contents, position=self.index))

    def close_reasoning(self, item_id: str | None, encrypted: str | None) -> None:
        for part in (*self.summary.values(), *self.reasoning.values()):
            part.flush()
        self.closed = (item_id, encrypted)
        folder = self.folder
        if folder.out is not None:
            closing = ReasoningContent("", item_id, encrypted, provider_item=self.provider)
            folder.out.append(ChatResponseUpdate((closing,), "assistant", self.sequence, position=self.index))

    def provide(self) -> None:
        """Hand the finished message item to each of its text parts (an empty piece that carries it)."""
        out, provider = self.folder.out, self.provider
        if out is None or provider is None:
            return
        for index in sorted(self.texts):
            if self.texts[index].seen:
                out.append(
                    ChatResponseUpdate(
                        (TextContent("", provider),), "assistant", self.sequence, index, position=self.index
                    )
                )

    def is_reasoning(self) -> bool:
        return self.kind == "reasoning" or (self.kind is None and bool(self.summary or self.reasoning))

    def is_call(self) -> bool:
        return self.kind == "function_call" or (
            self.kind is None and bool(self.arguments.chunks or self.arguments.tail)
        )

    def call(self) -> FunctionCallContent:
        return FunctionCallContent.parse(
            call_id=self.call_id or self.item_id or "",
            name=self.name or "",
            raw_arguments=self.arguments.value(),
            item_id=self.item_id,
            provider_item=self.provider,
        )

    def _finished_call(self, final: Any) -> FunctionCallContent:
        """The call as its finished item ``final`` gives it (the item kept as its provider item)."""
        self.provider = provider_item(final)
        return self.call()

    def finish(self, final: Any) -> None:
        """The item as its "done" event (or the terminal output) gives it: a call or a provider item
        goes out whole; a message's or a reasoning item's parts add what extends what arrived."""
        if self.finished:
            self._settle_again(final)
            return
        self.describe(final)
        kind = text(field(final, "type"))
        if kind == "function_call":
            self.arguments.settle(field(final, "arguments"))
            folder = self.folder
            if folder.out is None:
                # Nobody streams (get_response): the call is built with the answer, after the last
                # event, where its item's JSON and the parse of its arguments run in one pass with
                # their code and data warm, not between the SDK's own steps.
                self.final = final
                return
            self.emit_whole([self._finished_call(final)])
            return
        if kind in ("message", "reasoning"):
            self.provider = provider_item(final)
        if kind == "message":
            self._settle_message(final)
            self.kind = "message-done"
            self.provide()
        elif kind == "reasoning":
            self._settle_reasoning(final)
            self.close_reasoning(self.item_id, text(field(final, "encrypted_content")))
        else:
            contents = item_contents(final)
            if contents:
                self.emit_whole(contents)
            else:
                # An unusable finished item does not erase what its deltas had already brought.
                self.end()

    def _settle_again(self, final: Any) -> None:
        # A repeat of a finished item: what went out whole stands; text parts may still grow.
        if self.kind == "message-done" and text(field(final, "type")) == "message":
            self._settle_message(final)
            # A part the repeat added takes the item as it first finished, as the others did.
            self.provide()

    def _settle_message(self, final: Any) -> None:
        for position, part in enumerate(items_of(field(final, "content"))):
            key = text_key(part)
            if key is not None:
                texts = self.part(self.texts, _TEXT, position)
                texts.settle(text(field(part, key)) or "")
                texts.flush()
        for texts in self.texts.values():
            texts.flush()

    def _settle_reasoning(self, final: Any) -> None:
        for position, part in enumerate(items_of(field(final, "summary"))):
            if field(part, "type") == "summary_text":
                self.part(self.summary, _SUMMARY, position).settle(text(field(part, "text")) or "")
        for position, part in enumerate(items_of(field(final, "content"))):
            if field(part, "type") == "reasoning_text":
                self.part(self.reasoning, _REASONING, position).settle(text(field(part, "text")) or "")

    def end(self) -> None:
        """The stream ended without this item finishing: it goes out with what it had."""
        if self.finished:
            return
        if self.is_call():
            self.kind = "function_call"
            self.emit_whole([self.call()])
        elif self.is_reasoning():
            self.close_reasoning(self.item_id, text(field(self.added, "encrypted_content")))
        elif self.kind in ("message", None):
            for texts in self.texts.values():
                texts.flush()
            self.kind = "message-done"
        else:
            # A hosted-tool item that never finished: all we have is how it started.
            self.emit_whole(item_contents(self.added) if self.added is not None else [])

    def contents(self) -> list[Content]:
        final = self.final
        if final is not None:
            self.final = None
            self.whole = [self._finished_call(final)]
        if self.whole is not None:
            return self.whole
        if self.is_reasoning() or self.closed is not None:
            item_id, encrypted = self.closed or (self.item_id, text(field(self.added, "encrypted_content")))
            summary, texts = _joined(self.summary), _joined(self.reasoning)
            return [reasoning_content(item_id, summary, texts, encrypted, self.provider)]
        if self.is_call():
            return [self.call()]
        if self.kind in ("message", "message-done", None):
            return [TextContent(part, self.provider) for part in _joined(self.texts)]
        return item_contents(self.added) if self.added is not None else []


class _Whole:
    """A call only the terminal event's output holds: its place and the one content it maps to (no
    list is kept for it, as none is when a document's call is mapped)."""

    __slots__ = ("content", "index", "sequence")

    def __init__(self, index: int, sequence: int, content: Content) -> None:
        self.index = index
        self.sequence = sequence
        self.content = content

    def contents(self) -> list[Content]:
        return [self.content]


def _match(
    final: Any,
    position: int,
    by_identity: dict[str, collections.deque[_Item]],
    by_index: dict[int, list[_Item]],
    taken: set[int],
) -> _Item | None:
    """The streamed item ``final`` is the finished form of: the first not yet taken with the same id,
    else the first at the same place with no sign of being another item (of the first
    ``_MATCH_AT_INDEX`` not taken there: many items streamed on one index cannot make it quadratic)."""
    identity = item_identity(final)
    if identity is not None:
        same = by_identity.get(identity)
        while same and id(same[0]) in taken:
            same.popleft()
        if same:
            return same[0]
    looked = 0
    for item in by_index.get(position, ()):
        if id(item) in taken:
            continue
        if not item.is_other_than(final):
            return item
        looked += 1
        if looked == _MATCH_AT_INDEX:
            break
    return None


def _joined(parts: dict[int, _Text]) -> list[str]:
    return [parts[index].value() for index in sorted(parts) if parts[index].seen]


@attrs.frozen
class _Known:
    """The response's ids as the lifecycle events told them; a later event that leaves one out keeps it."""

    response_id: str | None = None
    model_id: str | None = None
    created_at: Any = None


class EventFolder:
    """Folds one response's events, in order, into updates for the caller and one :class:`ChatResponse`.

    Feed every event to :meth:`feed`, then call :meth:`result`. Dispatch is on the ``type`` string
    alone because the SDK maps unknown types onto unrelated classes; unknown types (and a ``type``
    that is not a string) are skipped.

    With ``updates=True``, :attr:`out` collects the :class:`ChatResponseUpdate`s the events bring
    (whoever hands them on swaps in an empty list): text and reasoning as pieces the moment they
    arrive, each call and provider item whole once it finishes, the ids from the lifecycle events,
    and the status, finish reason and usage at the end. :meth:`result` is then exactly
    ``ChatResponse.from_updates`` of them all, because both follow one rule: what reached the caller
    stands. A ".done" event, a finished item or the terminal ``output`` only adds what extends the
    text that arrived (a whole form that contradicts it is not taken), a call or provider item goes
    out once, at its first finished form, and items are listed in the provider's order
    (``output_index``, which each update carries as its ``position``): an item only the terminal
    ``output`` holds goes at its place there, though it goes out after the items that streamed.

    Nothing that streamed is dropped: an item missing from the terminal event's ``output`` is
    kept, and two items streamed on one ``output_index`` are both kept.

    ``response.failed`` and ``error`` events raise a :class:`ProviderFailureError` finding as they
    arrive; :meth:`result` raises :class:`CutShortError` when no terminal event came. The
    adapters map both to domain errors (see ``adapters.responses.error_mapping``).
    """

    __slots__ = (
        "_at",
        "_current",
        "_handlers",
        "_items",
        "_known",
        "_result",
        "_sequence",
        "_snapshot",
        "_terminal",
        "_wholes",
        "cost",
        "out",
    )

    def __init__(self, *, updates: bool = False) -> None:
        self._snapshot: Any = None
        self._known = _Known()
        self._terminal: str | None = None
        self._result: ChatResponse | None = None
        self._items: list[_Item] = []
        # The items only the terminal output held that went out whole (see _add_whole).
        self._wholes: list[_Whole] = []
        # The items by output_index: what a "done" or a late part at an index is looked up among.
        self._at: dict[int, list[_Item]] = {}
        self._current: dict[int, _Item] = {}
        self._sequence = itertools.count()
        # The updates not yet handed on; None when nobody streams them (get_response).
        self.out: list[ChatResponseUpdate] | None = [] if updates else None
        # What the request cost, from the response head; it joins the usage of the result.
        self.cost: float | None = None
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
            **dict.fromkeys(_PART_EVENTS, self._on_part_text),
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.content_part.done": self._on_part_done,
            "response.reasoning_summary_part.done": self._on_part_done,
        }

    def feed(self, event: Any) -> None:
        """Fold one event; raises a finding for failure events and unusable ones."""
        built = type(event)
        if (built is _ARGUMENTS_DELTA or built is _TEXT_DELTA) and self._delta(event, built):
            return
        kind = field(event, "type")
        handler = self._handlers.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(kind, event)

    def _delta(self, event: Any, built: type) -> bool:
        """A text or arguments delta (``built``, the SDK's class of it) for the part or call already
        arriving at its index: added at once, and True. Anything else (no such item or part, another
        kind of item there, a field of another type) is False, with nothing done, and :meth:`feed`
        folds it the long way, which finds the same item when there is one: this only skips the
        look-ups, most of what the long way costs a delta."""
        index = getattr(event, "output_index", None)
        item = self._current.get(index) if type(index) is int else None
        delta = getattr(event, "delta", None)
        if item is None or type(delta) is not str:
            return False
        if built is _ARGUMENTS_DELTA:
            if item.kind != "function_call":
                return False
            # Most events of an answer of calls: kept as _Text.add keeps an arguments delta, without
            # the call.
            arguments = item.arguments
            tail = arguments.tail
            tail.append(delta)
            if len(tail) >= _CHUNK:
                arguments.chunks.append("".join(tail))
                tail.clear()
            return True
        if item.kind != "message":
            return False
        position = getattr(event, "content_index", None)
        part = item.texts.get(position) if type(position) is int else None
        if part is None:
            return False
        part.add(delta)
        return True

    def feed_in_steps(self, event: Any) -> Iterator[None]:
        """Fold one event as :meth:`feed` does, pausing (a ``None`` step) every few hundred output
        items of a terminal event, so that whoever drives it can let other work run in between."""
        kind = field(event, "type")
        if kind in _TERMINAL_STATUS and kind in self._handlers:
            yield from self._terminal_steps(kind, event)
        else:
            self.feed(event)

    @property
    def item_count(self) -> int:
        """How many output items have arrived so far."""
        return len(self._items) + len(self._wholes)

    def _add(self, item: _Item) -> _Item:
        self._items.append(item)
        self._at.setdefault(item.index, []).append(item)
        return item

    def _add_whole(self, position: int, call: Content) -> None:
        """A call only the terminal ``output`` holds: kept as the content it maps to, as a document's
        call is, without the parts an item that streams needs (a call goes out whole at once). Nothing
        looks it up again (no event is folded after the terminal one), so it is not kept by index."""
        self._wholes.append(_Whole(position, next(self._sequence), call))
        if self.out is not None:
            self.out.append(ChatResponseUpdate((call,), position=position))

    @property
    def ended(self) -> bool:
        """True once the terminal event arrived: nothing after it can change the answer."""
        return self._result is not None

    def result(self) -> ChatResponse:
        """The folded response; raises :class:`CutShortError` if no terminal event arrived."""
        if self._result is None:
            raise CutShortError(
                "the event stream ended before a terminal event (response.completed, .incomplete or .failed)",
                self.partial(),
            )
        return self._result

    def partial(self) -> ChatResponse | None:
        """What has arrived so far, or None when nothing has."""
        if self._snapshot is None and not self._items and not self._wholes:
            return None
        return self._with_known(chat_response(self._snapshot, self._streamed()))

    def _streamed(self) -> list[Content]:
        # In the provider's order (output_index), as the updates' positions fold: an item only the
        # terminal output holds goes at its place, not after the items that streamed.
        items: list[_Item | _Whole] = [*self._items, *self._wholes]
        ordered = sorted(items, key=lambda item: (item.index, item.sequence))
        return [content for item in ordered for content in item.contents()]

    def _with_known(self, response: ChatResponse) -> ChatResponse:
        known = self._known
        return attrs.evolve(
            response,
            response_id=response.response_id or known.response_id,
            model_id=response.model_id or known.model_id,
            created_at=response.created_at or known.created_at,
        )

    def _learn(self, response: Any) -> None:
        """Keep the ids ``response`` (a lifecycle snapshot) tells, and tell the caller the new ones."""
        known = self._known
        # The ids alone: a snapshot's usage is read once, from the terminal response.
        learned = _Known(
            text(field(response, "id")) or known.response_id,
            text(field(response, "model")) or known.model_id,
            created_at(field(response, "created_at")) or known.created_at,
        )
        if learned == known:
            return
        self._known = learned
        if self.out is not None and self._terminal is None:
            self.out.append(
                ChatResponseUpdate(
                    response_id=learned.response_id, model_id=learned.model_id, created_at=learned.created_at
                )
            )

    def _finish_all(self) -> Iterator[None]:
        """At the terminal event: each item takes its final form from the terminal ``output`` (or
        ends with what it had), then the items only ``output`` holds go out, in its order. A step
        every ``_STEP`` items; the matching is by lookup, so a long output costs its length."""
        output = items_of(field(self._snapshot, "output"))
        ordered = sorted(self._items, key=lambda item: (item.index, item.sequence))
        by_identity: dict[str, collections.deque[_Item]] = {}
        by_index: dict[int, list[_Item]] = {}
        for item in ordered:
            if item.identity is not None:
                by_identity.setdefault(item.identity, collections.deque()).append(item)
            by_index.setdefault(item.index, []).append(item)
        taken: set[int] = set()
        finals: dict[int, Any] = {}
        newcomers: list[int] = []
        for position, final in enumerate(output):
            match = _match(final, position, by_identity, by_index, taken)
            if match is None:
                newcomers.append(position)
            else:
                taken.add(id(match))
                finals[id(match)] = final
            if position % _STEP == _STEP - 1:
                yield
        for count, item in enumerate(ordered, 1):
            final = finals.get(id(item))
            if final is not None:
                item.finish(final)
            item.end()
            if count % _STEP == 0:
                yield
        for count, position in enumerate(newcomers, 1):
            final = output[position]
            kind = field(final, "type") if is_object(final) else None
            if kind == "function_call":
                # A call maps to one content, exactly as a document's call does: no parts to fold.
                (call,) = item_contents(final)
                self._add_whole(position, call)
            elif isinstance(kind, str):
                item = self._add(_Item(self, position, next(self._sequence)))
                item.finish(final)
                item.end()
            else:
                # Nothing the provider could read back: counted as left out, no item kept for it.
                item_contents(final)
            if count % _STEP == 0:
                yield

    def _index(self, kind: str, event: Any) -> int:
        index = integer(field(event, "output_index"))
        if index is None:
            # The SDK builds events without validation, so a field the provider left out reads as None.
            raise UnreadableResponseError(
                f"a {kind!r} event lacks a required field (output_index)", self.partial()
            )
        return index

    def _arriving(self, kind: str, event: Any, shape: str | None = None, index: int | None = None) -> _Item:
        """The item still arriving at the event's output_index (``index``, when already read); a
        stream resumed with starting_after can begin mid-item, without the item's "added". A part of
        another type than the item there (text where reasoning arrived) starts a new item at the
        same index."""
        if index is None:
            index = self._index(kind, event)
        item = self._current.get(index)
        if item is not None and shape is not None and item.shape() not in (None, shape):
            item = None
        if item is None:
            item = self._current[index] = self._add(_Item(self, index, next(self._sequence)))
        return item

    def _on_lifecycle(self, kind: str, event: Any) -> None:
        response = field(event, "response")
        if is_object(response):
            self._snapshot = response
            self._learn(response)

    def _on_terminal(self, kind: str, event: Any) -> None:
        for _ in self._terminal_steps(kind, event):
            pass

    def _terminal_steps(self, kind: str, event: Any) -> Iterator[None]:
        response = field(event, "response")
        if response is not None and not is_object(response):
            raise UnreadableResponseError(f"the {kind!r} event's response is not an object", self.partial())
        self._on_lifecycle(kind, event)
        self._terminal = kind
        # The terminal event is the provider's last word: whatever follows cannot change the answer.
        self._handlers = {}
        yield from self._finish_all()
        # Without a response object the terminal event's own type still says how it ended; one that
        # still says queued or in_progress did not finish, whatever the event's name.
        snapshot = self._snapshot
        said = text(field(snapshot, "status"))
        status = final_status(said or _TERMINAL_STATUS.get(kind), snapshot)
        result = self._with_known(chat_response(snapshot, self._streamed(), status=status))
        if response is not None:
            unreadable(response, len(items_of(field(response, "output"))), result)
        if not result.messages:
            unfinished(said, snapshot, result)
        result = attrs.evolve(result, usage=with_cost(result.usage, self.cost))
        self._result = result
        if self.out is not None:
            self.out.append(
                ChatResponseUpdate(
                    response_id=result.response_id,
                    model_id=result.model_id,
                    created_at=result.created_at,
                    status=result.status,
                    finish_reason=result.finish_reason,
                    usage=result.usage,
                )
            )

    def _on_failed(self, kind: str, event: Any) -> None:
        self._on_lifecycle(kind, event)
        self._terminal = kind
        self._handlers = {}
        response = self._snapshot
        raise_if_failed(
            self._with_known(chat_response(response, self._streamed(), status="failed")), response
        )

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
            arriving = self._repeated(index, item)
        if arriving is None:
            arriving = self._add(_Item(self, index, next(self._sequence)))
        arriving.finish(item)

    def _repeated(self, index: int, item: Any) -> _Item | None:
        """A repeated "done" for one item (same id, same place) is that item again, not another one.
        Without an id, only the very same contents again tell a repeat from a second item."""
        identity = item_identity(item)
        for earlier in self._at.get(index, ()):
            if not earlier.finished or earlier.identity != identity:
                continue
            if identity is not None or earlier.contents() == item_contents(item):
                return earlier
        return None

    def _late(self, kind: str, event: Any, shape: str) -> _Item | None:
        """The item a part event belongs to, or None for a late repeat of a finished item's part
        (no item is arriving at its index, and the finished one there is the one it names)."""
        index = self._index(kind, event)
        item = self._current.get(index)
        if item is None:
            named = text(field(event, "item_id"))
            for item in self._at.get(index, ()):
                if item.finished and named in (None, item.item_id):
                    return None
        elif item.kind is not None and item.kind == shape:
            # The common case, one delta of the item arriving there: nothing else to look at.
            return item
        return self._arriving(kind, event, shape, index)

    def _on_part_text(self, kind: str, event: Any) -> None:
        """A piece of a text part (``.delta``) or its whole text (``.done``), read as _PART_EVENTS says."""
        (shape, parts, part_kind, position), value, whole = _PART_EVENTS[kind]
        item = self._late(kind, event, shape)
        if item is not None:
            part = item.part(getattr(item, parts), part_kind, field(event, position))
            if whole:
                part.settle(field(event, value))
            else:
                part.add(field(event, value))

    def _on_part_done(self, kind: str, event: Any) -> None:
        """A finished part repeats its whole text once more: it changes nothing, but its string is
        kept in place of the one held (see _Text.adopt). Only a part already arriving is looked at:
        this event neither starts an item nor adds to one, and one it cannot place is let go."""
        index = integer(field(event, "output_index"))
        item = None if index is None else self._current.get(index)
        if item is None:
            return
        part = field(event, "part")
        shape = field(part, "type")
        parts: dict[int, _Text] | None = None
        key = "text"
        if kind == "response.reasoning_summary_part.done":
            parts = item.summary if shape == "summary_text" else None
            position = field(event, "summary_index")
        else:
            message_key = text_key(part)
            if message_key is not None:
                parts, key = item.texts, message_key
            elif shape == "reasoning_text":
                parts = item.reasoning
            position = field(event, "content_index")
        texts = None if parts is None else parts.get(integer(position) or 0)
        if texts is not None:
            texts.adopt(field(part, key))

    def _on_arguments_delta(self, kind: str, event: Any) -> None:
        item = self._late(kind, event, "function_call")
        if item is not None:
            item.arguments.add(field(event, "delta"))

    def _on_arguments_done(self, kind: str, event: Any) -> None:
        item = self._late(kind, event, "function_call")
        if item is not None:
            item.arguments.settle(field(event, "arguments"))
