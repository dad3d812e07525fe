"""CPU-heavy bodies against the deadline and the loop: how long a request takes to return, and the loop's
longest stall while it runs (wall time: these are the figures a host sees).

``python -m benchmarks.cpu [--items N] [--runs N]`` prints them; ``make bench`` includes them. The
tests (``tests/integration/boundary/test_cpu.py``) hold the same promise without a clock: they count
how many items are folded between two turns of the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

from adapters.offline.render import call_item, event_frame, message_item, response_document, stream_events
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter, chat_adapters
from adapters.responses.incremental import LARGE
from benchmarks.boundary import QUIET
from benchmarks.harness import Check, Sizes, serve
from domain import ChatError, ChatMessage, ChatResponse

__all__ = ["Heartbeat", "cpu_bounds", "heartbeat", "large_lines", "parse_off_the_loop"]

MESSAGES: Final = (ChatMessage.user("Summarize the meeting."),)
BEAT: Final = 0.005
DEADLINE: Final = 1.0
RETURN_BAR: Final = 1.5
STALL_BAR: Final = 0.1


class Heartbeat:
    """A task that wakes every few milliseconds and keeps the longest gap between two wakes.

    ``longest`` is wall time (what a host's other tasks wait); ``longest_own`` is the loop thread's
    own CPU time in the gap, less the time the interpreter spent collecting garbage (on a shared
    machine the OS also pauses the process, which no code can help); ``longest_collection`` is the
    longest single collection.
    """

    def __init__(self) -> None:
        self.longest = 0.0
        self.longest_own = 0.0
        self.longest_collection = 0.0
        # Collections of the oldest generation (a walk of the whole heap) while the beat ran.
        self.full_collections = 0
        # Collections of each generation (young, middle, whole heap) while the beat ran.
        self.collections = [0, 0, 0]
        self._collecting = 0.0
        self._started = 0.0

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            pause = time.thread_time() - self._started
            self._collecting += pause
            self.longest_collection = max(self.longest_collection, pause)
            generation = info.get("generation", 0)
            self.full_collections += generation == 2
            self.collections[generation] += 1

    async def run(self) -> None:
        gc.callbacks.append(self._on_collection)
        try:
            last_wall, last_own = time.perf_counter(), time.thread_time()
            while True:
                self._collecting = 0.0
                await asyncio.sleep(BEAT)
                wall, own = time.perf_counter(), time.thread_time()
                self.longest = max(self.longest, wall - last_wall - BEAT)
                self.longest_own = max(self.longest_own, own - last_own - self._collecting)
                last_wall, last_own = wall, own
        finally:
            gc.callbacks.remove(self._on_collection)


@asynccontextmanager
async def heartbeat() -> AsyncIterator[Heartbeat]:
    beat = Heartbeat()
    task = asyncio.get_running_loop().create_task(beat.run())
    try:
        yield beat
        # One more beat: a stall at the very end of the block is only seen once the beat runs after it.
        await asyncio.sleep(2 * BEAT)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _bodies(items: int) -> dict[str, tuple[bytes, str]]:
    """The attacker's bodies: ``items`` untyped items, and as many real calls, as a stream and a document."""
    calls = [call_item(f"fc_{n}", f"call_{n}", "record_decision", '{"arg": 1}') for n in range(items)]
    opening = response_document([], response_id="resp_many", model="gpt-5.5", created_at=1_771_881_670)
    created = event_frame(stream_events(opening)[0])
    bodies = {}
    for what, output in ((f"{items:,} untyped items", [{}] * items), (f"{items:,} calls", calls)):
        document: dict[str, Any] = {
            "id": "resp_many",
            "object": "response",
            "status": "completed",
            "output": output,
        }
        completed = event_frame({"type": "response.completed", "response": document})
        bodies[f"{what}, one response.completed"] = ((created + completed).encode(), "text/event-stream")
        bodies[f"{what}, one JSON document"] = (json.dumps(document).encode(), "application/json")
    return bodies


async def _measure(
    body: bytes, content_type: str, adapter_type: Any, deadline: float, *, turns: bool = False
) -> dict[str, Any]:
    client, _ = serve(body, content_type, turns=turns)
    settings = ResponsesSettings(model="gpt-5.5", deadline_seconds=deadline)
    adapter = adapter_type(client, settings, logger=QUIET)
    warm = adapter_type(client, ResponsesSettings(model="gpt-5.5", deadline_seconds=600), logger=QUIET)
    # The first request only warms the adapter up: a body it refuses warms it up as well.
    with contextlib.suppress(ChatError):
        await warm.get_response(MESSAGES)
    gc.collect()
    async with heartbeat() as beat:
        # The heartbeat's first turn, before the request: a request that never gives the loop a turn
        # shows as the gap it makes, not as no gap at all.
        await asyncio.sleep(2 * BEAT)
        started = time.perf_counter()
        try:
            outcome = await adapter.get_response(MESSAGES)
            ended = f"answer of {len(outcome.messages)} messages" if isinstance(outcome, ChatResponse) else ""
        except ChatError as error:
            ended = type(error).__name__
        elapsed = time.perf_counter() - started
    return {
        "returned_s": elapsed,
        "longest_stall_s": beat.longest,
        "longest_own_stall_s": beat.longest_own,
        "longest_collection_s": beat.longest_collection,
        "full_collections": beat.full_collections,
        "collections": list(beat.collections),
        "outcome": ended,
    }


async def cpu_bounds(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Per body and adapter: worst of ``sizes.runs`` runs. Untyped items under a 1 s deadline (the
    return time is held to 1.5 s); calls under a 600 s deadline (folded whole: the fold's time)."""
    checks = []
    for what, (body, content_type) in _bodies(sizes.cpu_items).items():
        deadline = DEADLINE if "untyped" in what else 600.0
        for adapter_type in (ResponsesSseAdapter, ResponsesJsonAdapter):
            runs = [await _measure(body, content_type, adapter_type, deadline) for _ in range(sizes.runs)]
            name = f"{adapter_type.__name__}, {what}"
            timings[f"cpu: {name}"] = {"body_bytes": len(body), "deadline_s": deadline, "runs": runs}
            returned = max(run["returned_s"] for run in runs)
            stall = max(run["longest_stall_s"] for run in runs)
            own = max(run["longest_own_stall_s"] for run in runs)
            collection = max(run["longest_collection_s"] for run in runs)
            full = max(run["full_collections"] for run in runs)
            outcomes = sorted({run["outcome"] for run in runs})
            median = statistics.median(run["returned_s"] for run in runs)
            if deadline == DEADLINE:
                checks.append(
                    Check(
                        f"return under a {DEADLINE:g} s deadline, {name}",
                        returned,
                        "s",
                        f"<= {RETURN_BAR}",
                        returned <= RETURN_BAR,
                        f"worst of {len(runs)} (median {median:.3f} s): " + ", ".join(outcomes),
                    )
                )
            checks.append(
                Check(
                    f"loop's longest stall, {name}",
                    stall * 1000,
                    "ms",
                    f"<= {STALL_BAR * 1000:g}",
                    stall <= STALL_BAR,
                    f"worst of {len(runs)}, wall time; the loop's own work {own * 1000:.1f} ms, the longest "
                    f"garbage collection {collection * 1000:.1f} ms ({full} of the whole heap at most); "
                    f"returned after {returned:.2f} s "
                    f"({', '.join(outcomes)})",
                )
            )
    return checks


async def parse_off_the_loop(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """The loop's longest stall while ``json.loads`` parses one large event line, on the loop and in a
    worker thread (``asyncio.to_thread``): whether moving the parse off the loop lets the loop run."""
    size = 4 * sizes.memory_body
    lines = {
        "one long string": json.dumps({"type": "response.output_text.done", "text": "x" * size}),
        "small objects": "[" + ",".join(['{"a":1.5}'] * (size // 10)) + "]",
    }
    checks = []
    for what, line in lines.items():
        stalls = {}
        for where in ("on the loop", "in a worker thread"):
            gc.collect()
            async with heartbeat() as beat:
                await asyncio.sleep(2 * BEAT)
                if where == "on the loop":
                    json.loads(line)
                else:
                    await asyncio.to_thread(json.loads, line)
                await asyncio.sleep(2 * BEAT)
            stalls[where] = beat.longest
        timings[f"cpu: json.loads of {what}"] = {"line_bytes": len(line), **stalls}
        checks.append(
            Check(
                f"loop's longest stall, json.loads of one {len(line) / 2**20:.0f} MiB line of {what}, "
                "in a worker thread",
                stalls["in a worker thread"] * 1000,
                "ms",
                "report",
                None,
                f"on the loop itself {stalls['on the loop'] * 1000:.0f} ms: json.loads holds the GIL "
                "while it parses, so a thread does not give the loop its turns",
            )
        )
    return checks


def _large_lines(size: int) -> dict[str, tuple[bytes, str, Any]]:
    """One line of ``size`` bytes: a long text, or calls whose arguments are long, as the data of one
    ``response.completed`` event and as a JSON document."""
    text = 'A line with "quotes", a \\ backslash, {braces} and \u00e9.\n'
    long_text = [message_item("msg_0", text * (size // len(json.dumps(text))))]
    arguments = json.dumps({"decision": "ship " * (size // 10_000 // 5)})
    calls = [call_item(f"fc_{n}", f"call_{n}", "record_decision", arguments) for n in range(10_000)]
    opening = response_document([], response_id="resp_line", model="gpt-5.5", created_at=1_771_881_670)
    created = event_frame(stream_events(opening)[0])
    bodies: dict[str, tuple[bytes, str, Any]] = {}
    for what, output in (("one long text", long_text), ("10,000 calls", calls)):
        document = {"id": "resp_line", "object": "response", "status": "completed", "output": output}
        completed = event_frame({"type": "response.completed", "response": document})
        bodies[f"{what}, one response.completed event"] = (
            (created + completed).encode(),
            "text/event-stream",
            ResponsesSseAdapter,
        )
        bodies[f"{what}, one JSON document"] = (
            json.dumps(document).encode(),
            "application/json",
            ResponsesJsonAdapter,
        )
    return bodies


async def large_lines(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """The loop's longest stall while one line of ``4 * memory_body`` bytes (16 MiB) is read: parsed in
    steps (as the adapters do) and, side by side in the same runs, with ``json.loads`` in one call (as
    they did), by raising the size from which a line is parsed in steps past the line's. Medians of
    ``sizes.runs`` interleaved runs."""
    checks = []
    for what, (body, content_type, adapter_type) in _large_lines(4 * sizes.memory_body).items():
        runs: dict[str, list[dict[str, Any]]] = {"in steps": [], "json.loads": []}
        for _ in range(sizes.runs):
            for how in runs:
                # The size from which the adapters parse a line in steps (chat_adapters.LARGE).
                adapters_module: Any = chat_adapters
                adapters_module.LARGE = LARGE if how == "in steps" else sys.maxsize
                try:
                    runs[how].append(await _measure(body, content_type, adapter_type, 600.0, turns=True))
                finally:
                    adapters_module.LARGE = LARGE
        timings[f"cpu: {what}"] = {"body_bytes": len(body), "runs": runs}
        stall = {how: statistics.median(run["longest_stall_s"] for run in done) for how, done in runs.items()}
        returned = {how: statistics.median(run["returned_s"] for run in done) for how, done in runs.items()}
        own = statistics.median(run["longest_own_stall_s"] for run in runs["in steps"])
        collection = max(run["longest_collection_s"] for run in runs["in steps"])
        full = max(run["full_collections"] for run in runs["in steps"])
        counts = [statistics.median(run["collections"][g] for run in runs["in steps"]) for g in range(3)]
        outcomes = sorted({run["outcome"] for done in runs.values() for run in done})
        checks.append(
            Check(
                f"loop's longest stall, {adapter_type.__name__}, {what} of {len(body) / 2**20:.0f} MiB",
                stall["in steps"] * 1000,
                "ms",
                f"<= {STALL_BAR * 1000:g}",
                stall["in steps"] <= STALL_BAR,
                f"median of {sizes.runs}, wall time; with json.loads in one call "
                f"{stall['json.loads'] * 1000:.0f} ms; the loop's own work {own * 1000:.1f} ms, "
                "the longest garbage collection "
                f"{collection * 1000:.1f} ms ({full} of the whole heap at most; median collections "
                f"young/middle/whole {counts[0]:g}/{counts[1]:g}/{counts[2]:g}); returned after "
                f"{returned['in steps']:.2f} s (json.loads: {returned['json.loads']:.2f} s; "
                f"{', '.join(outcomes)})",
            )
        )
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cpu", description=__doc__)
    parser.add_argument("--items", type=int, default=Sizes().cpu_items, help="output items per body")
    parser.add_argument("--runs", type=int, default=3, help="runs per body and adapter (the worst is shown)")
    parser.add_argument("--only-lines", action="store_true", help="only the large single lines")
    args = parser.parse_args(argv)
    sizes = Sizes(cpu_items=args.items, runs=args.runs)
    timings: dict[str, Any] = {}

    async def both() -> list[Check]:
        if args.only_lines:
            return await large_lines(sizes, timings)
        return [
            *await cpu_bounds(sizes, timings),
            *await parse_off_the_loop(sizes, timings),
            *await large_lines(sizes, timings),
        ]

    for check in asyncio.run(both()):
        print(f"{check.name}: {check.value:.3f} {check.unit} (target {check.target}: {check.verdict})")
        print(f"    {check.detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
