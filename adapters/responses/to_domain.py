"""One mapping from the SDK's Responses objects (items, usage, a whole Response) to domain values.

The SDK builds its models without validation, so any field can hold any JSON value (or be
missing); every read of a provider object goes through :func:`field`, and a value of the wrong
type reads as absent, except in the fields that say what the answer is (:func:`unreadable`).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import math
import types
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Final

from openai import BaseModel

from adapters.responses.error_mapping import ProviderFailureError, UnreadableResponseError
from domain import (
    ChatMessage,
    ChatResponse,
    Content,
    FinishReason,
    FunctionCallContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
)

__all__ = [
    "chat_response",
    "counting_left_out",
    "created_at",
    "field",
    "final_status",
    "finish_reason",
    "integer",
    "is_object",
    "item_contents",
    "item_identity",
    "items_of",
    "left_out",
    "provider_failure",
    "provider_item",
    "raise_if_failed",
    "reasoning_content",
    "response_contents",
    "text",
    "unfinished",
    "unreadable",
    "usage",
]

_LOGGER: Final = logging.getLogger("adapters.responses.to_domain")
_INCOMPLETE_REASONS: Final[dict[str, FinishReason]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
_TEXT_PARTS: Final = frozenset({"output_text", "refusal"})
# Where a message part holds its text, by part type; the text is the content's, not the provider item's.
_TEXT_KEYS: Final[Mapping[str, str]] = types.MappingProxyType({"output_text": "text", "refusal": "refusal"})
# What a call or a reasoning item's contents hold apart from the provider item (large, and held once).
_HELD_APART: Final[Mapping[str, str]] = types.MappingProxyType(
    {"function_call": "arguments", "reasoning": "encrypted_content"}
)
_SCALARS: Final = (str, bytes, int, float, bool, list, tuple, type(None))
REASONING_SEPARATOR: Final = "\n\n"
# Statuses of a response that has not finished: as the final word on an answer, it is incomplete.
_UNFINISHED: Final = frozenset({"queued", "in_progress"})


# Whether a type is an SDK model, by type: ``isinstance`` against pydantic's BaseModel goes through
# ABCMeta's Python-level __instancecheck__, and several fields of every delta event are read. The
# classes are the program's own (the SDK's event and item models, dict, list...); the first few
# hundred are kept, so that classes made at run time could not make it grow without end.
_IS_MODEL: Final[dict[type, bool]] = {}
_TYPES_KEPT: Final = 512


def field(obj: Any, name: str) -> Any:
    """``obj``'s field ``name`` (an SDK model's attribute or a mapping's key), or None."""
    model = _IS_MODEL.get(type(obj))
    if model is None:
        model = isinstance(obj, BaseModel)
        if len(_IS_MODEL) < _TYPES_KEPT:
            _IS_MODEL[type(obj)] = model
    if model:
        # Every event the SDK builds, several fields read per delta: the quick test comes first.
        return getattr(obj, name, None)
    if isinstance(obj, Mapping):
        return obj.get(name)
    if isinstance(obj, _SCALARS):
        return None
    return getattr(obj, name, None)


def is_object(value: object) -> bool:
    """True for what a JSON object became: an SDK model or a mapping."""
    return not isinstance(value, _SCALARS)


def text(value: object) -> str | None:
    """``value`` if it is a string, else None."""
    return value if isinstance(value, str) else None


def integer(value: object) -> int | None:
    """``value`` if it is an integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def items_of(value: object) -> Sequence[Any]:
    """A list field's items; anything that is not a list reads as empty."""
    return value if isinstance(value, list | tuple) else ()


def created_at(value: object) -> datetime | None:
    """Epoch seconds as a UTC datetime; anything else, or a number no datetime can hold, is None."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None


def usage(value: Any) -> Usage | None:
    """Token counts as reported; details a gateway left out stay None.

    A count is a whole number from zero up. Anything else a gateway puts there (``-41000000``,
    ``12.5``, ``"12"``, ``true``) is not a count: summed, a negative one would give a budget tokens
    back and the run would never stop, so it reads as not reported (None), with one WARNING record
    per response naming the fields.
    """
    if not is_object(value):
        return None
    wrong: list[str] = []

    def count(container: Any, name: str) -> int | None:
        raw = field(container, name)
        number = integer(raw)
        if raw is not None and (number is None or number < 0):
            wrong.append(name)
            return None
        return number

    read = Usage(
        input_tokens=count(value, "input_tokens"),
        output_tokens=count(value, "output_tokens"),
        total_tokens=count(value, "total_tokens"),
        cached_input_tokens=count(field(value, "input_tokens_details"), "cached_tokens"),
        reasoning_tokens=count(field(value, "output_tokens_details"), "reasoning_tokens"),
    )
    if wrong:
        _LOGGER.warning(
            "ignoring the usage's %s: not a token count (a whole number from 0 up)",
            ", ".join(wrong),
            extra={"usage_fields": tuple(wrong)},
        )
    return read


def _item_data(item: Any) -> Any:
    """The item as plain JSON values: an SDK model's fields it set (extras included), or a mapping's."""
    to_dict = getattr(item, "to_dict", None)
    return to_dict(mode="json", warnings=False) if callable(to_dict) else dict(item)


def _item_json(data: Any) -> str:
    """``data`` as compact JSON with its keys sorted at every level.

    One item reads the same however it arrived: the SDK's model writes its known fields in its
    own order, a mapping (a heavy body or event is read as one) in the provider's order, and the
    two must make equal contents. ``allow_nan=False``: the SDK refuses NaN when it sends the item
    back, so it is refused here.
    """
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _raw_json(item: Any) -> str | None:
    """The item as the provider sent it (fields it set, extras included), as compact JSON with its
    keys sorted; None when it cannot be written back as a JSON object (not an object, NaN, too
    deep, a key that is not a string, ...)."""
    try:
        return _item_json(_item_data(item))
    except (ValueError, TypeError, RecursionError):
        return None


def _without(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``data`` without ``key`` when it holds a string there (a value the contents keep instead)."""
    return {name: value for name, value in data.items() if name != key or not isinstance(value, str)}


def text_key(part: object) -> str | None:
    """Where a message part holds its text (``text`` for ``output_text``, ``refusal`` for a
    refusal); None for any other part, a part whose type is not a string, or one that is no
    object (an SDK model or a mapping). The one rule both folding and sending back use to find a
    message's text parts."""
    if not is_object(part):
        return None
    kind = field(part, "type")
    return _TEXT_KEYS.get(kind) if isinstance(kind, str) else None


def _part_without_text(part: object) -> object:
    key = text_key(part)
    return _without(part, key) if key is not None and isinstance(part, Mapping) else part


def provider_item(item: Any) -> str | None:
    """What a content keeps of the output item it came from: the item as the provider sent it, as
    JSON (keys sorted, so one item always reads the same), without what the contents hold apart (a
    message's part texts, a call's arguments, a reasoning item's encrypted content). None when it
    cannot be written back as a JSON object."""
    try:
        data = _item_data(item)
        kind = data.get("type")
        if kind == "message" and isinstance(data.get("content"), list):
            data = {**data, "content": [_part_without_text(part) for part in data["content"]]}
        elif isinstance(kind, str) and kind in _HELD_APART:
            data = _without(data, _HELD_APART[kind])
        return _item_json(data)
    except (ValueError, TypeError, RecursionError):
        return None


def reasoning_content(
    item_id: str | None,
    summary: Sequence[str],
    texts: Sequence[str],
    encrypted_content: str | None,
    provider: str | None = None,
) -> ReasoningContent:
    return ReasoningContent(
        text=REASONING_SEPARATOR.join((*summary, *texts)),
        item_id=item_id,
        encrypted_content=encrypted_content,
        summary=tuple(summary),
        provider_item=provider,
    )


def _part_texts(parts: object, kinds: frozenset[str]) -> list[str]:
    texts = []
    for part in items_of(parts):
        kind = field(part, "type")
        if isinstance(kind, str) and kind in kinds:
            texts.append(text(field(part, "refusal" if kind == "refusal" else "text")) or "")
    return texts


# The items left out while one response is read, by reason: logged once, with the counts, at its end.
_LEFT_OUT: Final[ContextVar[collections.Counter[str] | None]] = ContextVar("responses_left_out", default=None)


def left_out(reason: str, message: str) -> None:
    """Note an output item left out; outside :func:`counting_left_out`, ``message`` is logged for it."""
    counter = _LEFT_OUT.get()
    if counter is None:
        _LOGGER.warning(message)
    else:
        counter[reason] += 1


@contextlib.contextmanager
def counting_left_out(logger: logging.Logger) -> Iterator[None]:
    """Within the block, items left out are counted; at its end one WARNING on ``logger`` says how
    many and why, however many there were (10,000 unusable items are one line, not 10,000)."""
    counter: collections.Counter[str] = collections.Counter()
    token = _LEFT_OUT.set(counter)
    try:
        yield
    finally:
        _LEFT_OUT.reset(token)
        if counter:
            total = sum(counter.values())
            reasons = ", ".join(f"{count} {reason}" for reason, count in sorted(counter.items()))
            logger.warning(
                "%d output item%s left out of one response (%s)",
                total,
                "s were" if total != 1 else " was",
                reasons,
                extra={"left_out": total},
            )


def item_identity(item: Any) -> str | None:
    """What tells one output item from another: its id, else a call's call_id."""
    return text(field(item, "id")) or text(field(item, "call_id"))


def item_contents(item: Any) -> list[Content]:
    """The contents of one finished output item, in the order they appear in it.

    An item that is not a JSON object, or a provider item that cannot be written back as one,
    is left out (and logged): it could not go back to the provider in the next request.
    """
    if not is_object(item):
        left_out(
            "not a JSON object",
            f"An output item that is not a JSON object ({type(item).__name__}) was left out",
        )
        return []
    kind = field(item, "type")
    item_id = text(field(item, "id"))
    if kind == "message":
        provider = provider_item(item)
        return [TextContent(part, provider) for part in _part_texts(field(item, "content"), _TEXT_PARTS)]
    if kind == "function_call":
        return [
            FunctionCallContent.parse(
                call_id=text(field(item, "call_id")) or item_id or "",
                name=text(field(item, "name")) or "",
                raw_arguments=text(field(item, "arguments")) or "",
                item_id=item_id,
                provider_item=provider_item(item),
            )
        ]
    if kind == "reasoning":
        summary = _part_texts(field(item, "summary"), frozenset({"summary_text"}))
        texts = _part_texts(field(item, "content"), frozenset({"reasoning_text"}))
        encrypted = text(field(item, "encrypted_content"))
        return [reasoning_content(item_id, summary, texts, encrypted, provider_item(item))]
    raw_json = _raw_json(item) if isinstance(kind, str) and kind else None
    if raw_json is None:
        # Without a type the provider cannot read the item back; without JSON it cannot be sent.
        left_out(
            "without a type or not writable back as JSON",
            "An output item without a type, or not writable back as JSON, was left out",
        )
        return []
    return [ProviderItemContent(type=kind, raw_json=raw_json, item_id=item_id)]


def final_status(status: str | None, response: Any) -> str | None:
    """The status of a final answer: one still ``queued`` or ``in_progress`` did not finish, so it is
    ``incomplete`` (its finish reason unknown); any other status is as the provider said. A
    background response (``background: true``) is a handle whose status is meant as it is."""
    if status in _UNFINISHED and field(response, "background") is not True:
        return "incomplete"
    return status


def unfinished(said: str | None, response: Any, partial: ChatResponse) -> None:
    """Raise for a final answer that did not finish and brought nothing usable (no output at all)."""
    if final_status(said, response) != said:
        raise UnreadableResponseError(f"the response ended {said} with no output", partial)


def unreadable(response: Any, items: int, partial: ChatResponse) -> None:
    """Raise for a final answer this package cannot read, where reading it as absent would make an
    empty answer look complete.

    A field that says what the answer is must have its type when it is there: ``output`` a list
    and ``status`` a string (either may be absent or null, as a gateway leaves them out). And an
    answer whose ``output`` held ``items`` items of which none could be read (each left out, see
    :func:`left_out`) is not an empty answer. Any other field of the wrong type (an id, the model,
    ``created_at``, ``usage``, an unknown key) reads as absent: the answer itself is still known.
    """
    output = field(response, "output")
    if output is not None and not isinstance(output, list | tuple):
        raise UnreadableResponseError(f"the response's output is a {_json_kind(output)}, not a list", partial)
    status = field(response, "status")
    if status is not None and not isinstance(status, str):
        raise UnreadableResponseError(
            f"the response's status is a {_json_kind(status)}, not a string", partial
        )
    if items and not partial.messages:
        raise UnreadableResponseError(
            f"none of the response's {items} output item{'s' if items != 1 else ''} could be read", partial
        )


def _json_kind(value: object) -> str:
    """What a JSON value is, in JSON's words, without quoting it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    return "object"


def finish_reason(status: object, incomplete_reason: object, has_calls: bool) -> FinishReason | None:
    """Why the model stopped; None while it has not (queued, in progress, a partial answer)."""
    if status == "incomplete":
        return _INCOMPLETE_REASONS.get(incomplete_reason) if isinstance(incomplete_reason, str) else None
    if status != "completed":
        return None
    return "tool_calls" if has_calls else "stop"


def chat_response(response: Any, contents: Sequence[Content], *, status: str | None = None) -> ChatResponse:
    """The ChatResponse for ``contents`` with the metadata of ``response`` (a Response or a snapshot)."""
    status = status if status is not None else text(field(response, "status"))
    reason = field(field(response, "incomplete_details"), "reason")
    has_calls = any(isinstance(c, FunctionCallContent) for c in contents)
    return ChatResponse(
        messages=(ChatMessage("assistant", contents),) if contents else (),
        response_id=text(field(response, "id")),
        model_id=text(field(response, "model")),
        created_at=created_at(field(response, "created_at")),
        status=status,
        finish_reason=finish_reason(status, reason, has_calls),
        usage=usage(field(response, "usage")),
    )


def response_contents(response: Any) -> list[Content]:
    return [content for item in items_of(field(response, "output")) for content in item_contents(item)]


def provider_failure(error: Any, fallback: str, partial: ChatResponse | None) -> ProviderFailureError:
    """The finding for a provider's error object, event or JSON mapping, with its own code and message."""
    return ProviderFailureError(field(error, "code"), field(error, "message"), fallback, partial)


def raise_if_failed(result: ChatResponse, response: Any) -> ChatResponse:
    """``result`` unless the provider marked the response failed, which raises with it as partial."""
    if result.status != "failed":
        return result
    raise provider_failure(field(response, "error"), "the provider reported the response failed", result)
