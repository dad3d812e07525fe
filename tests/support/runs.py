"""Leaving a run early, as a host that stops reading does: read its events up to one of a kind, then close."""

from __future__ import annotations

from collections.abc import AsyncGenerator

__all__ = ["leave_at"]


async def leave_at(events: AsyncGenerator[object, None], kind: type[object]) -> None:
    """Reads ``events`` up to and including the first ``kind`` event, then closes the generator."""
    async for event in events:
        if isinstance(event, kind):
            break
    await events.aclose()
