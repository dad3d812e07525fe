"""Caller-facing streaming: how soon the first update reaches the caller (its cost is a workload)."""

from __future__ import annotations

import statistics
import time
from typing import Any

from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from benchmarks.bodies import Body, make_body
from benchmarks.harness import Check, Sizes, serve
from domain import ChatMessage

__all__ = ["first_update"]

_MODEL = "gpt-5.5"
_MESSAGES = (ChatMessage.user("Summarize the meeting."),)
_SSE = "text/event-stream"


def _adapter(body: Body) -> ResponsesSseAdapter:
    client, _ = serve(body.sse, _SSE)
    return ResponsesSseAdapter(client, ResponsesSettings(model=_MODEL))


async def _first_update_seconds(body: Body, runs: int) -> tuple[float, float]:
    """Median wall seconds from the call to the first text piece: the adapter's, and the SDK's first
    text delta event for reference."""
    adapter = _adapter(body)
    client, _ = serve(body.sse, _SSE)
    ours: list[float] = []
    sdk: list[float] = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        updates = adapter.get_streaming_response(_MESSAGES)
        async for update in updates:
            if update.text:
                ours.append(time.perf_counter() - started)
                break
        await updates.aclose()  # type: ignore[attr-defined]  # the adapter's is an async generator
        started = time.perf_counter()
        stream = await client.responses.create(model=_MODEL, input="Summarize the meeting.", stream=True)
        async for event in stream:
            if event.type == "response.output_text.delta":
                sdk.append(time.perf_counter() - started)
                break
        await stream.close()
    # The first run of each warms up imports and caches.
    return statistics.median(ours[1:]), statistics.median(sdk[1:])


async def first_update(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """How soon a ``sizes.fold``-delta answer's first text piece reaches a streaming caller (wall time)."""
    body = make_body(sizes.fold)
    first, sdk_first = await _first_update_seconds(body, sizes.runs)
    timings[f"first_update_{body.deltas}_deltas"] = {
        "first_update_wall_s": first,
        "sdk_first_delta_wall_s": sdk_first,
    }
    return [
        Check(
            f"time to first update, SSE adapter ({body.deltas}-delta answer)",
            first * 1e3,
            "ms",
            "report",
            None,
            f"raw SDK's first text delta {sdk_first * 1e3:.2f} ms (wall, median of {sizes.runs})",
        )
    ]
