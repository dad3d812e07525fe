"""Peak memory while a body over ``max_response_bytes`` is refused: a huge plain line and a gzip bomb."""

from __future__ import annotations

import gzip
import logging
from typing import Any

from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from benchmarks.harness import Check, Sizes, peak_bytes, serve
from domain import ChatMessage, MalformedResponseError

__all__ = ["body_cap"]

MESSAGES = (ChatMessage.user("Summarize the meeting."),)
# Each refusal is logged as a failed request; the report says what happened instead.
_QUIET = logging.getLogger("benchmarks.boundary")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


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
            adapter = adapter_type(client, settings, logger=_QUIET)

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
