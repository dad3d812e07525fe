"""Caller-facing streaming: time to the first update, and streaming's cost against raw SDK iteration."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from benchmarks.bodies import Body, make_body
from benchmarks.harness import Check, Sizes, WrongOutputError, interleaved, sdk_iterate, serve
from domain import ChatMessage

__all__ = ["streaming"]

_MODEL = "gpt-5.5"
_MESSAGES = (ChatMessage.user("Summarize the meeting."),)
_SSE = "text/event-stream"
_TARGET = 1.10


def _adapter(body: Body) -> ResponsesSseAdapter:
    client, _ = serve(body.sse, _SSE)
    return ResponsesSseAdapter(client, ResponsesSettings(model=_MODEL))


async def _streamed(body: Body) -> Callable[[], Awaitable[object]]:
    adapter = _adapter(body)

    async def run() -> int:
        pieces = 0
        async for update in adapter.get_streaming_response(_MESSAGES):
            pieces += len(update.contents)
        return pieces

    if await run() != body.deltas:
        raise WrongOutputError("get_streaming_response did not hand over one piece per delta")
    return run


async def _whole(body: Body) -> Callable[[], Awaitable[object]]:
    adapter = _adapter(body)

    async def run() -> str:
        return (await adapter.get_response(_MESSAGES)).text

    if await run() != body.text:
        raise WrongOutputError("get_response folded the wrong text")
    return run


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


async def streaming(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Streaming a ``sizes.fold``-delta answer through get_streaming_response, side by side with
    raw SDK iteration and get_response on the same body; and how soon the first piece arrives."""
    body = make_body(sizes.fold)
    samples = await interleaved(
        {
            "sse_streaming": await _streamed(body),
            "sdk_iterate": await sdk_iterate(body.sse, body.events),
            "sse_get_response": await _whole(body),
        },
        runs=sizes.runs,
    )
    first, sdk_first = await _first_update_seconds(body, sizes.runs)
    timings[f"streaming_{body.deltas}_deltas"] = {
        **{name: s.as_json() for name, s in samples.items()},
        "first_update_wall_s": first,
        "sdk_first_delta_wall_s": sdk_first,
    }
    streamed, raw, whole = (
        samples[name].median for name in ("sse_streaming", "sdk_iterate", "sse_get_response")
    )
    ratio = streamed / raw
    return [
        Check(
            f"streaming overhead: get_streaming_response / raw SDK iteration ({body.deltas} deltas)",
            ratio,
            "ratio",
            f"<= {_TARGET:g}",
            ratio <= _TARGET,
            f"{streamed * 1e3:.1f} ms vs {raw * 1e3:.1f} ms CPU; get_response {whole * 1e3:.1f} ms",
        ),
        Check(
            f"time to first update, SSE adapter ({body.deltas}-delta answer)",
            first * 1e3,
            "ms",
            "report",
            None,
            f"raw SDK's first text delta {sdk_first * 1e3:.2f} ms; the whole answer {whole * 1e3:.1f} ms CPU",
        ),
    ]
