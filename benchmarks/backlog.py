"""How soon the batch command handles the first result of a long backlog, and what each poll asks about."""

from __future__ import annotations

import contextlib
import hashlib
import io
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from adapters.cli import batch
from adapters.cli.batch import Budget, Source
from adapters.cli.console import Console
from adapters.durable import Engine, EngineSettings, Outcome
from adapters.settings import Settings, resolve_settings
from benchmarks.durable import CONCURRENCY, LATENCY, bench_runtime
from benchmarks.harness import Check, Sizes

__all__ = ["backlog_first_result"]


class _FirstResultError(Exception):
    """Raised out of the batch's progress once its first transcript is reported done."""


class _Progress(io.StringIO):
    def write(self, text: str) -> int:
        if text.startswith("done "):
            raise _FirstResultError
        return super().write(text)


class _Counted(Engine):
    """The engine, noting the most transcripts one poll of what ended asked about."""

    most_polled = 0

    async def take_finished(self) -> dict[str, Outcome]:
        _Counted.most_polled = max(_Counted.most_polled, len(self._unfinished))
        return await super().take_finished()


@contextlib.asynccontextmanager
async def _queued(settings: Settings, url: str, executor_id: str) -> AsyncIterator[Engine]:
    """A launched engine that queues every transcript (as on Postgres) on a model of ``LATENCY`` s."""
    runtime = bench_runtime()
    engine = await _Counted.launch(EngineSettings(url, executor_id, CONCURRENCY, shared_queue=True), runtime)
    try:
        yield engine
    finally:
        engine.shutdown()


async def _first_result(folder: Path, count: int, page: int) -> tuple[float, int]:
    """Seconds from the batch's start to its first result handled, and the most one poll asked about."""
    sources = []
    for number in range(count):
        text = f"Ana: We decided to ship plan {number}.\nBen: I will update the changelog by Thursday.\n"
        sources.append(
            Source(f"in/{number}.txt", str(number), text, hashlib.sha256(text.encode()).hexdigest())
        )
    settings = resolve_settings(
        config={"agent": {"base_url": "http://127.0.0.1:9", "api_key": "sk-bench", "telemetry": False}}
    )
    console = Console(io.StringIO(), _Progress(), verbose=False, chatty=False, environ={})
    saved: dict[str, Any] = {"page": batch._PAGE, "engine": batch.durable_engine}
    batch._PAGE = page  # type: ignore[misc]  # the old behaviour, side by side: every transcript at once
    batch.durable_engine = _queued  # type: ignore[assignment]  # the model of LATENCY s, no gateway
    _Counted.most_polled = 0
    started = time.perf_counter()
    try:
        with contextlib.suppress(_FirstResultError):
            await batch._batch(
                sources, folder, f"sqlite:///{folder / 'runs.sqlite'}", "bench", settings, console, Budget()
            )
        seconds = time.perf_counter() - started
    finally:
        batch._PAGE = saved["page"]  # type: ignore[misc]
        batch.durable_engine = saved["engine"]
    return seconds, _Counted.most_polled


async def backlog_first_result(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """``sizes.backlog`` tiny transcripts queued on SQLite (as on Postgres), two requests of ``LATENCY`` s
    each: seconds to the first result handled, in pages (the batch) and all at once (side by side), and
    the most transcripts one poll of what ended asked about."""
    count = sizes.backlog
    with tempfile.TemporaryDirectory(prefix="bench-backlog-") as folder:
        for variant in ("paged", "whole"):
            (Path(folder) / variant).mkdir()
        paged, paged_polled = await _first_result(Path(folder) / "paged", count, batch._PAGE)
        whole, whole_polled = await _first_result(Path(folder) / "whole", count, count)
    timings["backlog_first_result"] = {
        "transcripts": count,
        "paged_s": paged,
        "all_at_once_s": whole,
        "paged_most_polled": paged_polled,
        "all_at_once_most_polled": whole_polled,
    }
    detail = (
        f"{count} transcripts, 2 requests of {LATENCY * 1000:.0f} ms each, {CONCURRENCY} at once, queued on "
        f"SQLite: in pages of {batch._PAGE} {paged:.2f} s (a poll asked about at most {paged_polled}); "
        f"all at once {whole:.2f} s (at most {whole_polled}); the process's start and the reading of files "
        "not counted"
    )
    return [
        Check("batch: first result of a long backlog (pages)", paged, "s", "< 5", paged < 5, detail),
        Check("batch: transcripts one poll asks about", float(paged_polled), "ids", "report", None, detail),
    ]
