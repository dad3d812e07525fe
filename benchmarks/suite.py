"""The whole suite: the workloads against the SDK's floor, then scaling, tool calls, telemetry, limits."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from application import GuardedToolInvoker, ToolRegistry
from benchmarks.backlog import backlog_first_result, batch_start
from benchmarks.bodies import Body, make_body
from benchmarks.boundary import body_cap, deadline_overshoot
from benchmarks.cpu import cpu_bounds, large_lines, parse_off_the_loop
from benchmarks.documents import resume_costs
from benchmarks.durable import durable_overhead, worker_throughput
from benchmarks.harness import Check, Sizes, WrongOutputError, interleaved, serve
from benchmarks.layers import layer_shares
from benchmarks.memory import body_memory
from benchmarks.startup import startup
from benchmarks.streaming import first_update
from benchmarks.telemetry import telemetry_overhead
from benchmarks.workloads import workloads
from domain import ChatMessage, FunctionCallContent

__all__ = ["Check", "Sizes", "run_suite"]

MODEL = "gpt-5.5"
MESSAGES = (ChatMessage.user("Summarize the meeting."),)
SSE = "text/event-stream"


async def _adapter(body: Body) -> Callable[[], Awaitable[object]]:
    client, _ = serve(body.sse, SSE)
    adapter = ResponsesSseAdapter(client, ResponsesSettings(model=MODEL))

    async def run() -> str:
        return (await adapter.get_response(MESSAGES)).text

    if await run() != body.text:
        raise WrongOutputError("the SSE adapter folded the wrong text")
    return run


async def scaling(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Per-event time of the SSE adapter as bodies grow: folding must stay linear."""
    bodies = [make_body(deltas) for deltas in sizes.scaling]
    samples = await interleaved({str(body.events): await _adapter(body) for body in bodies}, runs=sizes.runs)
    per_event = {body.events: samples[str(body.events)].median / body.events for body in bodies}
    timings["scaling"] = {name: s.as_json() for name, s in samples.items()}
    smallest, largest = min(per_event), max(per_event)
    growth = per_event[largest] / per_event[smallest] - 1
    detail = ", ".join(f"{events}: {seconds * 1e6:.1f} us/event" for events, seconds in per_event.items())
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


async def body_memory_in_processes(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """``benchmarks.memory``: peak memory per body shape, each in a process of its own."""
    return body_memory(sizes, timings)


async def paused_run(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """``benchmarks.documents``: ``loads`` + ``resume`` of a large paused run, and its peak memory."""
    return await resume_costs(sizes.paused_state)


async def run_suite(sizes: Sizes) -> tuple[list[Check], dict[str, Any]]:
    """Every benchmark, in order; returns the checks and the raw timings behind them."""
    checks: list[Check] = []
    timings: dict[str, Any] = {}
    started = time.perf_counter()
    for benchmark in (
        workloads,
        layer_shares,
        scaling,
        first_update,
        tool_call_overhead,
        telemetry_overhead,
        body_cap,
        deadline_overshoot,
        cpu_bounds,
        parse_off_the_loop,
        large_lines,
        body_memory_in_processes,
        durable_overhead,
        worker_throughput,
        backlog_first_result,
        batch_start,
        startup,
        paused_run,
    ):
        checks.extend(await benchmark(sizes, timings))
    timings["wall_s"] = time.perf_counter() - started
    return checks, timings
