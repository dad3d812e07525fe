"""Hypothesis strategies for Responses bodies as a hostile gateway sends them: valid ones, then spoiled."""

from __future__ import annotations

import functools
import gzip
import json
import math
import zlib
from collections.abc import Callable
from typing import Any, Final

import attrs
import httpx
from hypothesis import strategies as st

from adapters.offline.render import stream_events
from tests.strategies import model_outputs
from tests.support.gateway import JSON, REQUEST_ID, SSE, response_document
from tests.support.json_places import JsonPath, places, value_at

__all__ = [
    "TRAILING",
    "Fragments",
    "HostileBody",
    "compressed",
    "hostile_bodies",
    "hostile_json_bodies",
    "hostile_streams",
    "raw_fragments",
    "render_json",
    "render_stream",
    "wrong_values",
]


# Spliced into a rendered body in place of a JSON value: what json.dumps cannot write.
DEEP_OPEN: Final = b"[" * 100_000
raw_fragments: st.SearchStrategy[bytes] = st.sampled_from(
    [
        DEEP_OPEN,  # nesting the parser gives up on, never closed
        b"[" * 50_000 + b"]" * 50_000,  # the same, balanced
        b'{"a":' * 30_000 + b"1" + b"}" * 30_000,
        b'"\xff\xfe text"',  # not UTF-8 at all
        b'"caf\xc3"',  # a UTF-8 sequence cut short
        b'"\xed\xa0\x80"',  # a surrogate encoded raw (CESU), invalid in UTF-8
        b"9" * 5_000,  # past CPython's int digit limit: json.loads raises ValueError
        b"1e999",  # parses to inf
        b"-1e999",
        b"NaN",
        b"-Infinity",
        b'{"a":1,"a":[2]}',  # a key repeated
        b"tru",
        b"",
        b"\x00",
        b"[DONE]",
    ]
)

# Values of the wrong type for any field: every JSON type, numbers json cannot round-trip, lone surrogates.
wrong_values: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([10**400, -(10**400), 2**63, -1, 0]),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 0.5, -0.0]),
    st.text(max_size=12),
    st.sampled_from(["\ud800", "\udfff", "a\ud83d", "\ud83d\ude00", "\x00", ""]),
    st.lists(st.none() | st.integers() | st.text(max_size=4), max_size=3),
    st.dictionaries(st.text(max_size=6), st.none() | st.integers() | st.text(max_size=4), max_size=3),
)

CONTENT_TYPES: Final = (
    SSE,
    JSON,
    "text/event-stream",
    "TEXT/EVENT-STREAM; charset=UTF-8",
    "application/json; charset=utf-16",
    "text/plain",
    "text/html; charset=iso-8859-1",
    "application/octet-stream",
    "application/x-ndjson",
    "",
)
content_types: st.SearchStrategy[str] = st.sampled_from(CONTENT_TYPES) | st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=24
)

# The request id header: as usual, missing, empty, huge, or any Latin-1 text (what a header can carry).
request_ids: st.SearchStrategy[str | None] = st.sampled_from([REQUEST_ID, None, "", "r" * 10_000]) | st.text(
    alphabet=st.characters(min_codepoint=32, max_codepoint=255, exclude_characters="\x7f"), max_size=40
)

# Real compression, a label on a plain body, and labels httpx does not know.
ENCODINGS: Final = (
    "gzip",
    "deflate",
    "gzip-label-only",
    "br-label-only",
    "identity",
    "x-unknown",
    # Stacked codings, as Content-Encoding lists them (applied left to right), real and not.
    "gzip, gzip",
    "deflate, gzip",
    "gzip, deflate, gzip",
    "gzip, x-unknown",
    "gzip, br-label-only",
    "gzip, gzip, gzip, gzip, gzip",
)
# What may follow a terminal event: more events, a failure, a repeat, lines that are not JSON.
TRAILING: Final = (
    {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": " LATE"},
    {"type": "error", "code": "late", "message": "after the end"},
    {"type": "response.failed", "response": {"status": "failed", "error": {"code": "late"}}},
    {"type": "response.completed", "response": {"status": "completed", "output": []}},
    "@@not-json@@",
)
STATUSES: Final = (200, 201, 204, 206, 299, 301, 304, 307, 400, 401, 404, 409, 422, 429, 500, 502, 503)


def _preview(content: bytes) -> str:
    head = content[:400]
    return f"<{len(content)} bytes> {head!r}{'...' if len(content) > len(head) else ''}"


@attrs.frozen
class HostileBody:
    """One answer from a hostile gateway: the bytes on the wire, their labels, and how they were spoiled."""

    content: bytes = attrs.field(repr=_preview)
    content_type: str
    status: int = 200
    content_encoding: str | None = None
    spoiled: tuple[str, ...] = ()
    request_id: str | None = REQUEST_ID
    # The label the body's shape calls for: what an honest gateway would have sent.
    natural_type: str = JSON

    def honestly_labelled(self) -> HostileBody:
        """The same bytes and status under the label their shape calls for, with a plain request id."""
        return attrs.evolve(self, content_type=self.natural_type, request_id=REQUEST_ID)

    def response(self) -> httpx.Response:
        labels = {"content-type": self.content_type, "retry-after-ms": "1"}
        if self.request_id is not None:
            labels["x-request-id"] = self.request_id
        if self.content_encoding is not None:
            labels["content-encoding"] = self.content_encoding
        # As bytes, since a header value may be any Latin-1 text, which httpx refuses as a str.
        headers = [(name.encode(), value.encode("latin-1")) for name, value in labels.items()]
        # A stream, not content: httpx would otherwise decode the body here, before the client reads it.
        return httpx.Response(self.status, headers=headers, stream=httpx.ByteStream(self.content))


# ---------------------------------------------------------------- spoiling a JSON value at any depth


class Fragments:
    """Raw byte fragments standing in for values; each is a unique string token until rendering."""

    def __init__(self) -> None:
        self.by_token: dict[str, bytes] = {}

    def token(self, fragment: bytes) -> str:
        token = f"@@hostile-raw-{len(self.by_token)}@@"
        self.by_token[token] = fragment
        return token

    def splice(self, rendered: bytes) -> bytes:
        for token, fragment in self.by_token.items():
            rendered = rendered.replace(b'"' + token.encode() + b'"', fragment)
        return rendered


def _spliced(items: list[Any], key: str | int, middle: list[Any]) -> list[Any]:
    """``items`` with the element at ``key`` (a list index) replaced by the elements of ``middle``."""
    assert isinstance(key, int)
    return [*items[:key], *middle, *items[key + 1 :]]


def _rebuilt(value: Any, path: JsonPath, change: Callable[[Any, str | int], Any]) -> Any:
    """A copy of ``value`` whose container holding ``path`` is replaced by ``change(container, key)``."""
    if len(path) == 1:
        return change(value, path[0])
    head = path[0]
    child = _rebuilt(value[head], path[1:], change)
    if isinstance(value, dict):
        return {**value, head: child}
    return _spliced(value, head, [child])


def _replaced(container: Any, key: str | int, new: Any) -> Any:
    if isinstance(container, dict):
        return {**container, key: new}
    return _spliced(container, key, [new])


def _with_unknown_key(container: Any, key: str | int, extra: Any) -> Any:
    return {**container, "x_unknown": extra}


def _removed(container: Any, key: str | int) -> Any:
    if isinstance(container, dict):
        return {k: v for k, v in container.items() if k != key}
    return _spliced(container, key, [])


def _duplicated(container: Any, key: str | int) -> Any:
    if isinstance(container, dict):
        return {**container, f"{key}_again": container[key]}
    return _spliced(container, key, [container[key], container[key]])


@st.composite
def _path_in(draw: st.DrawFn, value: Any, *, root: bool) -> JsonPath:
    """A path into ``value``, every depth equally likely, so top-level fields are picked often."""
    by_depth: dict[int, list[JsonPath]] = {}
    for path in places(value):
        if path or root:
            by_depth.setdefault(len(path), []).append(path)
    depth = draw(st.sampled_from(sorted(by_depth)))
    return draw(st.sampled_from(by_depth[depth]))


def spoil(
    draw: st.DrawFn, value: Any, fragments: Fragments, notes: list[str], *, max_changes: int = 3
) -> Any:
    """``value`` with up to ``max_changes`` changes at any depth, drawn with ``draw``.

    A function of a composite's ``draw`` rather than a strategy of its own: a strategy built with the value
    as its argument would carry the whole value in its repr, which Hypothesis refuses to build when large.

    A change replaces a value by one of the wrong type (or by raw bytes json cannot write), removes
    it, duplicates it, adds an unknown key beside it, or moves a list element elsewhere.
    """
    for _ in range(draw(st.integers(min_value=0, max_value=max_changes))):
        path = draw(_path_in(value, root=False)) if isinstance(value, dict | list) and value else ()
        kind = draw(st.sampled_from(["wrong", "raw", "remove", "duplicate", "unknown_key", "move"]))
        if not path:
            kind = draw(st.sampled_from(["wrong", "raw"]))
        if kind == "wrong":
            new = draw(wrong_values)
            notes.append(f"{list(path)} = {new!r}"[:200])
            value = new if not path else _rebuilt(value, path, functools.partial(_replaced, new=new))
        elif kind == "raw":
            fragment = draw(raw_fragments)
            notes.append(f"{list(path)} = raw {fragment[:40]!r}{'...' if len(fragment) > 40 else ''}")
            token = fragments.token(fragment)
            value = token if not path else _rebuilt(value, path, functools.partial(_replaced, new=token))
        elif kind == "remove":
            notes.append(f"{list(path)} removed")
            value = _rebuilt(value, path, _removed)
        elif kind == "duplicate":
            notes.append(f"{list(path)} duplicated")
            value = _rebuilt(value, path, _duplicated)
        elif kind == "unknown_key":
            parent = value_at(value, path[:-1])
            if isinstance(parent, dict):
                extra = draw(wrong_values)
                notes.append(f"{list(path[:-1])} gains an unknown key")
                value = _rebuilt(value, path, functools.partial(_with_unknown_key, extra=extra))
        else:
            parent = value_at(value, path[:-1])
            if isinstance(parent, list) and len(parent) > 1:
                target = draw(st.integers(min_value=0, max_value=len(parent) - 1))
                notes.append(f"{list(path)} moved to {target}")

                def moved(container: Any, key: str | int, target: int = target) -> Any:
                    rest = _removed(container, key)
                    return [*rest[:target], container[key], *rest[target:]]

                value = _rebuilt(value, path, moved)
    return value


# ---------------------------------------------------------------- rendering


def _dumps(value: Any, *, ascii_only: bool) -> bytes:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only, allow_nan=True)
    # A lone surrogate written raw comes out as CESU bytes: invalid UTF-8, as a careless proxy sends it.
    return text.encode("utf-8", "surrogatepass")


def render_json(document: Any, fragments: Fragments, *, ascii_only: bool = True) -> bytes:
    return fragments.splice(_dumps(document, ascii_only=ascii_only))


# Lines an event stream may carry besides events: comments, ids, retry hints, an early [DONE], garbage.
STRAY_LINES: Final = (
    b": keep-alive",
    b"id: 7",
    b"retry: 1000",
    b"retry: soon",
    b"event: ping",
    b"data:",
    b"data: [DONE]",
    b"data: 5",
    b"data: null",
    b'data: "text"',
    b"data: [1, 2]",
    b"no colon at all",
    b"\xef\xbb\xbfdata: {}",
)
EVENT_NAMES: Final = ("thread.run.created", "error", "message", "ping", "response.completed")


def render_stream(
    events: list[Any],
    fragments: Fragments,
    *,
    litellm: bool,
    ascii_only: bool = True,
    names: dict[int, str] | None = None,
    strays: dict[int, bytes] | None = None,
    split_at: dict[int, int] | None = None,
    newline: bytes = b"\n",
) -> bytes:
    """The events as an event stream, in OpenAI's dialect (``event:`` lines) or LiteLLM's ([DONE] last).

    ``names`` overrides an event's ``event:`` line, ``strays`` puts a stray line before an event, and
    ``split_at`` cuts an event's data into two ``data:`` lines at that offset.
    """
    names, strays, split_at = names or {}, strays or {}, split_at or {}
    lines: list[bytes] = []
    for index, event in enumerate(events):
        if index in strays:
            lines.extend([strays[index], b""])
        kind = event.get("type") if isinstance(event, dict) else None
        name = names.get(index, kind if isinstance(kind, str) and not litellm else None)
        if name is not None:
            lines.append(b"event: " + name.encode("utf-8", "surrogatepass"))
        data = render_json(event, fragments, ascii_only=ascii_only)
        cut = split_at.get(index)
        if cut is not None and 0 < cut < len(data):
            lines.extend([b"data: " + data[:cut], b"data: " + data[cut:]])
        else:
            lines.append(b"data: " + data)
        lines.append(b"")
    if litellm:
        lines.extend([b"data: [DONE]", b""])
    return newline.join(lines) + newline


# ---------------------------------------------------------------- whole bodies


@st.composite
def base_documents(draw: st.DrawFn, *, litellm: bool) -> dict[str, Any]:
    """A valid Response document: completed, incomplete or failed, with up to five output items."""
    output = draw(model_outputs())
    # queued and in_progress: statuses of a response that has not finished, sent as if it had.
    status = draw(
        st.sampled_from(["completed", "completed", "incomplete", "failed", "queued", "in_progress"])
    )
    return response_document(
        output,
        status=status,
        incomplete_reason=(
            draw(st.sampled_from(["max_output_tokens", "content_filter"])) if status == "incomplete" else None
        ),
        error={"code": "server_error", "message": "The model crashed"} if status == "failed" else None,
        usage=draw(st.just((11, 7)) | st.none()),
        litellm=litellm,
    )


def compressed(content: bytes, encoding: str | None) -> bytes:
    """``content`` with each coding of the chain applied in turn (a label-only or unknown one: none)."""
    for coding in (encoding or "").split(", "):
        if coding == "gzip":
            content = gzip.compress(content, mtime=0)
        elif coding == "deflate":
            content = zlib.compress(content)
    return content


@st.composite
def _on_the_wire(draw: st.DrawFn, content: bytes, default_type: str, notes: list[str]) -> HostileBody:
    """``content`` maybe truncated, maybe compressed (or only labelled so), under some status and label."""
    # Hypothesis draws the simplest value (0, False, the first choice) most often: that one leaves
    # the body as it is, so that most bodies keep their shape and the spoilt ones stay readable.
    if len(content) > 1 and draw(st.integers(min_value=0, max_value=7)) == 7:
        cut = draw(st.integers(min_value=1, max_value=len(content) - 1))
        notes.append(f"truncated at byte {cut}")
        content = content[:cut]
    content_type = draw(content_types) if draw(st.booleans()) else default_type
    encoding = draw(st.none() | st.none() | st.sampled_from(ENCODINGS))
    label = None if encoding is None else encoding.replace("-label-only", "")
    wire = compressed(content, encoding)
    if wire != content and draw(st.integers(min_value=0, max_value=5)) == 5:
        cut = draw(st.integers(min_value=0, max_value=max(len(wire) - 1, 0)))
        notes.append(f"compressed body truncated at byte {cut}")
        wire = wire[:cut]
    status = draw(st.sampled_from(STATUSES)) if draw(st.integers(min_value=0, max_value=7)) == 7 else 200
    request_id = draw(request_ids)
    return HostileBody(wire, content_type, status, label, tuple(notes), request_id, default_type)


@st.composite
def hostile_streams(draw: st.DrawFn) -> HostileBody:
    """An event stream in either dialect, its events spoiled, reordered, duplicated or dropped."""
    litellm = draw(st.booleans())
    document = draw(base_documents(litellm=litellm))
    longest = max((len(json.dumps(item)) for item in document["output"]), default=0)
    # Long argument strings arrive in a bounded number of deltas, to keep each example fast.
    chunk = max(draw(st.integers(min_value=1, max_value=16)), longest // 50)
    terminal_output, terminal = not draw(st.booleans()), draw(st.integers(min_value=0, max_value=9)) < 9
    events: list[Any] = stream_events(
        document, chunk=chunk, litellm=litellm, terminal_output=terminal_output, terminal=terminal
    )
    notes = [
        f"{'litellm' if litellm else 'openai'} stream of {len(events)} events"
        f"{'' if terminal else ', no terminal event'}{'' if terminal_output else ', terminal output empty'}"
    ]
    fragments = Fragments()
    events = spoil(draw, events, fragments, notes, max_changes=4)
    if not isinstance(events, list):
        events = [events]
    if terminal and draw(st.integers(min_value=0, max_value=3)) == 3:
        trailing = draw(st.lists(st.sampled_from(TRAILING), min_size=1, max_size=3))
        notes.append(f"{len(trailing)} events after the terminal one")
        events = [*events, *(e if isinstance(e, dict) else fragments.token(b"{not json") for e in trailing)]
    # Stray lines, renamed events and split data lines only on some bodies, so that many still fold.
    count = len(events) if draw(st.booleans()) else 0
    slots = st.integers(min_value=0, max_value=max(count - 1, 0))
    names = draw(st.dictionaries(slots, st.sampled_from(EVENT_NAMES), max_size=min(count, 1)))
    strays = draw(st.dictionaries(slots, st.sampled_from(STRAY_LINES), max_size=min(count, 2)))
    split_at = draw(st.dictionaries(slots, st.integers(min_value=1, max_value=60), max_size=min(count, 1)))
    notes.extend(f"event {i} named {name!r}" for i, name in names.items())
    notes.extend(f"stray line {line!r} before event {i}" for i, line in strays.items())
    notes.extend(f"event {i} data split at {cut}" for i, cut in split_at.items())
    content = render_stream(
        events,
        fragments,
        litellm=litellm,
        ascii_only=draw(st.booleans()),
        names=names,
        strays=strays,
        split_at=split_at,
        newline=draw(st.sampled_from([b"\n", b"\r\n", b"\r"])),
    )
    return draw(_on_the_wire(content, SSE, notes))


@st.composite
def hostile_json_bodies(draw: st.DrawFn) -> HostileBody:
    """A JSON Response (or an error document) spoiled at any depth."""
    litellm = draw(st.booleans())
    document: Any = draw(base_documents(litellm=litellm))
    notes = [f"{'litellm' if litellm else 'openai'} JSON {document['status']} Response"]
    if draw(st.integers(min_value=0, max_value=5)) == 5:
        document = {"error": {"message": "Bad gateway", "type": "server_error", "param": None, "code": "502"}}
        notes[0] = "JSON error document"
    fragments = Fragments()
    document = spoil(draw, document, fragments, notes, max_changes=4)
    content = render_json(document, fragments, ascii_only=draw(st.booleans()))
    return draw(_on_the_wire(content, JSON, notes))


hostile_bodies: st.SearchStrategy[HostileBody] = st.one_of(hostile_streams(), hostile_json_bodies())
