"""Where a durable batch's CPU goes: cProfile in every thread, split by owner.

``python -m benchmarks.durable --profile`` runs one batch on DBOS with SQLite (as the benchmark does)
under a profiler in every thread the process runs (DBOS checkpoints from its own thread pool), each
timed by its thread's CPU clock, so waiting (on the model, on a lock, in ``select``) counts for
nothing and what is left is the CPU the batch costs.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from benchmarks.profile import shares_by_owner

__all__ = ["OWNERS", "cpu_shares", "profiled_threads", "render_cpu_shares"]

OWNERS: Final = (
    "DBOS",
    "SQLAlchemy + sqlite3",
    "OpenAI SDK",
    "OpenTelemetry",
    "event loop",
    "thread hand-offs",
    "ours: scrubbing (Redactor)",
    "ours: step and workflow values (pickle, base64)",
    "ours: cattrs",
    "ours: the durable adapter (engine, steps)",
    "ours: the pipeline (application, domain, adapters)",
    "harness",
    "other",
)
_Func = tuple[str, int, str]
_ROOT: Final = Path(__file__).resolve().parents[1]
_SDK: Final = frozenset({"openai", "pydantic", "pydantic_core", "httpx", "httpcore", "h11", "anyio"})
_THREADS: Final = frozenset({"threading.py", "queue.py", "thread.py", "_base.py"})
_SCRUBBING: Final = frozenset({"scrubbed", "_scrub", "_gather", "to_store", "_step_answer"})
_SERIALIZER: Final = frozenset({"serialize", "deserialize", "_mapping_proxy", "read_only"})


def _owner(func: _Func) -> str | None:
    """Whose ``func`` is by where it is defined; None for the standard library and builtins, whose
    time goes to their callers (``sqlite3``'s C methods are SQLite's, whoever calls them)."""
    filename, _, name = func
    if filename == "~":
        if "sqlite3" in name:
            return "SQLAlchemy + sqlite3"
        return "OpenAI SDK" if "pydantic_core" in name else None
    parts = Path(filename).parts
    if "site-packages" in parts:
        package = parts[parts.index("site-packages") + 1].removesuffix(".py")
        if package == "dbos":
            return "DBOS"
        if package == "sqlalchemy":
            return "SQLAlchemy + sqlite3"
        if package in _SDK:
            return "OpenAI SDK"
        if package.startswith("opentelemetry"):
            return "OpenTelemetry"
        if package == "cattrs":
            return "ours: cattrs"
        return "other"
    if "sqlite3" in parts:
        return "SQLAlchemy + sqlite3"
    if "asyncio" in parts:
        return "event loop"
    if parts and (parts[-1] in _THREADS and ("concurrent" in parts or parts[-1] != "_base.py")):
        return "thread hand-offs"
    path = Path(filename)
    if not path.is_absolute() or not path.resolve().is_relative_to(_ROOT):
        return None
    relative = path.resolve().relative_to(_ROOT)
    if relative.parts[0] == "benchmarks":
        return "harness"
    if relative.parts[0] not in {"adapters", "application", "domain"}:
        return "other"
    if relative.as_posix() == "adapters/redaction.py" or name in _SCRUBBING:
        return "ours: scrubbing (Redactor)"
    if relative.as_posix() == "adapters/durable/engine.py" and name in _SERIALIZER:
        return "ours: step and workflow values (pickle, base64)"
    if relative.parts[:2] == ("adapters", "durable"):
        return "ours: the durable adapter (engine, steps)"
    return "ours: the pipeline (application, domain, adapters)"


def cpu_shares(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of own time per owner (:data:`OWNERS`); a standard-library or builtin function's own
    time goes to its callers, in proportion to the time each call edge took."""
    return shares_by_owner(stats, _owner, OWNERS)


def render_cpu_shares(seconds: dict[str, float], transcripts: int) -> str:
    """One line per owner: its share, and its CPU per transcript."""
    total = sum(seconds.values()) or 1.0
    lines = [f"CPU under the profiler, {total * 1000 / transcripts:.1f} ms a transcript"]
    lines += [
        f"  {name:<52} {value / total:6.1%}  {value * 1000 / transcripts:6.2f} ms a transcript"
        for name, value in sorted(seconds.items(), key=lambda item: -item[1])
        if abs(value) * 1000 / transcripts >= 0.005
    ]
    return "\n".join(lines)


class _Snapshot:
    """What ``pstats.Stats`` reads of a profiler: its stats as they stand, the profiler left running."""

    def __init__(self, profiler: cProfile.Profile) -> None:
        # Not create_stats(): its disable() would close the thread's unfinished calls (a worker blocked
        # in its queue's get) on the clock of the thread calling it, here another thread's.
        profiler.snapshot_stats()
        self.stats = profiler.stats

    def create_stats(self) -> None:
        """Already made."""


@contextmanager
def profiled_threads() -> Iterator[list[cProfile.Profile]]:
    """A CPU-clock profiler in this thread and in every thread started inside the block.

    ``threading.setprofile`` runs a hook at each new thread's first call; the hook starts a profiler
    there, which takes the thread's profile function over from it. Threads already running are not
    seen, and a thread started inside the block that outlives it goes on feeding its profiler (only
    its own thread can stop it); its calls still open at the end are not counted.
    """
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start(*_: Any) -> None:
        profiler = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profiler)
        profiler.enable()

    threading.setprofile(start)
    start()
    try:
        yield profiles
    finally:
        threading.setprofile(None)
        profiles[0].disable()  # this thread's


def _stats(profiles: list[cProfile.Profile], stream: io.StringIO) -> pstats.Stats:
    stats = pstats.Stats(_Snapshot(profiles[0]), stream=stream)  # type: ignore[arg-type]  # as a Profile
    for profiler in profiles[1:]:
        stats.add(_Snapshot(profiler))  # type: ignore[arg-type]
    return stats


async def profile_batch(runs: Mapping[str, Callable[[], Awaitable[int]]], *, sort: str, top: int) -> str:
    """Each of ``runs`` (each returns how many transcripts it ran) under :func:`profiled_threads`:
    its split by owner; then what the last costs more than the first, owner by owner; then the last
    one's ``top`` functions by ``sort``."""
    report = io.StringIO()
    shares: dict[str, dict[str, float]] = {}
    transcripts = 1
    stats = None
    for name, run in runs.items():
        with profiled_threads() as profiles:
            transcripts = await run()
        stats = _stats(profiles, report)
        shares[name] = cpu_shares(stats)
        report.write(f"{name}: " + render_cpu_shares(shares[name], transcripts) + "\n\n")
    first, *_, last = shares
    more = {owner: shares[last][owner] - shares[first][owner] for owner in OWNERS}
    report.write(f"{last} over {first}: " + render_cpu_shares(more, transcripts) + "\n\n")
    assert stats is not None
    stats.sort_stats(sort).print_stats(top)
    return report.getvalue()
