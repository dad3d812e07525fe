"""Peak memory while a body over ``max_response_bytes`` is refused: a huge plain line and a gzip bomb."""

from __future__ import annotations

import gzip
import logging
import statistics
import time
from typing import Any

import httpx
import openai

from adapters.offline import OfflineResponsesServer
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from benchmarks.harness import Check, Sizes, peak_bytes, serve
from domain import ChatMessage, ChatTransportError, MalformedResponseError

__all__ = ["QUIET", "body_cap", "deadline_overshoot"]

MESSAGES = (ChatMessage.user("Summarize the meeting."),)
# Each refusal is logged as a failed request; the report says what happened instead.
QUIET = logging.getLogger("benchmarks.boundary")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


def _mib(size: int) -> str:
    return f"{size / 2**20:.2f} MiB"


async def body_cap(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """tracemalloc peak per adapter while a body far over the cap is refused, as a ratio to the cap.

    The bodies themselves are built before measuring; the peak is what reading and refusing costs.
    """
    cap = sizes.body_cap
    line = b"data: " + b"x" * (6 * cap) + b"\n\n"
    bomb = gzip.compress(b"data: " + b"0" * (32 * cap), compresslevel=9)
    bodies = {
        f"one {_mib(len(line))} event line": (line, {}),
        f"a {len(bomb) / 2**10:.0f} KiB gzip bomb ({_mib(32 * cap)} inflated)": (
            bomb,
            {"content-encoding": "gzip"},
        ),
    }
    settings = ResponsesSettings(model="gpt-5.5", max_response_bytes=cap)
    checks = []
    for what, (body, headers) in bodies.items():
        for adapter_type in (ResponsesSseAdapter, ResponsesJsonAdapter):
            client, _ = serve(body, "text/event-stream", headers)
            adapter = adapter_type(client, settings, logger=QUIET)

            async def refuse(adapter: ResponsesSseAdapter | ResponsesJsonAdapter = adapter) -> None:
                try:
                    await adapter.get_response(MESSAGES)
                except MalformedResponseError:
                    return
                raise AssertionError("a body over the cap was accepted")

            peak = await peak_bytes(refuse)
            name = f"peak memory / max_response_bytes, {adapter_type.__name__}, {what}"
            timings[name] = {"peak_bytes": peak, "cap_bytes": cap, "body_bytes": len(body)}
            checks.append(
                Check(
                    name,
                    peak / cap,
                    "ratio",
                    "<= 3",
                    peak <= 3 * cap,
                    f"peak {_mib(peak)} with max_response_bytes {_mib(cap)}",
                )
            )
    return checks


async def deadline_overshoot(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """How far past ``deadline_seconds`` a request against a stalled peer ends, per adapter (wall time).

    The offline stand-in's ``stall`` scenario sends half a body and then nothing; the idle timeout is
    set far above the deadline, so only the deadline can end the request.
    """
    deadline = 0.5
    checks = []
    with OfflineResponsesServer() as server:
        async with httpx.AsyncClient() as http_client:
            client = openai.AsyncOpenAI(
                api_key="sk-benchmark",
                base_url=server.base_url,
                http_client=http_client,  # type: ignore[arg-type]  # the SDK accepts a legacy httpx client
                max_retries=0,
                timeout=60.0,
            )
            settings = ResponsesSettings(model="offline:stall", deadline_seconds=deadline)
            for adapter_type in (ResponsesSseAdapter, ResponsesJsonAdapter):
                adapter = adapter_type(client, settings, logger=QUIET)
                overshoots = []
                for _ in range(sizes.runs):
                    started = time.perf_counter()
                    try:
                        await adapter.get_response(MESSAGES)
                    except ChatTransportError:
                        overshoots.append(time.perf_counter() - started - deadline)
                    else:
                        raise AssertionError("a stalled request ended without an error")
                worst = max(overshoots)
                name = f"deadline overshoot, {adapter_type.__name__}, stalled peer"
                timings[name] = {"deadline_s": deadline, "overshoot_s": overshoots}
                checks.append(
                    Check(
                        name,
                        worst * 1000,
                        "ms",
                        "<= 100",
                        worst <= 0.1,
                        f"worst of {len(overshoots)} runs past a {deadline} s deadline "
                        f"(median {statistics.median(overshoots) * 1000:.1f} ms)",
                    )
                )
    return checks
