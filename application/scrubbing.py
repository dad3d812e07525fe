"""Every string inside a value the package produces, passed through a function (to cut secrets out).

The one walk over values a model or a tool made (a call's arguments, a tool's result, a run, an error's
partial answer): the loop's failed runs, the CLI's output, the adapters' errors, the durable steps and
telemetry content all scrub through :func:`scrubbed` and find strings through :func:`strings`. Both
keep their own stack instead of recursing, so a value nested as deep as memory allows (valid JSON a
model wrote 100,000 levels deep) is walked like a flat one, never a ``RecursionError``.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar

import attrs

__all__ = ["SHOWN_DEPTH", "TOO_DEEP", "scrubbed", "shown_json", "strings", "within_depth"]

T = TypeVar("T")

# Per type: its attrs fields a walk reads, each as (attribute name, the name ``evolve`` takes), or None
# for a type that is not an attrs class. The classes are the program's own, so the cache stays small;
# it stops growing at a few hundred in case classes are made at run time.
_FIELDS: dict[type, tuple[tuple[str, str], ...] | None] = {}
_TYPES_KEPT: Final = 512
_LEAVES: Final = frozenset({int, float, bool, type(None)})

SHOWN_DEPTH: Final = 64
"""How many levels of a value :func:`shown_json` writes when the whole is nested deeper than
``json.dumps`` follows (the interpreter's recursion limit): far more than any value is read for."""
TOO_DEEP: Final = "[nested too deep to show]"
"""What :func:`shown_json` writes in place of the levels below :data:`SHOWN_DEPTH`."""


def _fields(kind: type) -> tuple[tuple[str, str], ...] | None:
    try:
        return _FIELDS[kind]
    except KeyError:
        pass
    names = (
        tuple((field.name, field.alias or field.name) for field in attrs.fields(kind) if field.init)
        if attrs.has(kind)
        else None
    )
    if len(_FIELDS) < _TYPES_KEPT:
        _FIELDS[kind] = names
    return names


def _children(value: Any) -> list[Any] | None:
    """What a walk goes into inside ``value``, in order (a mapping's keys and values, pairwise), or
    None for a value that holds nothing to walk (a string, a number, any other object)."""
    kind = type(value)
    if kind is str or kind in _LEAVES:
        return None
    names = _fields(kind)
    if names is not None:
        return [getattr(value, name) for name, _ in names]
    if isinstance(value, tuple | list):
        return list(value)
    if isinstance(value, Mapping):
        children: list[Any] = []
        for key, item in value.items():
            children.append(key)
            children.append(item)
        return children
    return None


def strings(value: object) -> Iterator[str]:
    """Every string in ``value`` that :func:`scrubbed` would pass to its function, in order; a value
    held in several places (or inside itself) is walked once."""
    if isinstance(value, str):
        yield value
        return
    pending = [value]
    walked: set[int] = set()
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            yield current
            continue
        if id(current) in walked:
            continue
        children = _children(current)
        if children:
            walked.add(id(current))
            pending.extend(reversed(children))


class _Frame:
    """A value being rebuilt: its children, and what each became so far."""

    __slots__ = ("children", "done", "value")

    def __init__(self, value: Any, children: list[Any]) -> None:
        self.value = value
        self.children = children
        self.done: list[Any] = []


def scrubbed(value: T, redact: Callable[[str], str]) -> T:
    """``value`` with ``redact`` applied to every string in it, at any depth: the fields of attrs
    values (messages, responses, tool calls, runs, summaries), tuples, lists and mappings (keys
    too). What holds no string that ``redact`` changes comes back as the very same object, so a
    clean run costs a walk and no copy; anything else (numbers, datetimes, None) is kept as it is.

    A value that contains itself is kept as it is where it comes round again (JSON cannot make one).
    """
    if isinstance(value, str):
        return _string(value, redact)  # type: ignore[return-value]  # a str comes back a str
    children = _children(value)
    if not children:
        return value
    stack = [_Frame(value, children)]
    on_path = {id(value)}
    while True:
        frame = stack[-1]
        position = len(frame.done)
        if position < len(frame.children):
            child = frame.children[position]
            if isinstance(child, str):
                frame.done.append(_string(child, redact))
                continue
            grandchildren = _children(child)
            if not grandchildren or id(child) in on_path:
                frame.done.append(child)
                continue
            stack.append(_Frame(child, grandchildren))
            on_path.add(id(child))
            continue
        stack.pop()
        on_path.discard(id(frame.value))
        rebuilt = _rebuilt(frame)
        if not stack:
            return rebuilt  # type: ignore[no-any-return]  # the walk keeps each value's type
        stack[-1].done.append(rebuilt)


def _string(value: str, redact: Callable[[str], str]) -> str:
    redacted = redact(value)
    return value if redacted == value else redacted


def _rebuilt(frame: _Frame) -> Any:
    """The frame's value with its children as they became: the very same object when none changed."""
    value, done = frame.value, frame.done
    if all(new is old for new, old in zip(done, frame.children, strict=True)):
        return value
    names = _fields(type(value))
    if names is not None:
        changes = {
            alias: new
            for (_, alias), new, old in zip(names, done, frame.children, strict=True)
            if new is not old
        }
        return attrs.evolve(value, **changes)
    if isinstance(value, list):
        return type(value)(done) if type(value) is not list else done
    if isinstance(value, tuple):
        # A named tuple takes its fields one by one.
        return type(value)(*done) if hasattr(value, "_fields") else tuple(done)
    rebuilt = dict(zip(done[::2], done[1::2], strict=True))
    return types.MappingProxyType(rebuilt) if isinstance(value, types.MappingProxyType) else rebuilt


def within_depth(value: object, limit: int, marker: object = TOO_DEEP) -> object:
    """A JSON value (mappings, lists, tuples, scalars) with every container more than ``limit`` levels
    down replaced by ``marker``: what a recursive writer (``json.dumps``, ``repr``) can take.
    Mappings come back as dicts, tuples as lists."""
    root: dict[None, Any] = {}
    # Each entry: a value still to copy, how deep it sits, the dict or list it goes into, and where.
    pending: list[tuple[object, int, Any, object]] = [(value, 0, root, None)]
    while pending:
        current, depth, into, key = pending.pop()
        copied: Any = current
        if isinstance(current, Mapping | list | tuple):
            if depth >= limit:
                copied = marker
            elif isinstance(current, Mapping):
                copied = {}
                pending.extend(
                    (item, depth + 1, copied, name) for name, item in reversed(list(current.items()))
                )
            else:
                copied = [None] * len(current)
                pending.extend((item, depth + 1, copied, index) for index, item in enumerate(current))
        into[key] = copied
    return root[None]


def shown_json(value: object, **options: Any) -> str:
    """``json.dumps(value, **options)``; a value nested deeper than ``json.dumps`` follows is written with
    what lies below :data:`SHOWN_DEPTH` levels as :data:`TOO_DEEP`, instead of raising ``RecursionError``.

    For what is shown (the CLI's output, telemetry content): a value a model or a tool made can be
    nested as deep as memory allows, and showing it must not end the run that made it.
    """
    try:
        return json.dumps(value, **options)
    except RecursionError:
        return json.dumps(within_depth(value, SHOWN_DEPTH), **options)
