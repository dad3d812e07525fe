"""Places inside a JSON value, named by the keys and indexes leading to them, and the value at a place."""

from __future__ import annotations

from typing import Any

JsonPath = tuple[str | int, ...]


def places(value: Any, path: JsonPath = ()) -> list[JsonPath]:
    """Every place inside ``value`` (``value`` itself first, at ``path``), depth first."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(places(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(places(item, (*path, index)))
    return found


def value_at(value: Any, path: JsonPath) -> Any:
    """What ``value`` holds at ``path``."""
    for step in path:
        value = value[step]
    return value
