"""JSON text parsed a bounded piece at a time, to exactly what ``json.loads`` makes of it.

``json.loads`` of one large event line or document runs in one call that holds the GIL (a worker
thread does not let the event loop run either). :class:`JsonInSteps` parses the same text in steps
of at most about :data:`PIECE` characters of C work, so that whoever drives it can give the loop
control between two steps, and a deadline can end the parse part way.

Every value is still built by the standard library's own C scanner, so numbers (huge, NaN,
Infinity), strings (escapes, lone surrogates, control characters), duplicate keys and key order
come out exactly as ``json.loads`` makes them. Only the walk over the large containers is ours: a
container whose contents do not fit in one piece is opened here, and its elements (or members) are
handed to the scanner a run at a time, as ``[`` + run + ``]``, where a run ends right after a ``}``,
``]`` or ``"`` of the text: such a run parses only if it is exactly a sequence of whole elements,
so a run that does not parse is halved, and a single element larger than a piece is opened in turn
(a string is decoded a piece at a time, never cut inside an escape or between the two escapes of a
surrogate pair). The run is wrapped in as many arrays as there are containers open around it, so
the scanner meets the nesting ``json.loads`` would, and a document too deep for ``json.loads`` is a
``RecursionError`` here too. Errors are ``json.JSONDecodeError`` with the position ``json.loads``
reports for the first fault (the message of an error found by the walk may be worded differently).

ijson (yajl) parses in pieces too, but not to ``json.loads``'s values: it turns an escaped lone
surrogate (``"\\ud800"``, which a provider's call id may hold) into ``?``, and refuses integers past
64 bits, ``1e400``, ``NaN`` and ``Infinity``, all of which ``json.loads`` reads.

The parse also keeps the estimate of what the values it built take (:func:`parsed_size`, counted on
each run it parses): past ``max_size`` it stops with :class:`ParsedTooLargeError`, so a text of many
small values is refused before it takes more than about that much memory.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from _json import make_scanner, scanstring
from collections.abc import Generator, Iterator
from typing import Any, Final, cast

__all__ = [
    "LARGE",
    "PIECE",
    "JsonInSteps",
    "ParsedTooLargeError",
    "over",
    "parsed",
    "parsed_size",
    "quick_size",
]

# Characters of text handed to the C scanner in one step at most: about a millisecond of its work.
PIECE: Final = 64 * 1024
# Text longer than this (characters) is parsed in steps; shorter text goes to json.loads in one call.
LARGE: Final = 1024 * 1024

# The standard library's C scanner, as json.loads uses it (strict: no control characters in strings).
_SCAN: Final = make_scanner(cast(Any, json.JSONDecoder()))
_SCANSTRING: Final = scanstring
_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_COMMA: Final = re.compile(r"[ \t\n\r]*,[ \t\n\r]*").match
_CONTROL: Final = re.compile(r"[\x00-\x1f]")
_HEX: Final = "[0-9a-fA-F]"
# What a piece of a string may hold: whole characters and whole escapes, a surrogate pair's two
# escapes together, and a lone high surrogate only where what follows shows it is not a pair.
_STRING_RUN: Final = re.compile(
    rf"""(?:
        [^"\\]+
      | \\u[dD][89abAB]{_HEX}{{2}}\\u[dD][c-fC-F]{_HEX}{{2}}
      | \\u[dD][89abAB]{_HEX}{{2}}(?=[^\\]|\\[^u]|\\u{_HEX}{{4}})
      | \\u(?![dD][89abAB]){_HEX}{{4}}
      | \\[^u]
    )*""",
    re.VERBOSE | re.DOTALL,
)
# A JSON string (or one left open at the end of the text): what the size estimate leaves out.
_STRING: Final = r'"[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)'
_STRINGS: Final = re.compile(_STRING, re.DOTALL)
_STRINGS_IN_BYTES: Final = re.compile(_STRING.encode(), re.DOTALL)
_ENDS: Final = ("}", "]", '"')
_BOM_MESSAGE: Final = "Unexpected UTF-8 BOM (decode using utf-8-sig)"
_UNTERMINATED: Final = "Unterminated string starting at"

# The walk's states: a value starts here; a value was made; an element or member starts here; after a value.
_VALUE, _MADE, _MEMBER, _AFTER = range(4)


def _skip(s: str, p: int) -> int:
    """Where the whitespace from ``p`` ends."""
    found = _WHITESPACE.match(s, p)
    return p if found is None else found.end()


class ParsedTooLargeError(ValueError):
    """The values parsed so far would take more than ``limit`` bytes by :func:`parsed_size`."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the text would take about {size} bytes once parsed, more than {limit}")
        self.size = size
        self.limit = limit


def _estimate(braces: int, empty: int, brackets: int, strings: int, commas: int, length: int) -> int:
    return length + 200 * (braces - empty) + 72 * (empty + brackets) + 50 * strings + 32 * commas


def _quick(braces: int, brackets: int, quotes: int, commas: int, length: int) -> int:
    """:func:`_estimate` with every ``{`` taken for an object with members and every quote for half a
    string: never less, from four counts of one character each (a count of two, ``{}`` or ``\\"``,
    runs at a third of the speed; they only make the estimate closer)."""
    return length + 200 * braces + 72 * brackets + 25 * (quotes + 1) + 32 * commas


def quick_size(data: str | bytes | bytearray) -> int:
    """:func:`parsed_size` with the marks inside strings counted too: never less, and one ``count``
    of one character per mark (a string's braces and commas count as values, so a text of many is
    over-estimated)."""
    if isinstance(data, str):
        braces, brackets, quotes, commas = (data.count(mark) for mark in ("{", "[", '"', ","))
    else:
        braces, brackets, quotes, commas = (data.count(mark) for mark in (b"{", b"[", b'"', b","))
    return _quick(braces, brackets, quotes, commas, len(data))


def parsed_size(data: str | bytes | bytearray) -> int:
    """About how many bytes ``json.loads`` builds from ``data``, at most, counted at C speed.

    Text parses to about its own size; what makes a small text large is many small values, each a
    whole Python object with its place in its container: an object with members about 200 bytes, an
    empty object or an array about 72, a string about 50, any element (a comma) 32 more. Strings are
    left out before the braces and commas are counted, so the text inside them counts as text only
    (a regular expression's pass, slower than :func:`quick_size`'s counts). 60 MiB of ``[{},{},...]``
    is 1.4 GiB parsed.
    """
    if isinstance(data, str):
        bare, strings = _STRINGS.subn('""', data)
        counts = [bare.count(mark) for mark in ("{", "{}", "[", ",")]
    else:
        bare_bytes, strings = _STRINGS_IN_BYTES.subn(b'""', data)
        counts = [bare_bytes.count(mark.encode()) for mark in ("{", "{}", "[", ",")]
    braces, empty, brackets, commas = counts
    return _estimate(braces, empty, brackets, strings, commas, len(data))


def over(data: str | bytes | bytearray, limit: int) -> int | None:
    """:func:`parsed_size` of ``data`` when it is more than ``limit``, else None; the quick count
    first, so that the string-aware one runs only for a text that may be over."""
    if quick_size(data) <= limit:
        return None
    size = parsed_size(data)
    return size if size > limit else None


def _quick_in(text: str, start: int, end: int) -> int:
    """:func:`quick_size` of ``text[start:end]``, without the copy."""
    braces, brackets, quotes, commas = (text.count(mark, start, end) for mark in ("{", "[", '"', ","))
    return _quick(braces, brackets, quotes, commas, end - start)


def _last(text: str, common: str, rare: str, start: int, end: int) -> int:
    """Where the last ``common`` or ``rare`` of ``text[start:end]`` starts (-1 if neither is there):
    ``rare`` (a container's closing mark) is looked for only after the last ``common`` (a comma), so
    the piece is searched once, not twice from its end."""
    found = text.rfind(common, start, end)
    return max(found, text.rfind(rare, max(found, start), end))


class JsonInSteps:
    """One JSON text, parsed by iterating :meth:`steps`; the value is then :attr:`value`.

    Each step hands the C scanner about :data:`PIECE` characters at most (a string or number larger
    than that as a whole is the exception only for numbers, which the scanner reads at memory speed).
    Raises what ``json.loads`` raises (``json.JSONDecodeError``, ``RecursionError``, ``ValueError``
    for an integer of too many digits), and :class:`ParsedTooLargeError` past ``max_size``.
    """

    def __init__(self, text: str, *, max_size: int | None = None, piece: int = PIECE) -> None:
        self._text = text
        self._max_size = max_size
        self._piece = max(piece, 16)
        self.value: Any = None
        self.size = 0
        # Until the quick counts say too much, each run's: what they added, and where the runs are.
        self._precise = False
        self._quick = 0
        self._runs: list[tuple[int, int]] = []
        # Characters handed to the C scanner so far (what a step's work is measured in).
        self.scanned = 0

    def _grew(self, size: int) -> None:
        self.size += size

    def _counted(self, start: int, end: int) -> None:
        """The values of ``text[start:end]`` were built: counted quickly until that says too much."""
        if self._precise:
            self.size += parsed_size(self._text[start:end])
            return
        quick = _quick_in(self._text, start, end)
        self.size += quick
        self._quick += quick
        self._runs.append((start, end))

    def _checked(self) -> Iterator[None]:
        """Past ``max_size`` by the quick counts, the runs are counted again leaving out what strings
        hold (a step each); past it still, the parse stops."""
        limit = self._max_size
        if limit is None or self.size <= limit:
            return
        if not self._precise:
            self._precise = True
            self.size -= self._quick
            for start, end in self._runs:
                self.size += parsed_size(self._text[start:end])
                yield
            self._runs = []
        if self.size > limit:
            raise ParsedTooLargeError(self.size, limit)

    def steps(self) -> Iterator[None]:
        """Parse, yielding between two steps; :attr:`value` holds the result once exhausted."""
        s = self._text
        if s.startswith("\ufeff"):
            raise json.JSONDecodeError(_BOM_MESSAGE, s, 0)
        ws = _skip
        piece = self._piece
        # The containers open around the current position, and the key each dict waits to fill.
        stack: list[Any] = []
        keys: list[str] = []
        p = ws(s, 0)
        state = _VALUE
        value: Any = None
        deepest = sys.getrecursionlimit()
        last = 0
        while True:
            if self.scanned - last >= piece:
                last = self.scanned
                yield
                yield from self._checked()
            if state is _VALUE:
                first = s[p : p + 1]
                if first in ("{", "["):
                    container: Any = {} if first == "{" else []
                    self._grew(200 if first == "{" else 72)
                    p = ws(s, p + 1)
                    if s[p : p + 1] == ("}" if first == "{" else "]"):
                        value, p, state = container, p + 1, _MADE
                        continue
                    if len(stack) >= deepest:
                        # What json.loads's own recursion would meet first.
                        raise RecursionError(
                            "maximum recursion depth exceeded while decoding a JSON document"
                        )
                    stack.append(container)
                    state = _MEMBER
                    continue
                if first == '"':
                    value, end = yield from self._string(s, p + 1)
                else:
                    try:
                        value, end = _SCAN(s, p)
                    except StopIteration as stop:
                        raise json.JSONDecodeError("Expecting value", s, stop.value) from None
                    self.scanned += end - p
                self._grew(32 + end - p)
                p, state = end, _MADE
            elif state is _MADE:
                if not stack:
                    end = ws(s, p)
                    if end != len(s):
                        raise json.JSONDecodeError("Extra data", s, end)
                    yield from self._checked()
                    self.value = value
                    return
                top = stack[-1]
                if type(top) is dict:
                    top[keys.pop()] = value
                else:
                    top.append(value)
                state = _AFTER
            elif state is _AFTER:
                p = ws(s, p)
                top = stack[-1]
                mark = s[p : p + 1]
                if mark == ",":
                    p = ws(s, p + 1)
                    state = _MEMBER
                elif mark == ("}" if type(top) is dict else "]"):
                    value, p, state = stack.pop(), p + 1, _MADE
                else:
                    raise json.JSONDecodeError("Expecting ',' delimiter", s, p)
            else:  # _MEMBER: a run of whole elements or members, else the next one alone
                top = stack[-1]
                is_dict = type(top) is dict
                end, run = self._run(s, p, is_dict, len(stack) - 1)
                if run is not None:
                    if is_dict:
                        top.update(run)
                    else:
                        top.extend(run)
                    p, state = end, _AFTER
                elif not is_dict:
                    state = _VALUE
                else:
                    if s[p : p + 1] != '"':
                        raise json.JSONDecodeError("Expecting property name enclosed in double quotes", s, p)
                    key, end = yield from self._string(s, p + 1)
                    p = ws(s, end)
                    if s[p : p + 1] != ":":
                        raise json.JSONDecodeError("Expecting ':' delimiter", s, p)
                    keys.append(key)
                    p = ws(s, p + 1)
                    state = _VALUE

    def _run(self, s: str, p: int, is_dict: bool, depth: int) -> tuple[int, Any]:
        """The elements (members) from ``p`` that fit in a piece: (where the last ends, their list or
        dict), or (``p``, None) when not even the first does."""
        closer = "}" if is_dict else "]"
        limit = min(p + self._piece, len(s))
        # All the piece's elements at once, up to its last comma or closing mark: that parses only
        # if it is a sequence of whole elements (a mark inside a string or a nested container leaves
        # something open). Wrapped in the containers open around it, so that the scanner meets the
        # nesting json.loads would.
        first = s[p : p + 1]
        if not is_dict and first in ("{", "["):
            # Elements that are containers end with their own closing mark: cut right after one.
            mark = "}" if first == "{" else "]"
            end = _last(s, mark + ",", mark + closer, p, limit) + 1
        else:
            end = _last(s, ",", closer, p, limit)
        if end > p:
            text = s[p:end]
            opening = "[" * depth + ("{" if is_dict else "[")
            candidate = opening + text + closer + "]" * depth
            self.scanned += len(candidate)
            try:
                run, stop = _SCAN(candidate, 0)
            except (json.JSONDecodeError, StopIteration):
                stop = -1
            if stop == len(candidate):
                for _ in range(depth):
                    if len(run) != 1:
                        break
                    run = run[0]
                else:
                    self._counted(p, end)
                    return end, run
        # Else one element at a time, each whole from the scanner, within the same piece.
        return self._one_by_one(s[p:limit], p, is_dict)

    def _one_by_one(self, piece: str, p: int, is_dict: bool) -> tuple[int, Any]:
        """The elements (members) at the start of ``piece`` (the text from ``p``), each whole from the
        scanner and kept only once a comma or the container's closing mark follows it in the piece
        (a number the piece cuts short reads as a shorter one): (where the last ends, their list or
        dict), or (``p``, None)."""
        found: Any = {} if is_dict else []
        closer = "}" if is_dict else "]"
        size = len(piece)
        i = done = 0
        try:
            while True:
                if is_dict:
                    if piece[i : i + 1] != '"':
                        break
                    key, i = _SCANSTRING(piece, i + 1)
                    i = _skip(piece, i)
                    if piece[i : i + 1] != ":":
                        break
                    value, i = _SCAN(piece, _skip(piece, i + 1))
                else:
                    value, i = _SCAN(piece, i)
                comma = _COMMA(piece, i)
                if comma is None:
                    after = _skip(piece, i)
                    if piece[after : after + 1] != closer:
                        break
                if is_dict:
                    found[key] = value
                else:
                    found.append(value)
                done = i
                if comma is None:
                    break
                i = comma.end()
        except (json.JSONDecodeError, StopIteration):
            pass
        self.scanned += size
        if not done:
            return p, None
        self._counted(p, p + done)
        return p + done, found

    def _string(self, s: str, begin: int) -> Generator[None, None, tuple[str, int]]:
        """The string whose text starts at ``begin`` (after its quote), decoded a piece at a time:
        (its value, the index after its closing quote)."""
        piece = self._piece
        run = _STRING_RUN.match
        parts: list[str] = []
        plain_from = begin
        a = last = begin
        n = len(s)
        while True:
            found = run(s, a, min(a + piece, n))
            m = a if found is None else found.end()
            closed = m < n and s[m] == '"'
            if m == a and not closed:
                # An escape no JSON reader takes, or the text's end: the scanner says which, where.
                # Every escape a reader takes is at most 12 characters, all matched by the run, and a
                # piece is at least 16: a run stops where it starts only at a fault, and the scanner
                # raises. Should a scanner ever take more, the rest of the string is its to decode.
                try:
                    rest, end = _SCANSTRING(s, a)
                except json.JSONDecodeError:
                    pass
                else:
                    return "".join(parts) + s[plain_from:a] + rest, end  # pragma: no cover
                # The fault as json.loads finds it: from where the last run began (a boundary between
                # two escapes, at most a piece back), since what the scanner makes of the text's end
                # depends on what came just before (a surrogate pair's two escapes ending the text
                # are an "Invalid \\uXXXX escape" at the second, not an open string).
                try:
                    _SCANSTRING(s, last)
                except json.JSONDecodeError as exc:
                    # json.loads places an open string's error at its opening quote.
                    at = begin - 1 if exc.msg == _UNTERMINATED else exc.pos
                    raise json.JSONDecodeError(exc.msg, s, at) from None
                raise json.JSONDecodeError(_UNTERMINATED, s, begin - 1)  # pragma: no cover
            last = a
            self.scanned += m - a
            if s.find("\\", a, m) < 0:
                control = _CONTROL.search(s, a, m)
                if control is not None:
                    raise json.JSONDecodeError("Invalid control character at", s, control.start())
            else:
                try:
                    decoded, _ = _SCANSTRING(s[a:m] + '"', 0)
                except json.JSONDecodeError as exc:
                    raise json.JSONDecodeError(exc.msg, s, a + exc.pos) from None
                if plain_from < a:
                    parts.append(s[plain_from:a])
                parts.append(decoded)
                plain_from = m
            a = m
            if closed:
                if not parts:
                    return s[begin:m], m + 1
                if plain_from < m:
                    parts.append(s[plain_from:m])
                return "".join(parts), m + 1
            yield


async def parsed(text: str, *, max_size: int | None = None) -> Any:
    """``json.loads(text)``, parsed in steps with the event loop given control between two of them."""
    parser = JsonInSteps(text, max_size=max_size)
    for _ in parser.steps():
        await asyncio.sleep(0)
    return parser.value
