"""Strategies for the conformance tests: JSON values nested as deep as a hostile model or tool makes them."""

from __future__ import annotations

import json
from typing import ClassVar, Literal

import attrs
from hypothesis import strategies as st

__all__ = ["Deep", "deep_values"]

Level = Literal["list", "object", "tuple"]


@attrs.frozen
class Deep:
    """A value ``depth`` levels deep, each level the next of ``pattern`` (a list, an object, or a tuple,
    which JSON text writes as a list), around ``leaf``. Kept as its recipe, so Hypothesis can show it
    (a repr of the value itself would recurse)."""

    KEY: ClassVar[str] = "k"

    depth: int
    pattern: tuple[Level, ...]
    leaf: str

    def value(self) -> object:
        """The value, built from the leaf out (no recursion)."""
        value: object = self.leaf
        for level in range(self.depth):
            kind = self.pattern[level % len(self.pattern)]
            value = [value] if kind == "list" else (value,) if kind == "tuple" else {self.KEY: value}
        return value

    def text(self) -> str:
        """The value as JSON text, written without recursion."""
        opening: list[str] = []
        closing: list[str] = []
        for level in reversed(range(self.depth)):
            kind = self.pattern[level % len(self.pattern)]
            opening.append(f'{{"{self.KEY}":' if kind == "object" else "[")
            closing.append("}" if kind == "object" else "]")
        return "".join(opening) + json.dumps(self.leaf) + "".join(reversed(closing))


def deep_values(leaf: str, min_depth: int = 1_000, max_depth: int = 100_000) -> st.SearchStrategy[Deep]:
    """Values from ``min_depth`` to ``max_depth`` levels deep around ``leaf``, in any pattern of levels."""
    return st.builds(
        Deep,
        # A few depths, not a range: shrinking a value a hundred thousand levels deep is slow, and
        # what matters is each side of the interpreter's recursion limit and far past it.
        depth=st.sampled_from(sorted({min_depth, 3 * min_depth, 10_000, max_depth})),
        pattern=st.lists(st.sampled_from(("list", "object", "tuple")), min_size=1, max_size=4).map(tuple),
        leaf=st.just(leaf),
    )
