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
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from benchmarks.profile import shares_by_owner

__all__ = ["OWNERS", "cpu_shares", "profiled_threads", "render_cpu_shares", "split_batch", "timing_probes"]

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
_SCRUBBING: Final = frozenset({"scrubbed", "to_store", "_step_answer"})
# The one walk over values (application/scrubbing.py) and the redactor it calls.
_SCRUBBING_MODULES: Final = frozenset({"adapters/redaction.py", "application/scrubbing.py"})
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
    if relative.as_posix() in _SCRUBBING_MODULES or name in _SCRUBBING:
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


# ---------------------------------------------------------------- the split without a profiler

_DATABASE_CALLS: Final = "DBOS's database calls (a step's check and record, a workflow's start and end)"
_STATEMENTS: Final = "  SQLAlchemy executing DBOS's built statements"
_FETCH: Final = "  fetching rows"
_CHECKOUT: Final = "  pool checkout (Engine.connect)"
_CHECKIN: Final = "  connection close and pool checkin"
_COMMIT: Final = "  sqlite3 commit"
_BUILDING: Final = "  DBOS building its statements, and its own code in those calls (the rest of them)"
_LAUNCH: Final = "DBOS.launch (a new database each round: its migrations)"
_OURS_SERIALIZER: Final = "ours: the serializer (scrubbing, pickle, base64)"
_REST: Final = "the rest: thread hand-offs, event loop, DBOS's step and workflow code, its pollers"
_EXECUTE: Final = "    sqlite3 executing"
_CACHE_KEY: Final = "    cache key, compiled-cache lookup"
_RESULT: Final = "    result set-up"
# Where each function is timed: (module, the class defining it, function, label, classmethod). The
# labels indented are timed only inside one of DBOS's database calls (the first group), so they add up
# within it.
_PROBES: Final = (
    *(
        ("dbos._sys_db", "SystemDatabase", name, _DATABASE_CALLS, False)
        for name in (
            "check_operation_execution",
            "record_operation_result",
            "init_workflow",
            "update_workflow_outcome",
            "record_get_result",
        )
    ),
    ("sqlalchemy.engine.base", "Connection", "_execute_clauseelement", _STATEMENTS, False),
    (
        "sqlalchemy.sql.elements",
        "ClauseElement",
        "_compile_w_cache",
        "    cache key, compiled-cache lookup",
        False,
    ),
    (
        "sqlalchemy.engine.default",
        "DefaultExecutionContext",
        "_init_compiled",
        "    parameters (bind processing)",
        True,
    ),
    ("sqlalchemy.engine.default", "DefaultDialect", "do_execute", _EXECUTE, False),
    (
        "sqlalchemy.engine.default",
        "DefaultExecutionContext",
        "_setup_result_proxy",
        "    result set-up",
        False,
    ),
    *(
        ("sqlalchemy.engine.result", "Result", name, _FETCH, False)
        for name in ("all", "fetchall", "fetchone", "first", "one", "scalar")
    ),
    ("sqlalchemy.engine.base", "Engine", "connect", _CHECKOUT, False),
    ("sqlalchemy.engine.base", "Connection", "close", _CHECKIN, False),
    ("sqlalchemy.engine.default", "DefaultDialect", "do_commit", _COMMIT, False),
    ("dbos._dbos", "DBOS", "launch", _LAUNCH, True),
    ("adapters.durable.engine", "_RedactingSerializer", "serialize", _OURS_SERIALIZER, False),
    ("adapters.durable.engine", "_RedactingSerializer", "deserialize", _OURS_SERIALIZER, False),
)


class _Probes:
    """CPU nanoseconds (each thread's own clock) and calls per label, while :func:`timing_probes` is on."""

    def __init__(self) -> None:
        self.nanoseconds: dict[str, int] = dict.fromkeys((probe[3] for probe in _PROBES), 0)
        self.calls: dict[str, int] = dict.fromkeys(self.nanoseconds, 0)
        self.inside = threading.local()
        self.lock = threading.Lock()

    def clear(self) -> None:
        for label in self.nanoseconds:
            self.nanoseconds[label] = self.calls[label] = 0


@contextmanager
def timing_probes() -> Iterator[_Probes]:
    """Every function of :data:`_PROBES` wrapped to time itself on its thread's CPU clock; put back after.

    A wrapper costs a microsecond or so a call, against the profiler's cost on every call of every
    function: the figures are the code's own, in milliseconds that add up.
    """
    import importlib

    probes = _Probes()
    originals: list[tuple[type, str, Any]] = []
    for module, class_name, name, label, is_classmethod in _PROBES:
        owner = getattr(importlib.import_module(module), class_name)
        original = owner.__dict__[name]
        function = original.__func__ if is_classmethod else original
        originals.append((owner, name, original))
        setattr(owner, name, _timed(function, label, probes, is_classmethod))
    try:
        yield probes
    finally:
        for owner, name, original in reversed(originals):
            setattr(owner, name, original)


def _timed(function: Callable[..., Any], label: str, probes: _Probes, is_classmethod: bool) -> Any:
    nested = label.startswith(" ")
    outer = label == _DATABASE_CALLS

    def timed(*args: Any, **kwargs: Any) -> Any:
        inside = getattr(probes.inside, "depth", 0)
        if nested and not inside:
            return function(*args, **kwargs)
        if outer:
            probes.inside.depth = inside + 1
        started = time.thread_time_ns()
        try:
            return function(*args, **kwargs)
        finally:
            spent = time.thread_time_ns() - started
            with probes.lock:
                probes.nanoseconds[label] += spent
                probes.calls[label] += 1
            if outer:
                probes.inside.depth = inside

    return classmethod(timed) if is_classmethod else timed


async def split_batch(
    plain: Callable[[], Awaitable[int]], durable: Callable[[], Awaitable[int]], rounds: int
) -> str:
    """``plain`` and ``durable`` (each returns how many transcripts it ran) in interleaved rounds, the
    process's CPU of each, and the durable one's split between the probes: medians of ``rounds``."""
    over: list[float] = []
    splits: list[dict[str, float]] = []
    statements: list[float] = []
    commits: list[float] = []
    with timing_probes() as probes:
        for _ in range(rounds):
            started = time.process_time()
            await plain()
            plain_seconds = time.process_time() - started
            probes.clear()
            started = time.process_time()
            transcripts = await durable()
            extra = time.process_time() - started - plain_seconds
            over.append(extra * 1000 / transcripts)
            split = {label: ns / 1e6 / transcripts for label, ns in probes.nanoseconds.items()}
            inner = sum(value for label, value in split.items() if label.startswith("  ") and label[2] != " ")
            split[_BUILDING] = split[_DATABASE_CALLS] - inner
            split[_REST] = extra * 1000 / transcripts - sum(
                split[label] for label in (_DATABASE_CALLS, _LAUNCH, _OURS_SERIALIZER)
            )
            splits.append(split)
            statements.append(probes.calls[_EXECUTE] / transcripts)
            commits.append(probes.calls[_COMMIT] / transcripts)
    median = statistics.median(over)
    lines = [
        f"DBOS on SQLite over plain asyncio: {median:.1f} ms of CPU a transcript (the process's, medians of "
        f"{rounds} rounds: {', '.join(f'{value:.1f}' for value in over)}); in DBOS's database calls "
        f"{statistics.median(statements):.1f} statements and {statistics.median(commits):.1f} commits a "
        "transcript"
    ]
    order = [_DATABASE_CALLS, _BUILDING, _STATEMENTS]
    order += [label for label in probes.nanoseconds if label.startswith("    ")]
    order += [_FETCH, _CHECKOUT, _CHECKIN, _COMMIT, _LAUNCH, _OURS_SERIALIZER, _REST]
    for label in order:
        value = statistics.median(split[label] for split in splits)
        lines.append(f"  {label:<84} {value / median:6.1%}  {value:6.2f} ms a transcript")
    return "\n".join(lines)
