"""What a batch on DBOS costs: per transcript against plain asyncio, and throughput with 1 and 2 processes."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import psycopg

from adapters.durable import DurableChat, DurableToolInvoker, Engine, EngineSettings, Outcome, Runtime
from adapters.offline import OfflineResponsesServer
from adapters.offline.threaded import Receive, Scope, Send
from adapters.redaction import Redactor
from application import MeetingSummary, SummaryAgent
from benchmarks.durable_profile import profile_batch, split_batch
from benchmarks.harness import Check, Sizes
from benchmarks.report import render_table
from domain import ChatMessage, ChatOptions, ChatResponse, FunctionCallContent, TextContent, Usage

__all__ = ["CONCURRENCY", "LATENCY", "SlowModel", "durable_overhead", "worker_throughput"]

LATENCY: Final = 0.05
"""Seconds per model request: a fast gateway; the engine's cost is what comes on top of it."""
CONCURRENCY: Final = 4
_POLL_SECONDS: Final = 0.25  # as the batch command reads which workflows ended
_PROCESS_TIMEOUT: Final = 300.0


class SlowModel:
    """A ChatPort answering a summary in two requests of ``latency`` s: the tool calls, then the text."""

    def __init__(self, latency: float = LATENCY) -> None:
        self.latency = latency

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        await asyncio.sleep(self.latency)
        if any(message.role == "tool" for message in messages):
            contents: tuple[Any, ...] = (TextContent("The team agreed to ship on Friday."),)
            finish: Literal["stop", "tool_calls"] = "stop"
        else:
            contents = (
                FunctionCallContent.parse(call_id="c1", name="list_participants", raw_arguments="{}"),
                FunctionCallContent.parse(
                    call_id="c2",
                    name="record_action_item",
                    raw_arguments=(
                        '{"owner": "Ben", "task": "update the changelog", "due": "Thursday", "lines": [2]}'
                    ),
                ),
                FunctionCallContent.parse(
                    call_id="c3",
                    name="record_decision",
                    raw_arguments='{"decision": "Ship the plan", "lines": [1]}',
                ),
            )
            finish = "tool_calls"
        return ChatResponse(
            messages=(ChatMessage("assistant", contents),),
            response_id="resp_bench",
            model_id="bench",
            status="completed",
            finish_reason=finish,
            usage=Usage(900, 60, 960),
        )

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> Any:
        raise NotImplementedError  # the batch reads whole answers


def _transcripts(count: int, round_: int) -> list[str]:
    # New texts every round: a workflow id (the sha256) already done would not run again.
    return [
        f"Ana: We decided to ship plan {round_}-{n}.\nBen: I will update the changelog by Thursday.\n"
        for n in range(count)
    ]


async def _plain(transcripts: Sequence[str]) -> None:
    agent = SummaryAgent(SlowModel())
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(text: str) -> MeetingSummary:
        async with slots:
            return await agent.summarize(text)

    summaries = await asyncio.gather(*(one(text) for text in transcripts))
    assert all(summary.action_items for summary in summaries)


async def _all_done(engine: Engine, workflows: Iterable[str]) -> None:
    """Wait until every one of ``workflows`` has ended (as the batch command reads it), each ``done``."""
    waiting = set(workflows)
    ended: dict[str, Outcome] = {}
    while waiting:
        news = await engine.take_finished()
        ended |= news
        waiting -= news.keys()
        if waiting and not news:
            await engine.wait(_POLL_SECONDS)
    assert all(outcome.status == "done" for outcome in ended.values()), ended


def bench_runtime(latency: float = LATENCY) -> Runtime:
    """The durable runtime the batch benchmarks run: the summary pipeline on a :class:`SlowModel` of
    ``latency`` s a request, each request and tool call a step."""
    redactor = Redactor(["sk-bench"])
    model = SlowModel(latency)
    decorators = [DurableToolInvoker.decorator(redactor, rebuild=True)]
    return Runtime(
        summary_agent=lambda: SummaryAgent(DurableChat(model, redactor), decorators=decorators),
        chat=model,
        render=lambda summary: {"items": len(summary.action_items)},
        describe=str,
        redactor=redactor,
        spending=lambda run: {"requests": len(run.responses)},
    )


async def _durable(transcripts: Sequence[str], database: Path, *, queued: bool = False) -> float:
    """Wall seconds from the first submission to the last outcome (the launch not counted)."""
    runtime = bench_runtime()
    settings = EngineSettings(f"sqlite:///{database}", "bench", CONCURRENCY, shared_queue=queued)
    engine = await Engine.launch(settings, runtime)
    try:
        started = time.perf_counter()
        ids: dict[str, str] = {}
        for text in transcripts:
            workflow = f"bench-{database.stem}-{len(ids)}"
            ids[workflow] = text
            await engine.submit(workflow, text)
        await _all_done(engine, ids)
        seconds = time.perf_counter() - started
    finally:
        engine.shutdown()
    return seconds


async def durable_overhead(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """The same batch (``sizes.batch`` two-request summaries, ``CONCURRENCY`` at once) in plain asyncio and
    on DBOS with SQLite, each transcript started in the process (what ``batch`` does on SQLite) and, side
    by side, put on DBOS's queue (as on Postgres, and as ``batch`` did on SQLite before); wall time (the
    work waits on the model), the launch not counted. Rounds interleave the three."""
    count = sizes.batch
    walls: dict[str, list[float]] = {"plain": [], "here": [], "queued": []}
    cpu: dict[str, list[float]] = {"plain": [], "here": [], "queued": []}
    with tempfile.TemporaryDirectory(prefix="bench-durable-") as folder:
        for round_ in range(sizes.runs + 1):  # the first round warms up
            for variant in walls:
                texts = _transcripts(count, round_)
                started, started_cpu = time.perf_counter(), time.process_time()
                if variant == "plain":
                    await _plain(texts)
                    seconds = time.perf_counter() - started
                else:
                    database = Path(folder) / f"{variant}-{round_}.sqlite"
                    seconds = await _durable(texts, database, queued=variant == "queued")
                if round_:
                    walls[variant].append(seconds)
                    cpu[variant].append(time.process_time() - started_cpu)
    median = {variant: statistics.median(seconds) for variant, seconds in walls.items()}
    timings["durable_overhead"] = {
        **{f"{variant}_wall_s": seconds for variant, seconds in walls.items()},
        **{f"{variant}_cpu_s": seconds for variant, seconds in cpu.items()},
        "transcripts": count,
    }

    def per_transcript(variant: str) -> str:
        wall = (median[variant] - median["plain"]) / count * CONCURRENCY
        cpu_each = (statistics.median(cpu[variant]) - statistics.median(cpu["plain"])) / count
        return f"{wall * 1000:.1f} ms more per transcript in its slot, CPU {cpu_each * 1000:.1f} ms more"

    checks = []
    for variant, how in (("here", "started in the process"), ("queued", "on DBOS's queue")):
        ratios = [d / p for d, p in zip(walls[variant], walls["plain"], strict=True)]
        ratio = median[variant] / median["plain"]
        detail = (
            f"{count} transcripts, {CONCURRENCY} at once, 2 requests of {LATENCY * 1000:.0f} ms each: "
            f"plain asyncio {median['plain']:.2f} s, DBOS on SQLite {how} {median[variant]:.2f} s (wall); "
            f"{per_transcript(variant)} (launch included)"
        )
        checks.append(
            Check(
                f"durable batch ({how}) / plain asyncio, same concurrency",
                ratio,
                "x",
                "report",
                None,
                detail,
                f"{min(ratios):.3f}-{max(ratios):.3f}",
            )
        )
    return checks


# ---------------------------------------------------------------- throughput across processes


class _SlowGateway(OfflineResponsesServer):
    """The offline stand-in, each answer ``LATENCY`` seconds late."""

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        await asyncio.sleep(LATENCY)
        await super()._serve(scope, receive, send)


def _environment(gateway: str) -> dict[str, str]:
    environ = {name: value for name, value in os.environ.items() if not name.startswith("AGENT_")}
    return {
        **environ,
        "AGENT_BASE_URL": gateway,
        "AGENT_API_KEY": "sk-bench",
        "AGENT_MODEL": "offline",
        "AGENT_BATCH_CONCURRENCY": str(CONCURRENCY),
    }


def _command(*argv: str) -> list[str]:
    return [sys.executable, "-m", "adapters.cli", *argv]


def _ready(worker: subprocess.Popen[bytes]) -> None:
    assert worker.stderr is not None
    deadline = time.monotonic() + _PROCESS_TIMEOUT
    seen = b""
    while b"taking transcripts" not in seen:
        assert time.monotonic() < deadline, f"the worker did not start: {seen!r}"
        ready, _, _ = select.select([worker.stderr], [], [], 1.0)
        if ready:
            line = worker.stderr.readline()
            assert line, f"the worker exited: {seen!r}"
            seen += line


def _span_seconds(database: str) -> float:
    """From the first transcript's start to the last one's end, as DBOS recorded them."""
    with psycopg.connect(database, connect_timeout=10) as connection:
        row = connection.execute(
            "SELECT min(started_at_epoch_ms), max(updated_at) FROM dbos.workflow_status "
            "WHERE queue_name = 'meeting-agents-transcripts'"
        ).fetchone()
    assert row is not None
    return float(row[1] - row[0]) / 1000


def _throughput(server: str, gateway: str, folder: Path, workers: int, name: str) -> float:
    from tests.support.postgres import create_database

    database = create_database(server, name)
    environ = _environment(gateway)
    helpers = [
        subprocess.Popen(  # noqa: S603  # our own command
            _command("worker", "--db", database, "--id", f"{name}-worker-{n}"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=environ,
        )
        for n in range(workers - 1)
    ]
    try:
        for helper in helpers:
            _ready(helper)
        done = subprocess.run(  # noqa: S603  # our own command
            _command("batch", str(folder), "--out", str(folder.parent / f"out-{name}"), "--db", database),
            capture_output=True,
            env=environ,
            timeout=_PROCESS_TIMEOUT,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
    finally:
        for helper in helpers:
            helper.terminate()
            try:
                helper.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                helper.kill()  # a worker that did not stop on SIGTERM is not left running
                helper.communicate(timeout=60)
    return len(list(folder.iterdir())) / _span_seconds(database)


async def worker_throughput(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Transcripts per second on a shared Postgres, the batch alone and with one worker beside it."""
    from tests.support.postgres import postgres_server

    names = itertools.count()
    rates: dict[int, float] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-workers-") as root,
        postgres_server() as server,
        _SlowGateway() as gateway,
    ):
        folder = Path(root) / "in"
        folder.mkdir()
        for number, text in enumerate(_transcripts(sizes.batch * 2, 0)):
            (folder / f"meeting-{number}.txt").write_text(text, encoding="utf-8")
        for workers in (1, 2):
            rates[workers] = await asyncio.to_thread(
                _throughput, server, gateway.base_url, folder, workers, f"run_{next(names)}"
            )
    timings["durable_throughput"] = {f"{n}_processes_per_s": rate for n, rate in rates.items()}
    detail = (
        f"{sizes.batch * 2} transcripts, {CONCURRENCY} at once per process, requests {LATENCY * 1000:.0f} ms "
        f"(offline stand-in, delayed): 1 process {rates[1]:.1f}/s, 2 processes {rates[2]:.1f}/s, "
        "from DBOS's own start and end times"
    )
    return [
        Check(
            "durable throughput, 2 processes / 1 (transcripts per second)",
            rates[2] / rates[1],
            "x",
            "report",
            None,
            detail,
        )
    ]


# ---------------------------------------------------------------- python -m benchmarks.durable


async def _command_batches(count: int, gateway: str, folder: Path) -> dict[str, Callable[[], Awaitable[int]]]:
    """The same batch as the ``batch`` command builds it (the container's OpenAI SDK adapters, telemetry
    off, ``summary_json``) against the offline stand-in, in plain asyncio and through
    :func:`~adapters.durable_composition.durable_engine` on SQLite."""
    from dependency_injector import providers

    from adapters.container import Container
    from adapters.durable_composition import durable_engine
    from adapters.settings import resolve_settings

    agent = {"base_url": gateway, "api_key": "sk-bench", "model": "offline", "telemetry": False}
    settings = resolve_settings(config={"agent": {**agent, "batch_concurrency": CONCURRENCY}})
    rounds = itertools.count(1)

    async def plain() -> int:
        container = Container()
        container.settings.override(providers.Object(settings))
        slots = asyncio.Semaphore(CONCURRENCY)

        async def one(text: str) -> MeetingSummary:
            async with slots:
                summary: MeetingSummary = await container.summary_agent().summarize(text)
                return summary

        async with container:
            summaries = await asyncio.gather(*(one(text) for text in _transcripts(count, next(rounds))))
        assert all(summary.complete for summary in summaries)
        return count

    async def durable() -> int:
        round_ = next(rounds)
        database = f"sqlite:///{folder / f'command-{round_}.sqlite'}"
        async with durable_engine(settings, database, "bench") as engine:
            ids = {f"command-{round_}-{n}": text for n, text in enumerate(_transcripts(count, round_))}
            for workflow, text in ids.items():
                await engine.submit(workflow, text)
            await _all_done(engine, ids)
        return count

    await plain()  # imports, first calls
    await durable()
    return {"plain asyncio": plain, "DBOS on SQLite": durable}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.durable", description=__doc__)
    parser.add_argument("--runs", type=int, default=Sizes().runs, help="timed rounds (medians)")
    parser.add_argument("--batch", type=int, default=Sizes().batch, help="transcripts a batch")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead: one batch on DBOS with SQLite under cProfile in every thread, CPU split by owner",
    )
    parser.add_argument(
        "--command",
        action="store_true",
        help="with --profile: the batch as the command builds it (container, OpenAI SDK, offline stand-in)",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="instead: rounds of a plain and a DBOS batch, the DBOS one's CPU split by timing wrappers "
        "on DBOS's database calls and SQLAlchemy's steps (no profiler)",
    )
    parser.add_argument("--sort", default="tottime", help="pstats sort key for --profile")
    parser.add_argument("--top", type=int, default=40, help="functions --profile lists")
    parser.add_argument("--workers", action="store_true", help="also throughput with 1 and 2 processes")
    return parser


async def _profile(count: int, sort: str, top: int, *, command: bool) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-durable-") as folder:
        if command:
            with _SlowGateway() as gateway:
                runs = await _command_batches(count, gateway.base_url, Path(folder))
                return await profile_batch(runs, sort=sort, top=top)
        await _plain(_transcripts(count, 0))
        await _durable(_transcripts(count, 0), Path(folder) / "warm.sqlite")  # imports, first calls

        async def plain() -> int:
            await _plain(_transcripts(count, 1))
            return count

        async def durable() -> int:
            await _durable(_transcripts(count, 1), Path(folder) / "profiled.sqlite")
            return count

        runs = {"plain asyncio": plain, "DBOS on SQLite": durable}
        return await profile_batch(runs, sort=sort, top=top)


async def _split(count: int, runs: int) -> str:
    rounds = itertools.count(1)
    with tempfile.TemporaryDirectory(prefix="bench-durable-") as folder:
        await _plain(_transcripts(count, 0))
        await _durable(_transcripts(count, 0), Path(folder) / "warm.sqlite")  # imports, first calls

        async def plain() -> int:
            await _plain(_transcripts(count, next(rounds)))
            return count

        async def durable() -> int:
            round_ = next(rounds)
            await _durable(_transcripts(count, round_), Path(folder) / f"split-{round_}.sqlite")
            return count

        return await split_batch(plain, durable, runs)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sizes = Sizes(runs=args.runs, batch=args.batch)
    if args.split:
        print(asyncio.run(_split(sizes.batch, sizes.runs)))
        return 0
    if args.profile:
        print(asyncio.run(_profile(sizes.batch, args.sort, args.top, command=args.command)))
        return 0

    async def measure() -> list[Check]:
        timings: dict[str, Any] = {}
        checks = await durable_overhead(sizes, timings)
        if args.workers:
            checks += await worker_throughput(sizes, timings)
        return checks

    print(render_table(asyncio.run(measure())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
