"""Hypothesis strategies for the adapters' own rules: requests arriving at a rate limiter."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

__all__ = ["Arrival", "arrivals"]


@attrs.frozen
class Arrival:
    """A request reaching the limiter ``gap`` seconds after the one before, estimated at ``tokens`` and
    reporting ``used`` (None: no usage) once answered, with ``seconds_left`` of its deadline."""

    gap: float
    tokens: int
    used: int | None
    seconds_left: float


def arrivals(max_tokens: int) -> st.SearchStrategy[list[Arrival]]:
    """Up to 60 requests, in bursts (gaps of 0) and spread out, of up to ``max_tokens`` tokens; their
    usage at most their estimate, or missing; deadlines from already past to far off."""
    gap = st.sampled_from([0.0, 0.0, 0.5]) | st.floats(0, 90, allow_nan=False)
    return st.lists(
        st.integers(1, max_tokens).flatmap(
            lambda tokens: st.builds(
                Arrival,
                gap=gap,
                tokens=st.just(tokens),
                used=st.none() | st.integers(0, tokens),
                seconds_left=st.sampled_from([0.0, 30.0, 600.0, 10_000.0]),
            )
        ),
        max_size=60,
    )
