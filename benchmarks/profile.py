"""``python -m benchmarks.profile``: where one workload's time (cProfile) or memory (tracemalloc) goes.

    python -m benchmarks.profile small get_response          # cProfile, own time first
    python -m benchmarks.profile large streaming --sort cumulative
    python -m benchmarks.profile large get_response --memory  # what is held at the highest point
    python -m benchmarks.profile json create                  # the SDK's own floor, for comparison
    python -m benchmarks.profile large raw --layers           # each per-read layer added in turn
    python -m benchmarks.profile calls get_response --in-place  # the folder per event kind, in place

Workloads: ``large`` (20k-delta answer), ``calls`` (200 streamed calls), ``small`` (a tool loop's
round, 100 requests), ``json`` (2 MB JSON body, 5 reads); ``--kind`` picks the text of ``large``.
Variants: ``raw`` (SDK iteration) or ``create`` (JSON), ``raw_tagged`` (SDK iteration typing its events
by tag, as the adapters have it do), ``get_response``, ``streaming``, and
``get_response_telemetry``/``streaming_telemetry`` (OpenTelemetry SDK recording).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import io
import linecache
import pstats
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from adapters.responses.folding import EventFolder
from benchmarks import harness
from benchmarks.bodies import TEXT_KINDS, TextKind, make_body, make_calls_body, tool_loop_round
from benchmarks.harness import QUICK, Sizes
from benchmarks.workloads import (
    PROMPT,
    Scenario,
    raw_create,
    raw_iteration,
    raw_tagged_iteration,
    recording_telemetry,
    streamed,
    whole,
)

__all__ = ["OWNERS", "main", "memory_report", "render_shares", "time_report", "time_shares"]

WORKLOADS: Final = ("large", "calls", "small", "json")
VARIANTS: Final = (
    "raw",
    "raw_tagged",
    "create",
    "get_response",
    "streaming",
    "get_response_telemetry",
    "streaming_telemetry",
)
Run = Callable[[], Awaitable[object]]


async def build(
    workload: str, variant: str, sizes: Sizes, kind: TextKind = "mixed", *, memory: bool = False
) -> Run:
    """The timed run of ``variant`` on ``workload``, checked once like the suite checks it; with
    ``memory``, the large answer is the memory workload's (the same text in fewer, longer deltas)."""
    times = 1
    if workload == "large" and memory:
        body = make_body(sizes.memory_deltas, kind=kind, delta_chars=sizes.memory_delta_chars)
        scenario = Scenario(PROMPT, None, body)
    elif workload == "large":
        scenario = Scenario(PROMPT, None, make_body(sizes.fold, kind=kind))
    elif workload == "calls":
        scenario = Scenario(PROMPT, None, make_calls_body(sizes.calls, sizes.call_chars))
    elif workload == "small":
        messages, options = tool_loop_round()
        scenario, times = Scenario(messages, options, make_body(sizes.small_deltas)), sizes.small_requests
    else:
        scenario = Scenario(PROMPT, None, make_calls_body(sizes.json_calls, sizes.json_call_chars))
        times = sizes.json_repeats
    streaming = workload != "json"
    if variant in ("raw", "create"):
        return await (raw_iteration if streaming else raw_create)(scenario, times)
    if variant == "raw_tagged":
        return await raw_tagged_iteration(scenario, times)
    telemetry = recording_telemetry() if variant.endswith("_telemetry") else None
    chat = scenario.adapter(streaming=streaming, telemetry=telemetry)
    make = streamed if variant.startswith("streaming") else whole
    return await make(scenario, chat, times)


# Whose code a function is, by the top-level package of its file: ours, or the SDK's own stack.
_OURS: Final = frozenset({"adapters", "application", "domain"})
_SDK: Final = frozenset(
    {"openai", "pydantic", "pydantic_core", "httpx", "httpx2", "httpcore", "h11", "anyio"}
)
_ROOT: Final = Path(__file__).resolve().parents[1]
# The OpenTelemetry SDK and our telemetry decorators (adapters/telemetry) are owners of their own, so
# that what telemetry costs a request splits into theirs and ours.
OWNERS: Final = ("SDK", "ours", "ours, telemetry", "OpenTelemetry", "event loop", "harness", "other")
_Func = tuple[str, int, str]


def _owner_by_file(func: _Func) -> str | None:
    """The owner of ``func`` by where it is defined; None for the standard library and builtins
    other than pydantic-core's (their time goes to whoever called them)."""
    filename, _, name = func
    if filename == "~":
        return "SDK" if "pydantic_core" in name else None
    parts = Path(filename).parts
    if "site-packages" in parts:
        package = parts[parts.index("site-packages") + 1].removesuffix(".py")
        return "SDK" if package in _SDK else "OpenTelemetry" if package == "opentelemetry" else "other"
    if "asyncio" in parts:
        return "event loop"
    path = Path(filename).resolve()
    if path.is_relative_to(_ROOT):
        inside = path.relative_to(_ROOT).parts
        if inside[:2] == ("adapters", "telemetry"):
            return "ours, telemetry"
        return "ours" if inside[0] in _OURS else "harness" if inside[0] == "benchmarks" else "other"
    return None


def time_shares(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time per owner (see :data:`OWNERS`). A standard-library or builtin function's
    time (``json.loads``, ``str.encode``) goes to its callers, in proportion to the time each call
    edge took: json decoding inside the SDK's stream reader is the SDK's, inside ours is ours."""
    return shares_by_owner(stats, _owner_by_file, OWNERS)


def shares_by_owner(
    stats: pstats.Stats, owner_of: Callable[[_Func], str | None], owners_named: Sequence[str]
) -> dict[str, float]:
    """Seconds of own time per owner in ``owners_named``, as ``owner_of`` tells a function's owner
    (None: a function nobody owns, whose time goes to its callers in proportion to the time each call
    edge took; "other" when no caller is owned)."""
    table: dict[_Func, Any] = stats.stats  # type: ignore[attr-defined]  # pstats keeps no public view
    resolved: dict[_Func, dict[str, float]] = {}

    def owners(func: _Func, seen: frozenset[_Func]) -> dict[str, float]:
        if func in resolved:
            return resolved[func]
        owner = owner_of(func)
        if owner is not None:
            found = {owner: 1.0}
        else:
            callers = table[func][4] if func in table else {}
            weights = {caller: edge[2] or edge[0] for caller, edge in callers.items() if caller not in seen}
            total = sum(weights.values()) or 1.0
            found = {}
            for caller, weight in weights.items():
                for name, share in owners(caller, seen | {func}).items():
                    found[name] = found.get(name, 0.0) + share * weight / total
            found = found or {"other": 1.0}
        resolved[func] = found
        return found

    seconds = dict.fromkeys(owners_named, 0.0)
    for func, (_, _, own, _, _) in table.items():
        for name, share in owners(func, frozenset()).items():
            seconds[name] += own * share
    return seconds


def render_shares(seconds: dict[str, float]) -> str:
    total = sum(seconds.values()) or 1.0
    return "own time by owner: " + ", ".join(
        f"{name} {value / total:.1%} ({value * 1e3:.0f} ms)" for name, value in seconds.items() if value
    )


async def time_report(run: Run, *, sort: str = "tottime", top: int = 30) -> str:
    """cProfile of one ``run``: whose code the time went to (the SDK's own stack, ours, the event
    loop, the benchmark's mock transport), then the ``top`` functions by ``sort``."""
    profiler = cProfile.Profile()
    profiler.enable()
    await run()
    profiler.disable()
    report = io.StringIO()
    stats = pstats.Stats(profiler, stream=report)
    report.write(render_shares(time_shares(stats)) + "\n\n")
    stats.sort_stats(sort).print_stats(top)
    return report.getvalue()


class _Highest:
    """A tracemalloc snapshot taken whenever the traced memory reaches a new high between two reads
    of the body: what is held across reads (the adapters' own state) at its largest."""

    def __init__(self) -> None:
        self.current = 0
        self.snapshot: tracemalloc.Snapshot | None = None

    def look(self) -> None:
        current, _ = tracemalloc.get_traced_memory()
        if current > self.current:
            self.current = current
            self.snapshot = tracemalloc.take_snapshot()


async def memory_report(run: Run, *, top: int = 15) -> str:
    """The true tracemalloc peak of one ``run``, and the allocation sites holding the most at the
    highest point between two reads of the body (tracemalloc cannot snapshot the peak itself)."""
    highest = _Highest()
    chunked = harness._ChunkedBody.__aiter__

    async def watched(self: harness._ChunkedBody) -> object:
        async for chunk in chunked(self):
            highest.look()
            yield chunk
        highest.look()

    harness._ChunkedBody.__aiter__ = watched  # type: ignore[method-assign, assignment]  # a probe, restored below
    tracemalloc.start(25)
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        await run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        harness._ChunkedBody.__aiter__ = chunked  # type: ignore[method-assign]  # restored
        tracemalloc.stop()
    lines = [
        f"peak {(peak - before) / 2**20:.2f} MiB above the start; highest between reads "
        f"{(highest.current - before) / 2**20:.2f} MiB, held by:"
    ]
    if highest.snapshot is not None:
        for stat in highest.snapshot.statistics("traceback")[:top]:
            lines.append(f"{stat.size / 2**10:9.1f} KiB in {stat.count:6d} blocks")
            for frame in stat.traceback[-6:]:
                line = linecache.getline(frame.filename, frame.lineno).strip()
                lines.append(f"      {frame.filename}:{frame.lineno}  {line}")
    return "\n".join(lines)


async def fold_report(workload: str, sizes: Sizes, kind: TextKind = "mixed") -> str:
    """Without a profiler (cProfile slows many small Python calls, the folding's, far more than the
    SDK's few C calls per event): the SDK's own iteration of a streamed answer, then the event
    folder alone over the very events it built, without and with updates for a streaming caller
    (handed on as they come, as the adapter hands them to a caller that keeps none)."""
    if workload == "calls":
        body = make_calls_body(sizes.calls, sizes.call_chars)
    elif workload == "large":
        body = make_body(sizes.fold, kind=kind)
    else:
        raise ValueError("--fold reads a streamed answer: the large or calls workload")
    client, _ = harness.serve(body.sse, "text/event-stream")
    lines = []
    for _ in range(3):
        started = time.process_time()
        stream = await client.responses.create(model="gpt-5.5", input="Summarize the meeting.", stream=True)
        events = [event async for event in stream]
        raw = time.process_time() - started
        folds = []
        for updates in (False, True):
            folder = EventFolder(updates=updates)
            started = time.process_time()
            for event in events:
                folder.feed(event)
                if folder.out:
                    # Handed on, as the adapter hands them to a caller that keeps none: kept here, the
                    # 20k updates would be the garbage collector's work, which no caller's stream has.
                    folder.out = []
            folder.result()
            folds.append(time.process_time() - started)
        lines.append(
            f"raw SDK iteration {raw * 1e3:.1f} ms CPU; folding its {len(events)} events "
            f"{folds[0] * 1e3:.1f} ms ({folds[0] / raw:.1%}), with updates {folds[1] * 1e3:.1f} ms "
            f"({folds[1] / raw:.1%})"
        )
    return "\n".join(lines)


async def in_place_report(run: Run, floor: Run, runs: int) -> str:
    """Without a profiler, and in place: the event folder's time per event kind, taken around each
    event it folds during the real request, in runs interleaved with the SDK's own iteration
    (``floor``) of the same body, typing its events by tag as the adapter has it do. A run is one
    request (a hundred for ``small``).

    Code that runs between the SDK's steps costs more than timed apart in a loop, where its code and
    data stay in the CPU's caches (six to eight times more with the SDK's union as shipped, which
    pydantic validated against every event class; typed by tag, the folder's time per event in place
    fell by half or more), so what a workload's ratio is made of is read here, not from ``--fold``.
    A median per kind stands against the machine's noise, which moves a whole run's CPU time by
    10-40%. Each figure includes the probe's own cost, well under a microsecond an event.
    """
    took: dict[str, list[int]] = collections.defaultdict(list)
    feed = EventFolder.feed
    clock = time.perf_counter_ns

    def timed(folder: EventFolder, event: Any) -> None:
        started = clock()
        try:
            feed(folder, event)
        finally:
            took[str(getattr(event, "type", None) or type(event).__name__)].append(clock() - started)

    totals: dict[str, list[float]] = {"raw": [], "adapter": []}
    for _ in range(runs):
        started = time.process_time()
        await floor()
        totals["raw"].append(time.process_time() - started)
        EventFolder.feed = timed  # type: ignore[method-assign, assignment]  # a probe, restored below
        try:
            started = time.process_time()
            await run()
            totals["adapter"].append(time.process_time() - started)
        finally:
            EventFolder.feed = feed  # type: ignore[method-assign]  # restored
    raw, adapter = statistics.median(totals["raw"]), statistics.median(totals["adapter"])
    lines = [
        f"per run, medians of {runs}: SDK iteration typing by tag {raw * 1e3:.1f} ms CPU, the adapter with "
        f"the probe {adapter * 1e3:.1f} ms ({adapter / raw:.3f}; whole runs vary by 10-40%, the "
        "per-kind medians below do not)",
        "",
        f"{'event':48s} {'a run':>9s} {'median':>10s} {'a run':>10s} {'of SDK':>7s}",
    ]
    folding = 0.0
    for kind, times in sorted(took.items(), key=lambda entry: -sum(entry[1])):
        per_run = sum(times) / runs / 1e9
        folding += per_run
        lines.append(
            f"{kind:48s} {len(times) / runs:9.0f} {statistics.median(times) / 1e3:8.2f} us "
            f"{per_run * 1e3:7.2f} ms {per_run / raw:7.2%}"
        )
    lines.append(
        f"{'the event folder in all':48s} {'':9s} {'':11s} {folding * 1e3:7.2f} ms {folding / raw:7.2%}"
    )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profile",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("workload", choices=WORKLOADS)
    parser.add_argument("variant", choices=VARIANTS)
    parser.add_argument("--kind", choices=TEXT_KINDS, default="mixed", help="the text of the large answer")
    parser.add_argument("--memory", action="store_true", help="tracemalloc instead of cProfile")
    parser.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative, ...)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="the --quick sizes of python -m benchmarks")
    parser.add_argument(
        "--fold",
        action="store_true",
        help="no profiler: the event folder alone against raw SDK iteration (large, calls)",
    )
    parser.add_argument(
        "--layers",
        action="store_true",
        help="no profiler: each per-read layer of the adapter added in turn to the bare SDK "
        "(large, calls, small)",
    )
    parser.add_argument(
        "--in-place",
        action="store_true",
        help="no profiler: the event folder's time per event kind during the real request, beside "
        "the SDK's own iteration (large, calls, small; get_response or streaming)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help="interleaved runs of --layers and --in-place (the suite's by default)",
    )
    return parser


def main(argv: Sequence[str] | None = None, *, sizes: Sizes | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.in_place and (args.workload == "json" or args.variant in ("raw", "raw_tagged", "create")):
        parser.error(
            "--in-place times the adapter's event folder: a streamed workload (large, calls, small) "
            "and a variant of the adapter (get_response, streaming, ...)"
        )
    if sizes is None:
        sizes = QUICK if args.quick else Sizes()

    async def profile() -> str:
        if args.layers:
            from benchmarks.layers import layers_report

            runs = sizes if args.runs is None else attrs.evolve(sizes, runs=args.runs)
            return await layers_report(args.workload, runs, args.kind)
        run = await build(args.workload, args.variant, sizes, args.kind, memory=args.memory)
        if args.in_place:
            floor = await build(args.workload, "raw_tagged", sizes, args.kind)
            return await in_place_report(run, floor, sizes.runs if args.runs is None else args.runs)
        if args.fold:
            return await fold_report(args.workload, sizes, args.kind)
        if args.memory:
            return await memory_report(run, top=args.top)
        return await time_report(run, sort=args.sort, top=args.top)

    what = f"{args.workload} {args.variant}" + (f" ({args.kind} text)" if args.workload == "large" else "")
    tool = (
        "per-read layers (no profiler)"
        if args.layers
        else "the event folder in place (no profiler)"
        if args.in_place
        else "folding alone (no profiler)"
        if args.fold
        else "tracemalloc"
        if args.memory
        else "cProfile"
    )
    print(f"{tool} of {what}\n")
    print(asyncio.run(profile()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
