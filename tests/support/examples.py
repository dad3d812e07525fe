"""How many examples a property that sets its own count tries, by the Hypothesis profile in force.

A count written in a test (``@settings(max_examples=examples(60))``) is the one ``make test`` (the
``fixed`` profile, 100 by default) and CI (``ci``) try. A profile with fewer examples than ``fixed``,
``make check``'s ``quick``, scales it down in the same proportion (a quarter), so the inner loop's
share of a property is the same whichever way its count is set.
"""

from __future__ import annotations

from typing import Final

from hypothesis import settings

__all__ = ["FIXED_EXAMPLES", "examples"]

FIXED_EXAMPLES: Final = 100
"""The ``fixed`` profile's count (``tests/conftest.py``), the one a test's own count is written against."""


def examples(count: int) -> int:
    """``count``, or under a profile with fewer than ``FIXED_EXAMPLES`` its share of it (at least one)."""
    current = settings().max_examples
    if current >= FIXED_EXAMPLES:
        return count
    return max(1, count * current // FIXED_EXAMPLES)
