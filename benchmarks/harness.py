"""Timing and serving helpers: interleaved runs with medians, and an SDK client over a mock transport."""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs
import httpx
import openai

__all__ = [
    "CHUNK_BYTES",
    "QUICK",
    "Check",
    "Samples",
    "Sizes",
    "WrongOutputError",
    "interleaved",
    "paired_ratios",
    "peak_bytes",
    "serve",
    "spread",
]

# Bytes per chunk handed to the SDK: what a socket read typically yields, so the SSE decoder sees
# events split across chunk boundaries as it would on the network.
CHUNK_BYTES = 16 * 1024


class _ChunkedBody(httpx.AsyncByteStream):
    def __init__(self, body: bytes, turns: bool = False) -> None:
        self._body = body
        self._turns = turns

    async def __aiter__(self) -> AsyncIterator[bytes]:
        view = memoryview(self._body)
        for start in range(0, len(view), CHUNK_BYTES):
            if self._turns and start:
                # A socket read gives the loop a turn (anyio's streams are checkpoints).
                await asyncio.sleep(0)
            yield bytes(view[start : start + CHUNK_BYTES])


def serve(
    body: bytes, content_type: str, headers: Mapping[str, str] | None = None, *, turns: bool = False
) -> tuple[openai.AsyncOpenAI, httpx.AsyncClient]:
    """An SDK client whose every request is answered with ``body``, in chunks, without any socket;
    with ``turns``, the loop gets a turn between two chunks, as between two reads of a socket."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": content_type, **(headers or {})}, stream=_ChunkedBody(body, turns)
        )

    http_client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    client = openai.AsyncOpenAI(
        api_key="sk-benchmark",
        base_url="http://bench.invalid/v1",
        http_client=http_client,  # type: ignore[arg-type]  # the SDK accepts a legacy httpx client
        max_retries=0,
    )
    return client, http_client


@attrs.frozen
class Samples:
    """CPU and wall seconds per run of one variant; ``median`` (CPU) is what the report uses.

    The work is CPU-bound and in-process (no socket), so the process's CPU time measures it without
    the time the machine gave to other processes; wall time is kept alongside for reference.
    """

    seconds: tuple[float, ...]
    wall_seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def as_json(self) -> dict[str, Any]:
        return {
            "median_cpu_s": self.median,
            "median_wall_s": statistics.median(self.wall_seconds),
            "runs_cpu_s": list(self.seconds),
            "runs_wall_s": list(self.wall_seconds),
        }


async def interleaved(
    variants: Mapping[str, Callable[[], Awaitable[object]]], *, runs: int, warmup: int = 1
) -> dict[str, Samples]:
    """Time every variant ``runs`` times, A B C A B C ..., so drift in the machine hits all alike."""
    for _ in range(warmup):
        for variant in variants.values():
            await variant()
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    wall: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, variant in variants.items():
            gc.collect()
            started_wall, started_cpu = time.perf_counter(), time.process_time()
            await variant()
            cpu[name].append(time.process_time() - started_cpu)
            wall[name].append(time.perf_counter() - started_wall)
    return {name: Samples(tuple(cpu[name]), tuple(wall[name])) for name in variants}


def paired_ratios(numerator: Samples, denominator: Samples) -> tuple[float, ...]:
    """Run by run, ``numerator`` over ``denominator``: interleaved runs of one round saw the same machine."""
    return tuple(n / d for n, d in zip(numerator.seconds, denominator.seconds, strict=True))


def spread(values: Sequence[float]) -> str:
    """The range of ``values`` as shown in the report: ``min-max``."""
    return f"{min(values):.3f}-{max(values):.3f}"


@attrs.frozen
class Sizes:
    """How big and how often: the size of each workload's body, and runs per variant.

    ``fold``: text deltas of the large answer; ``medium``: of the shorter one. ``memory_deltas`` of
    ``memory_delta_chars`` characters: the answer whose peak memory is measured on each text kind
    (tracemalloc slows every allocation, so a long text in fewer events).
    ``calls``/``call_chars``: the many-calls answer. ``small_requests``: requests per run of small
    answers of ``small_deltas`` deltas. ``json_calls``/``json_call_chars``: the JSON body, read
    ``json_repeats`` times a run. ``scaling``: answers whose per-event time is compared.
    """

    fold: int = 20_000
    medium: int = 5_000
    scaling: tuple[int, int, int] = (5_000, 20_000, 80_000)
    calls: int = 200
    call_chars: int = 600
    small_requests: int = 100
    small_deltas: int = 20
    json_calls: int = 200
    json_call_chars: int = 10_000
    json_repeats: int = 5
    memory_deltas: int = 2_000
    memory_delta_chars: int = 60
    memory_runs: int = 3
    tool_calls: int = 20_000
    runs: int = 5
    body_cap: int = 8 * 1024 * 1024
    batch: int = 40
    """Transcripts of the durable batch benchmarks (twice as many for the throughput across processes)."""
    backlog: int = 10_000
    """Tiny transcripts of the batch command's backlog benchmark (its first result, what a poll asks)."""
    cpu_items: int = 10_000
    """Output items of the CPU-heavy bodies (``benchmarks/cpu.py``): the attacker's 10,000."""
    memory_body: int = 4 * 1024 * 1024
    """Bytes of each body shape whose peak memory ``benchmarks/memory.py`` measures."""
    paused_state: int = 45_000_000
    """Bytes of the paused run whose ``loads`` + ``resume`` ``benchmarks/documents.py`` times."""


# A smoke run (``--quick``): tiny bodies and two runs a variant.
QUICK = Sizes(
    fold=400,
    medium=100,
    scaling=(50, 200, 800),
    calls=10,
    call_chars=200,
    small_requests=5,
    json_calls=10,
    json_call_chars=2_000,
    json_repeats=2,
    memory_deltas=100,
    memory_delta_chars=20,
    memory_runs=2,
    tool_calls=200,
    runs=2,
    body_cap=256 * 1024,
    batch=8,
    backlog=600,
    cpu_items=500,
    memory_body=64 * 1024,
    paused_state=200_000,
)


@attrs.frozen
class Check:
    """One line of the report: a measured figure, the target it is held to and whether it met it."""

    name: str
    value: float
    unit: str
    target: str
    met: bool | None
    detail: str = ""
    # The range of the run-by-run figures behind ``value`` (ratios of paired runs), when there are several.
    spread: str = ""

    @property
    def verdict(self) -> str:
        """``met`` or ``MISSED``; ``-`` for a figure held to no target."""
        if self.met is None:
            return "-"
        return "met" if self.met else "MISSED"

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


async def peak_bytes(run: Callable[[], Awaitable[object]]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        await run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


class WrongOutputError(AssertionError):
    """A variant produced the wrong output: its timing would be meaningless."""
