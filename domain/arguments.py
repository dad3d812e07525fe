"""Strict JSON and the surrogates UTF-8 cannot carry: the rules every layer reads and writes JSON text by,
and the strict parsing of the argument strings a model writes for a function call."""

from __future__ import annotations

import json
import re
import types
from collections.abc import Mapping
from typing import Final, Literal, NoReturn

import attrs

__all__ = [
    "SURROGATE",
    "ArgumentsParseError",
    "NotStrictJsonError",
    "ParseErrorKind",
    "escape_surrogates",
    "has_surrogate",
    "mend_surrogates",
    "parse_arguments",
    "reject_constant",
    "replace_surrogates",
]

ParseErrorKind = Literal["empty", "invalid_json", "not_an_object"]

_MESSAGES: Final[Mapping[ParseErrorKind, str]] = types.MappingProxyType(
    {
        "empty": "The tool arguments were empty; a JSON object was expected.",
        "invalid_json": "The tool arguments were not valid JSON; a JSON object was expected.",
        "not_an_object": "The tool arguments were valid JSON but not a JSON object.",
    }
)


@attrs.frozen
class ArgumentsParseError:
    """Why a model's argument string could not be used.

    ``message`` is one of a few fixed sentences: it never quotes the raw arguments or the parser's
    own exception text, so it is safe to show to the model, to log and to return as a tool result.
    ``position`` is the character offset where strict JSON parsing stopped, when known.
    """

    kind: ParseErrorKind = attrs.field(validator=attrs.validators.in_(tuple(_MESSAGES)))
    message: str
    position: int | None = None

    @classmethod
    def of(cls, kind: ParseErrorKind, position: int | None = None) -> ArgumentsParseError:
        """The error of ``kind`` with its stable message."""
        return cls(kind=kind, message=_MESSAGES[kind], position=position)


# ---------------------------------------------------------------- strict JSON


class NotStrictJsonError(ValueError):
    """Input Python's json accepts but strict JSON does not: ``NaN``, the infinities, a repeated key."""


def reject_constant(name: str) -> NoReturn:
    """``json.loads``'s ``parse_constant``: ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON."""
    raise NotStrictJsonError(f"{name} is not JSON")


def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise NotStrictJsonError("duplicate key")
    return result


_DECODER: Final = json.JSONDecoder(
    object_pairs_hook=_object_without_duplicates,
    parse_constant=reject_constant,
    strict=True,
)


# ---------------------------------------------------------------- surrogates

SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""A surrogate code point: the one thing UTF-8 refuses to encode."""


def has_surrogate(value: str) -> bool:
    """Whether ``value`` holds a surrogate code point.

    Asked of whole answers and request bodies, so at C speed: a regex class scan costs about 30 ns a
    character, encoding well under one.
    """
    if value.isascii():
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return True
    return False


def mend_surrogates(value: str) -> str:
    """``value`` with each high+low surrogate pair joined into the character it encodes.

    Text joined from pieces can hold a pair split across two of them as two code points; joined they
    are the character that was written. Unpaired surrogates stay as they are.
    """
    if not has_surrogate(value):
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(text: str) -> str:
    """JSON text that UTF-8 can carry, meaning unchanged: pairs joined (:func:`mend_surrogates`), each
    unpaired surrogate written as its ``\\uXXXX`` escape. A surrogate can only stand inside a string
    of JSON text (a backslash before it there is already written ``\\\\``), so the escape reads back
    as the very same code point. Text without surrogates is returned as it is."""
    if not has_surrogate(text):
        return text
    return SURROGATE.sub(_escape, mend_surrogates(text))


def replace_surrogates(value: str) -> str:
    """Plain text that UTF-8 can carry: pairs joined, each unpaired surrogate U+FFFD."""
    if not has_surrogate(value):
        return value
    return SURROGATE.sub("\ufffd", mend_surrogates(value))


# A \uD800-\uDFFF escape. A match only says "look closer": an escaped backslash followed by
# "ud800" matches too, and an escaped pair decodes to one astral character, so the decoded value
# decides. Raw surrogate code points in a str are never a pair that UTF-8 can carry, so any left
# after decoding is refused.
_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _may_hold_surrogate(raw: str) -> bool:
    """Whether ``raw`` holds a surrogate code point or its escape: "look closer".

    Checked without a regex over the whole text when it can be, since an alternation over a long
    argument string costs more than parsing it: an escape needs a backslash-u, and a raw surrogate is
    the one code point a UTF codec refuses to encode. UTF-32 is asked, not UTF-8: it refuses the same
    code points and writes them as they are, without a variable-width encoding's work.
    """
    # A one-character search first: in text stored at two bytes a character, a two-character
    # search ("\\u") costs as much as encoding the whole text.
    if "\\" in raw and "\\u" in raw and _ESCAPED_SURROGATE.search(raw):
        return True
    if raw.isascii():
        return False
    try:
        raw.encode("utf-32-le")
    except UnicodeEncodeError:
        return True
    return False


def _holds_surrogate(value: object) -> bool:
    """True when any key or string in the decoded ``value`` holds a surrogate code point.

    Iterative, so that nesting as deep as the decoder accepts cannot exhaust the stack here.
    """
    pending: list[object] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def parse_arguments(raw: str) -> Mapping[str, object] | ArgumentsParseError:
    """Parse ``raw`` as one strict JSON object; never raises, whatever ``raw`` is.

    Returns a read-only mapping on success and an :class:`ArgumentsParseError` otherwise.
    """
    if not raw.strip():
        return ArgumentsParseError.of("empty")
    try:
        value = _DECODER.decode(raw)
    except json.JSONDecodeError as exc:
        return ArgumentsParseError.of("invalid_json", exc.pos)
    except (ValueError, RecursionError, MemoryError):
        # ValueError: NaN/Infinity, a repeated key, an integer too long to convert.
        # RecursionError: nesting deeper than the parser will follow.
        return ArgumentsParseError.of("invalid_json")
    # I-JSON (RFC 7493, section 2.1): a lone surrogate cannot be encoded as UTF-8, so the next
    # request (or the tool's result) would fail to send. A decoded pair is one astral character.
    if _may_hold_surrogate(raw) and _holds_surrogate(value):
        return ArgumentsParseError.of("invalid_json")
    if not isinstance(value, dict):
        return ArgumentsParseError.of("not_an_object")
    return types.MappingProxyType(value)
