"""Every string inside a value the package produces, passed through a function (to cut secrets out)."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

__all__ = ["scrubbed"]

T = TypeVar("T")


def scrubbed(value: T, redact: Callable[[str], str]) -> T:
    """``value`` with ``redact`` applied to every string in it, at any depth: the fields of attrs
    values (messages, responses, tool calls, runs, summaries), tuples, lists and mappings (keys
    too). What holds no string that ``redact`` changes comes back as the very same object, so a
    clean run costs a walk and no copy; anything else (numbers, datetimes, None) is kept as it is.
    """
    return _scrubbed(value, redact)  # type: ignore[no-any-return]  # the walk keeps each value's type


def _scrubbed(value: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        redacted = redact(value)
        return value if redacted == value else redacted
    if isinstance(value, tuple | list):
        items = [_scrubbed(item, redact) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, list) else tuple(items)
    if isinstance(value, Mapping):
        pairs = [(_scrubbed(key, redact), _scrubbed(item, redact)) for key, item in value.items()]
        if all(
            k is old_k and v is old_v for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)
        ):
            return value
        rebuilt = dict(pairs)
        return types.MappingProxyType(rebuilt) if isinstance(value, types.MappingProxyType) else rebuilt
    if attrs.has(type(value)):
        changes = {}
        for field in attrs.fields(type(value)):
            if not field.init:
                continue
            old = getattr(value, field.name)
            new = _scrubbed(old, redact)
            if new is not old:
                changes[field.alias or field.name] = new
        return attrs.evolve(value, **changes) if changes else value
    return value
