"""The benchmarks of issue 6: each measured side by side in one process and reported as a ratio."""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from application import GuardedToolInvoker, ToolRegistry
from benchmarks.bodies import Body, make_body
from benchmarks.boundary import body_cap, deadline_overshoot
from benchmarks.harness import (
    Check,
    Samples,
    Sizes,
    WrongOutputError,
    interleaved,
    peak_bytes,
    sdk_iterate,
    serve,
)
from benchmarks.streaming import streaming
from benchmarks.telemetry import telemetry_overhead
from domain import ChatMessage, FunctionCallContent

__all__ = ["Check", "Sizes", "profile_fold", "run_suite"]

MODEL = "gpt-5.5"
PROMPT = "Summarize the meeting."
MESSAGES = (ChatMessage.user(PROMPT),)
SSE = "text/event-stream"
JSON = "application/json"


def _expect(got: str, body: Body, who: str) -> None:
    if got != body.text:
        raise WrongOutputError(f"{who} folded {len(got)} characters, expected {len(body.text)}")


async def _sdk_accumulate(body: Body) -> Callable[[], Awaitable[object]]:
    client, _ = serve(body.sse, SSE)

    async def run() -> str:
        async with client.responses.stream(model=MODEL, input=PROMPT) as stream:
            final = await stream.get_final_response()
        return final.output_text

    _expect(await run(), body, "responses.stream()")
    return run


async def _adapter(body: Body, *, streaming: bool) -> Callable[[], Awaitable[object]]:
    client, _ = serve(body.sse if streaming else body.json, SSE if streaming else JSON)
    settings = ResponsesSettings(model=MODEL)
    adapter = ResponsesSseAdapter(client, settings) if streaming else ResponsesJsonAdapter(client, settings)

    async def run() -> str:
        return (await adapter.get_response(MESSAGES)).text

    _expect(await run(), body, type(adapter).__name__)
    return run


def _ratio_check(name: str, numerator: Samples, denominator: Samples, limit: float, *, strict: bool) -> Check:
    ratio = numerator.median / denominator.median
    met = ratio < limit if strict else ratio <= limit
    target = f"{'<' if strict else '<='} {limit:g}"
    detail = f"{numerator.median * 1e3:.1f} ms vs {denominator.median * 1e3:.1f} ms CPU"
    return Check(name, ratio, "ratio", target, met, detail)


async def fold_overhead(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """The SSE adapter against the raw SDK stream and against the SDK's own accumulator, same body."""
    body = make_body(sizes.fold)
    samples = await interleaved(
        {
            "sse_adapter": await _adapter(body, streaming=True),
            "sdk_iterate": await sdk_iterate(body.sse, body.events),
            "sdk_stream_accumulate": await _sdk_accumulate(body),
        },
        runs=sizes.runs,
    )
    timings[f"fold_{body.events}_events"] = {name: s.as_json() for name, s in samples.items()}
    return [
        _ratio_check(
            f"fold overhead: SSE adapter / raw SDK iteration ({body.events} events)",
            samples["sse_adapter"],
            samples["sdk_iterate"],
            1.05,
            strict=False,
        ),
        _ratio_check(
            f"SSE adapter / SDK responses.stream()+get_final_response() ({body.events} events)",
            samples["sse_adapter"],
            samples["sdk_stream_accumulate"],
            1.0,
            strict=True,
        ),
    ]


async def scaling(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Per-event time of the SSE adapter (and of raw SDK iteration, for reference) as bodies grow."""
    per_event: dict[int, float] = {}
    raw_per_event: dict[int, float] = {}
    for deltas in sizes.scaling:
        body = make_body(deltas)
        samples = await interleaved(
            {
                "sse_adapter": await _adapter(body, streaming=True),
                "sdk_iterate": await sdk_iterate(body.sse, body.events),
            },
            runs=sizes.runs,
        )
        per_event[body.events] = samples["sse_adapter"].median / body.events
        raw_per_event[body.events] = samples["sdk_iterate"].median / body.events
        timings[f"scaling_{body.events}_events"] = {name: s.as_json() for name, s in samples.items()}
    smallest, largest = min(per_event), max(per_event)
    growth = per_event[largest] / per_event[smallest] - 1
    raw_growth = raw_per_event[largest] / raw_per_event[smallest] - 1
    detail = ", ".join(f"{events}: {seconds * 1e6:.1f} us/event" for events, seconds in per_event.items())
    detail += f"; raw SDK grows {raw_growth:+.1%}"
    return [
        Check(
            f"per-event time growth, {smallest} -> {largest} events",
            growth,
            "fraction",
            "<= 0.15",
            growth <= 0.15,
            detail,
        )
    ]


async def memory(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """tracemalloc peak while the SSE adapter folds a large body (the body itself is not counted).

    Measured twice: on the default text (two bytes per character in memory) and on ASCII text.
    """
    checks = []
    for ascii_only in (False, True):
        body = make_body(sizes.memory, ascii_only=ascii_only)
        adapter = await _adapter(body, streaming=True)
        raw = await sdk_iterate(body.sse, body.events)
        peak = await peak_bytes(adapter)
        raw_peak = await peak_bytes(raw)
        limit = 4 * body.output_bytes + 2 * 1024 * 1024
        text = "ASCII text" if ascii_only else "text with non-Latin-1 characters"
        timings[f"memory_{body.events}_events{'_ascii' if ascii_only else ''}"] = {
            "adapter_peak_bytes": peak,
            "sdk_iterate_peak_bytes": raw_peak,
            "output_bytes": body.output_bytes,
            "body_bytes": len(body.sse),
        }
        detail = (
            f"peak {peak / 2**20:.2f} MiB for {body.output_bytes / 2**20:.2f} MiB of UTF-8 text "
            f"(limit {limit / 2**20:.2f} MiB); raw SDK iteration alone peaks at {raw_peak / 2**20:.2f} MiB, "
            f"so the adapter adds {(peak - raw_peak) / 2**20:.2f} MiB"
        )
        checks.append(
            Check(
                f"memory peak / (4 x output + 2 MiB), {body.events} events, {text}",
                peak / limit,
                "ratio",
                "<= 1",
                peak <= limit,
                detail,
            )
        )
    return checks


@attrs.frozen
class _Sum:
    a: int
    b: int


def _add(params: _Sum) -> dict[str, int]:
    """Add two integers."""
    return {"sum": params.a + params.b}


async def tool_call_overhead(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Per call: the function itself, through the registry, and through guard + registry."""
    registry = ToolRegistry()
    registry.add(_add)
    guard = GuardedToolInvoker(registry)
    call = FunctionCallContent.parse(call_id="call_1", name="_add", raw_arguments='{"a": 2, "b": 3}')
    malformed = FunctionCallContent.parse(call_id="call_2", name="_add", raw_arguments='{"a": 2, "b": ')
    n = sizes.tool_calls
    params = _Sum(2, 3)

    async def direct() -> None:
        for _ in range(n):
            _add(params)

    async def through_registry() -> None:
        for _ in range(n):
            await registry.invoke(call)

    async def through_guard() -> None:
        for _ in range(n):
            await guard.invoke(call)

    async def guard_refusal() -> None:
        for _ in range(n):
            await guard.invoke(malformed)

    if (await guard.invoke(call)).result != {"sum": 5} or not (await guard.invoke(malformed)).is_error:
        raise WrongOutputError("the guarded registry answered the benchmark calls wrongly")
    samples = await interleaved(
        {
            "direct": direct,
            "registry": through_registry,
            "guard_and_registry": through_guard,
            "guard_refusal": guard_refusal,
        },
        runs=sizes.runs,
    )
    timings["tool_calls"] = {name: s.as_json() | {"calls_per_run": n} for name, s in samples.items()}
    per_call = {name: s.median / n for name, s in samples.items()}
    overhead = per_call["guard_and_registry"] - per_call["direct"]
    detail = (
        f"direct {per_call['direct'] * 1e6:.2f} us, registry {per_call['registry'] * 1e6:.2f} us, "
        f"guard+registry {per_call['guard_and_registry'] * 1e6:.2f} us, "
        f"guard refusing malformed arguments {per_call['guard_refusal'] * 1e6:.2f} us per call"
    )
    return [
        Check("guard + registry overhead per tool call", overhead * 1e6, "us/call", "report", None, detail)
    ]


async def json_vs_sse(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """The JSON adapter on a JSON Response against the SSE adapter on the same output as a stream."""
    body = make_body(sizes.fold)
    samples = await interleaved(
        {
            "json_adapter": await _adapter(body, streaming=False),
            "sse_adapter": await _adapter(body, streaming=True),
        },
        runs=sizes.runs,
    )
    timings[f"json_vs_sse_{body.deltas}_deltas"] = {name: s.as_json() for name, s in samples.items()}
    ratio = samples["json_adapter"].median / samples["sse_adapter"].median
    detail = (
        f"JSON {samples['json_adapter'].median * 1e3:.1f} ms ({len(body.json) / 1024:.0f} KiB body) vs "
        f"SSE {samples['sse_adapter'].median * 1e3:.1f} ms ({len(body.sse) / 1024:.0f} KiB body), CPU"
    )
    return [Check("JSON adapter / SSE adapter, same output", ratio, "ratio", "report", None, detail)]


async def profile_fold(deltas: int, *, top: int = 20) -> str:
    """cProfile of one SSE-adapter fold of ``deltas`` text deltas: the functions by own time."""
    body = make_body(deltas)
    run = await _adapter(body, streaming=True)
    profiler = cProfile.Profile()
    profiler.enable()
    await run()
    profiler.disable()
    report = io.StringIO()
    pstats.Stats(profiler, stream=report).sort_stats("tottime").print_stats(top)
    return report.getvalue()


async def run_suite(sizes: Sizes) -> tuple[list[Check], dict[str, Any]]:
    """Every benchmark, in order; returns the checks and the raw timings behind them."""
    checks: list[Check] = []
    timings: dict[str, Any] = {}
    started = time.perf_counter()
    for benchmark in (
        fold_overhead,
        scaling,
        memory,
        tool_call_overhead,
        json_vs_sse,
        body_cap,
        deadline_overshoot,
        telemetry_overhead,
        streaming,
    ):
        checks.extend(await benchmark(sizes, timings))
    timings["wall_s"] = time.perf_counter() - started
    return checks, timings
