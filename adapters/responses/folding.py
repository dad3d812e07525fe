"""The one event folder: SDK stream events in, one ChatResponse (or a typed error) out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from adapters.responses.mapping import (
    chat_response,
    item_contents,
    provider_failure,
    raise_if_failed,
    reasoning_content,
)
from domain import (
    ChatResponse,
    Content,
    FunctionCallContent,
    MalformedResponseError,
    TextContent,
)

__all__ = ["EventFolder"]


# Deltas are joined this many at a time as they arrive: 80k deltas then leave a few hundred strings
# behind instead of 80k small ones, and every character is still copied only twice (linear time).
_CHUNK: Final = 256


def _join(deltas: list[str]) -> str:
    try:
        return "".join(deltas)
    except TypeError:
        # A delta event without its text (the SDK fills a missing field with None) adds nothing.
        return "".join(delta for delta in deltas if isinstance(delta, str))


class _Text:
    """One text part arriving as deltas: kept in joined chunks plus a short tail of recent deltas."""

    __slots__ = ("chunks", "tail")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.tail: list[str] = []

    def add(self, delta: str) -> None:
        tail = self.tail
        tail.append(delta)
        if len(tail) >= _CHUNK:
            self.chunks.append(_join(tail))
            tail.clear()

    def settle(self, text: object) -> None:
        """The whole text, as a ".done" event repeats it; without it the deltas stand."""
        if isinstance(text, str):
            self.chunks = [text]
            self.tail = []

    def value(self) -> str:
        if not self.tail:
            return "".join(self.chunks)
        return "".join([*self.chunks, _join(self.tail)])


def _joined(parts: dict[int, _Text]) -> list[str]:
    return [parts[index].value() for index in sorted(parts, key=lambda index: index or 0)]


def _text(parts: dict[int, _Text], index: int) -> _Text:
    text = parts.get(index)
    if text is None:
        text = parts[index] = _Text()
    return text


def _required_index(value: int | None) -> int:
    if value is None:
        # The SDK builds events without validation, so a field the provider left out reads as None.
        raise AttributeError("output_index", name="output_index")
    return value


class _Partial:
    """An output item still arriving: its parts' deltas, joined as they come."""

    __slots__ = ("added", "arguments", "call_id", "item_id", "kind", "name", "reasoning", "summary", "texts")

    def __init__(self) -> None:
        self.kind: str | None = None
        self.item_id: str | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.added: Any = None
        self.texts: dict[int, _Text] = {}
        self.summary: dict[int, _Text] = {}
        self.reasoning: dict[int, _Text] = {}
        self.arguments = _Text()

    def contents(self) -> list[Content]:
        kind = self.kind
        if kind == "function_call" or (kind is None and (self.arguments.chunks or self.arguments.tail)):
            return [
                FunctionCallContent.parse(
                    call_id=self.call_id or self.item_id or "",
                    name=self.name or "",
                    raw_arguments=self.arguments.value(),
                    item_id=self.item_id,
                )
            ]
        if kind == "reasoning" or (kind is None and (self.summary or self.reasoning)):
            encrypted = getattr(self.added, "encrypted_content", None)
            return [
                reasoning_content(self.item_id, _joined(self.summary), _joined(self.reasoning), encrypted)
            ]
        if kind == "message" or kind is None:
            return [TextContent(text) for text in _joined(self.texts)]
        # A hosted-tool item that never finished: all we have is how it started.
        return item_contents(self.added)


class EventFolder:
    """Folds one response's events, in order, into a :class:`ChatResponse`.

    Feed every event to :meth:`feed`, then call :meth:`result`. Dispatch is on the ``type`` string
    alone because the SDK maps unknown types onto unrelated classes; unknown types are skipped.
    Deltas are kept only until their item finishes; nothing of an event is kept once it is folded.
    ``response.failed`` and ``error`` events raise :class:`ResponseFailedError` as they arrive.
    """

    __slots__ = ("_done", "_handlers", "_partials", "_snapshot", "_terminal")

    def __init__(self) -> None:
        self._snapshot: Any = None
        self._terminal: str | None = None
        self._done: dict[int, list[Content]] = {}
        self._partials: dict[int, _Partial] = {}
        self._handlers: dict[str, Callable[[Any], None]] = {
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
        """Fold one event; raises :class:`ResponseFailedError` for failure events."""
        handler = self._handlers.get(event.type)
        if handler is None:
            return
        try:
            handler(event)
        except AttributeError as exc:
            raise MalformedResponseError(
                f"a {event.type!r} event lacks a required field ({exc.name})",
                response_id=self._response_id,
                model_id=self._model_id,
                partial=self.partial(),
            ) from None

    def result(self) -> ChatResponse:
        """The folded response; raises :class:`MalformedResponseError` if no terminal event arrived."""
        if self._terminal is None:
            raise MalformedResponseError(
                "the event stream ended before a terminal event (response.completed, .incomplete or .failed)",
                response_id=self._response_id,
                model_id=self._model_id,
                partial=self.partial(),
            )
        response = self._snapshot
        if getattr(response, "output", None):
            # The terminal event's output is the provider's final word on the items.
            return chat_response(response, [c for item in response.output for c in item_contents(item)])
        return chat_response(response, self._assembled())

    def partial(self) -> ChatResponse | None:
        """What has arrived so far, or None when nothing has."""
        if self._snapshot is None and not self._done and not self._partials:
            return None
        return chat_response(self._snapshot, self._assembled())

    @property
    def _response_id(self) -> str | None:
        return getattr(self._snapshot, "id", None)

    @property
    def _model_id(self) -> str | None:
        return getattr(self._snapshot, "model", None)

    def _assembled(self) -> list[Content]:
        done, partials = self._done, self._partials
        contents: list[Content] = []
        for index in sorted(done.keys() | partials.keys()):
            contents.extend(done[index] if index in done else partials[index].contents())
        return contents

    def _partial(self, index: int | None) -> _Partial:
        partial = self._partials.get(index)  # type: ignore[arg-type]  # None is never a key, so it misses
        if partial is None:
            # A stream resumed with starting_after can begin mid-item, without the item's "added".
            partial = self._partials[_required_index(index)] = _Partial()
        return partial

    def _on_lifecycle(self, event: Any) -> None:
        self._snapshot = event.response

    def _on_terminal(self, event: Any) -> None:
        self._snapshot = event.response
        self._terminal = event.type
        # The terminal event is the provider's last word: whatever follows cannot change the answer.
        self._handlers = {}

    def _on_failed(self, event: Any) -> None:
        self._snapshot = event.response
        self._terminal = event.type
        response = event.response
        raise_if_failed(chat_response(response, self._assembled(), status="failed"), response)

    def _on_error(self, event: Any) -> None:
        raise provider_failure(
            event,
            "the provider sent an error event",
            response_id=self._response_id,
            model_id=self._model_id,
            partial=self.partial(),
        )

    def _on_item_added(self, event: Any) -> None:
        item = event.item
        partial = self._partial(event.output_index)
        partial.added = item
        partial.kind = getattr(item, "type", None)
        partial.item_id = getattr(item, "id", None)
        partial.call_id = getattr(item, "call_id", None)
        partial.name = getattr(item, "name", None)

    def _on_item_done(self, event: Any) -> None:
        index = _required_index(event.output_index)
        item = event.item
        partial = self._partials.pop(index, None)
        if getattr(item, "type", None) == "function_call" and not isinstance(
            getattr(item, "arguments", None), str
        ):
            # Some gateways finish a call without repeating its arguments: the deltas are all there is.
            if partial is None:
                partial = _Partial()
            partial.kind = "function_call"
            partial.item_id = getattr(item, "id", None) or partial.item_id
            partial.call_id = getattr(item, "call_id", None) or partial.call_id
            partial.name = getattr(item, "name", None) or partial.name
            self._done[index] = partial.contents()
            return
        self._done[index] = item_contents(item)

    def _on_text_delta(self, event: Any) -> None:
        _text(self._partial(event.output_index).texts, event.content_index).add(event.delta)

    # A ".done" event repeats the whole text, so it replaces the deltas and frees them; one that
    # arrives without its text (a gateway left the field out) leaves the deltas as they are.

    def _on_text_done(self, event: Any) -> None:
        _text(self._partial(event.output_index).texts, event.content_index).settle(event.text)

    def _on_refusal_done(self, event: Any) -> None:
        _text(self._partial(event.output_index).texts, event.content_index).settle(event.refusal)

    def _on_summary_delta(self, event: Any) -> None:
        _text(self._partial(event.output_index).summary, event.summary_index).add(event.delta)

    def _on_summary_done(self, event: Any) -> None:
        _text(self._partial(event.output_index).summary, event.summary_index).settle(event.text)

    def _on_reasoning_delta(self, event: Any) -> None:
        _text(self._partial(event.output_index).reasoning, event.content_index).add(event.delta)

    def _on_reasoning_done(self, event: Any) -> None:
        _text(self._partial(event.output_index).reasoning, event.content_index).settle(event.text)

    def _on_arguments_delta(self, event: Any) -> None:
        self._partial(event.output_index).arguments.add(event.delta)

    def _on_arguments_done(self, event: Any) -> None:
        self._partial(event.output_index).arguments.settle(event.arguments)
