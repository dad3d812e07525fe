"""``meeting-agents batch`` and ``worker``: many transcripts as durable DBOS workflows (the durable extra)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import glob
import hashlib
import json
import os
import signal
import socket
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import attrs

from adapters.cli.display.console import Console
from adapters.cli.exit_codes import EXIT_INCOMPLETE, EXIT_MODEL_FAILED, EXIT_OK, EXIT_USAGE
from adapters.cli.files import STDIN, AtomicOutput, InputError, long_transcripts, read_text
from adapters.cli.meetings.transcripts import imported
from adapters.cli.parser import PROG
from adapters.settings import ConfigurationError, Settings
from application.meetings.summary import PROMPT_VERSION, summary_instructions, summary_tool_specs
from application.meetings.transcripts import TranscriptFormat

if TYPE_CHECKING:
    from adapters.durable import Outcome

__all__ = [
    "EXTENSIONS",
    "INDEX",
    "Source",
    "batch_command",
    "collect_sources",
    "prepare_output",
    "worker_command",
]

EXTENSIONS: Final = (".txt", ".md", ".vtt", ".srt", ".json")
INDEX: Final = "index.jsonl"
DEFAULT_DATABASE: Final = ".runs.sqlite"
NOT_STARTED: Final = "not_started"
UNFINISHED: Final = "unfinished"
"""An index line's status when the batch stopped (Ctrl-C, a lost database, a bug) before its meeting ended."""
# Global options that mean nothing to a batch or a worker: refused rather than silently ignored.
_NOT_HONOURED: Final = {
    "stream": "--stream (a batch writes each summary whole into --out)",
    "trace": "--trace (a batch's spans go to the host's tracer provider: see docs/batches.md)",
}
# With a budget, at most this many transcripts per agent.batch_concurrency are queued at a time.
_BUDGET_WINDOW: Final = 2
# Without one, at most this many are submitted and not yet heard of: a long backlog is queued in pages
# while the first results are handled, and a poll of what ended asks about a page, not the backlog.
_PAGE: Final = 512
# How many of a key's first characters --retry takes for the key.
_KEY_PREFIX: Final = 8
# How often the batch reads which of its workflows have ended (one query for all of them).
_POLL_SECONDS: Final = 0.25
# Polls that hear of nothing space out, doubling up to this: a backlog waiting on slow requests costs
# a query a second, not four (on SQLite the batch hears of each end at once and never polls).
_QUIET_POLL_SECONDS: Final = 1.0

Endpoint = Callable[[Settings, Console], AbstractContextManager[Settings]]


@attrs.frozen
class Source:
    """One transcript of the batch: where it came from, its output name, its text and its sha256, and
    the format it was read in (checked before any request)."""

    shown: str
    name: str
    text: str = attrs.field(repr=False)
    sha256: str
    input_format: TranscriptFormat = "text"
    unnamed_speakers: tuple[str, ...] = ()
    """Its speakers that are diarization labels no --speaker named."""
    key: str = attrs.field(default=attrs.Factory(lambda source: source.sha256, takes_self=True))
    """Its workflow's id: a hash of the text, of how it is read (--input-format, --speaker) and of
    :func:`meeting_basis` (the same file read another way, or summarized another way, is another
    meeting's work)."""


def meeting_basis(settings: Settings) -> str:
    """Everything besides the transcript that changes a meeting's summary, as one canonical text: the
    prompt's version, the model (and its fallbacks), the instructions, the tools' definitions, the
    language, how a long meeting is cut, and the settings that change what the model is asked or may
    do. A batch run with another of these is another meeting's work, keyed apart."""
    agent = settings.agent
    basis = {
        "prompt_version": PROMPT_VERSION,
        "model": agent.model,
        "fallbacks": [target.model for target in agent.fallbacks],
        "instructions": summary_instructions(agent.summary_language),
        "tools": [
            {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
            for spec in summary_tool_specs()
        ],
        "language": agent.summary_language,
        "chunk_chars": agent.chunk_chars,
        "reasoning_effort": agent.reasoning_effort,
        "max_output_tokens": agent.max_output_tokens,
        "max_tool_iterations": agent.max_tool_iterations,
        "max_output_retries": agent.max_output_retries,
        "detailed_tool_errors": agent.detailed_tool_errors,
        "offline_scenario": agent.offline_scenario,
    }
    return json.dumps(basis, sort_keys=True, ensure_ascii=False, default=_plain)


def _plain(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _paths_from(arguments: Sequence[str], stdin: BinaryIO) -> Iterator[str]:
    for argument in arguments:
        if argument != STDIN:
            yield argument
            continue
        try:
            listed = stdin.read().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"PATH (stdin): cannot read the list of paths ({type(exc).__name__})") from None
        yield from (line.strip() for line in listed.splitlines() if line.strip())


def _files(argument: str) -> list[Path]:
    path = Path(argument)
    if path.is_dir():
        try:
            files = sorted(p for p in path.iterdir() if p.suffix.lower() in EXTENSIONS and p.is_file())
        except OSError as exc:
            raise InputError(
                f"PATH {argument!r}: cannot be read ({exc.strerror or type(exc).__name__})"
            ) from None
        if not files:
            raise InputError(
                f"PATH {argument!r}: a folder with no transcript (*.txt, *.md, *.vtt, *.srt, *.json)"
            )
        return files
    if not path.exists():
        raise InputError(f"PATH {argument!r}: no such file or folder")
    return [path]


def collect_sources(
    arguments: Sequence[str],
    stdin: BinaryIO,
    reading: argparse.Namespace | None = None,
    *,
    limit: int | None = None,
    basis: str = "",
) -> list[Source]:
    """Every transcript the arguments name, in order, each file once; raises :class:`InputError`.

    A folder gives its transcripts (``*.txt``, ``*.md``, ``*.vtt``, ``*.srt``, ``*.json``; not its
    subfolders), sorted; ``-`` reads a list of paths from stdin, one a line. Output names are the
    files' stems, numbered when two differ. Each is read as ``reading`` (``--input-format``,
    ``--speaker``) says, or as its content shows: a file that does not parse is refused here. Each is
    read as ``summarize`` reads its one (:func:`~adapters.cli.files.read_text`): UTF-8, and no more than
    one byte past ``limit`` (``agent.max_transcript_bytes``), so a larger file, ``/dev/zero`` or an
    endless pipe is refused without being read whole. Each is keyed by its text, how it is read and
    ``basis`` (:func:`meeting_basis`).
    """
    seen: set[Path] = set()
    sources: list[Source] = []
    names: set[str] = set()
    paths = list(_paths_from(arguments, stdin))
    if not paths:
        raise InputError("PATH (stdin): the list of paths is empty")
    for argument in paths:
        for file in _files(argument):
            real = file.resolve()
            if real in seen:
                continue
            seen.add(real)
            text = read_text(str(file), "PATH", stdin, limit=limit)
            if not text.strip():
                raise InputError(f"PATH {str(file)!r}: empty; there is nothing to summarize")
            name, number = file.stem, 1
            while name in names or name == Path(INDEX).stem:
                number += 1
                name = f"{file.stem}-{number}"
            names.add(name)
            sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
            options = reading or argparse.Namespace(input_format=None, speakers=[])
            transcript = imported(text, f"PATH {str(file)!r}", options, name=file.name, console=None)
            how = json.dumps([options.input_format, sorted(options.speakers), basis]).encode("utf-8")
            key = hashlib.sha256(text.encode("utf-8") + b"\0" + how).hexdigest()
            sources.append(
                Source(str(file), name, text, sha256, transcript.format, transcript.unnamed_speakers, key)
            )
    return sources


def prepare_output(folder: Path) -> Path:
    """``folder``, created if need be and checked writable, made absolute; raises :class:`InputError`."""
    where = f"--out {str(folder)!r}"
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{where}: not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor, probe = tempfile.mkstemp(dir=folder, prefix=".probe.", suffix=".tmp")
        os.close(descriptor)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{where}: cannot be written ({exc.strerror or type(exc).__name__})") from None
    return folder.resolve()


class _Progress:
    """Progress on stderr: a redrawn bar on a terminal, else one line per finished transcript."""

    def __init__(self, console: Console, total: int, *, terminal: bool, totals: Totals) -> None:
        self._console = console
        self._total = total
        self._terminal = terminal
        self._totals = totals
        self._started = time.monotonic()
        self.counts: dict[str, int] = {}

    def finished(self, source: Source, outcome: Outcome, output: str | None) -> None:
        self.counts[outcome.status] = self.counts.get(outcome.status, 0) + 1
        if self._terminal:
            self._console.status(self.bar())
            if outcome.error is not None:
                self._console.line(f"{outcome.status} {source.shown}: {outcome.error}")
            return
        where = f" -> {output}" if output is not None else ""
        why = f": {outcome.error}" if outcome.error is not None else ""
        self._console.line(f"{outcome.status} {source.shown}{where}{why} ({self.done}/{self._total})")

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def bar(self, width: int = 24) -> str:
        done = self.done
        filled = width * done // self._total if self._total else width
        elapsed = max(time.monotonic() - self._started, 1e-6)
        rate = done / elapsed
        left = self._total - done
        eta = f"ETA {left / rate:.0f} s" if rate > 0 and left else ("done" if not left else "ETA -")
        counts = ", ".join(f"{count} {status}" for status, count in sorted(self.counts.items()))
        spent = f"{self._totals.tokens:,} tokens, {self._totals.cost()}"
        bar = "#" * filled + "." * (width - filled)
        return f"[{bar}] {done}/{self._total} ({counts}) {rate:.1f}/s {eta}; {spent}"

    def summary(self) -> str:
        counts = ", ".join(f"{count} {status}" for status, count in sorted(self.counts.items()))
        return f"{self._total} transcripts: {counts or 'none finished'}"

    def close(self) -> None:
        if self._terminal:
            self._console.clear_status()


def _write_summary(folder: Path, source: Source, outcome: Outcome) -> str | None:
    """``DIR/<name>.json`` for a summarized transcript, atomically; its name, or None when there is none."""
    if outcome.summary is None:
        return None
    target = folder / f"{source.name}.json"
    document = {**outcome.summary, "source": source.shown, "sha256": source.sha256}
    with AtomicOutput.open(target) as output:
        output.commit(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    return target.name


def _remove_leftovers(folder: Path, sources: Sequence[Source]) -> None:
    """The temporary files of a run killed while writing (the summaries themselves are whole or absent)."""
    for target in [f"{source.name}.json" for source in sources] + [INDEX]:
        for leftover in folder.glob(f".{glob.escape(target)}.*.tmp"):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _index_lines(sources: Sequence[Source], outcomes: dict[str, Outcome]) -> list[dict[str, Any]]:
    """One line per transcript, as ``index.jsonl`` holds them and ``--format json`` lists them."""
    lines = []
    for source in sources:
        outcome = outcomes.get(source.key)
        line: dict[str, Any] = {
            "source": source.shown,
            "sha256": source.sha256,
            "key": source.key,
            "status": outcome.status if outcome is not None else UNFINISHED,
        }
        if outcome is not None and outcome.summary is not None:
            line["output"] = f"{source.name}.json"
        if outcome is not None and outcome.error is not None:
            line["error"] = outcome.error
        if outcome is not None and outcome.usage is not None:
            line["usage"] = dict(outcome.usage)
        lines.append(line)
    return lines


def _write_index(folder: Path, sources: Sequence[Source], outcomes: dict[str, Outcome]) -> None:
    lines = [json.dumps(line, ensure_ascii=False) + "\n" for line in _index_lines(sources, outcomes)]
    with AtomicOutput.open(folder / INDEX) as output:
        output.commit("".join(lines))


def _exit_code(outcomes: dict[str, Outcome]) -> int:
    statuses = {outcome.status for outcome in outcomes.values()}
    if statuses & {"failed", "error"}:
        return EXIT_MODEL_FAILED
    if statuses & {"incomplete", NOT_STARTED}:
        return EXIT_INCOMPLETE
    return EXIT_OK


def _executor_id(args: argparse.Namespace, role: str) -> str:
    return str(args.id) if args.id else f"{role}@{socket.gethostname()}"


def _durable() -> Any:
    """The durable adapter, or a ConfigurationError naming the extra it needs."""
    try:
        import adapters.durable as durable
    except ImportError as exc:
        raise ConfigurationError(
            f"batch runs need the durable extra (pip install 'meeting-assistant-agents[durable]'): {exc}"
        ) from None
    return durable


def _announce(console: Console, executor_id: str, line: str) -> None:
    console.line(f"worker {executor_id}: {line}")


def durable_engine(
    settings: Settings, database_url: str, executor_id: str, announce: Callable[[str], None] | None = None
) -> Any:
    """:func:`adapters.durable_composition.durable_engine` (an async context manager giving the launched
    engine), or a ConfigurationError naming the extra it needs."""
    _durable()
    from adapters.durable_composition import durable_engine as composed

    return composed(settings, database_url, executor_id, announce)


def _database_url(args: argparse.Namespace, default: str | None) -> str:
    durable = _durable()
    url = args.db if args.db is not None else default
    if url is None:
        raise ConfigurationError("--db: required")
    try:
        checked: str = durable.check_database_url(url)
    except durable.DatabaseError as exc:
        raise ConfigurationError(str(exc)) from None
    return checked


@attrs.frozen
class Budget:
    """What the whole batch may spend (``--max-cost``, ``--max-tokens``); None: no limit."""

    cost_usd: float | None = None
    tokens: int | None = None

    def __bool__(self) -> bool:
        return self.cost_usd is not None or self.tokens is not None

    def reached(self, totals: Totals) -> bool:
        return (self.cost_usd is not None and (totals.cost_usd or 0.0) >= self.cost_usd) or (
            self.tokens is not None and totals.tokens >= self.tokens
        )


@attrs.define
class Totals:
    """What this run's meetings spent, each meeting counted once (a text under two names once); the
    meetings an earlier run finished are not this run's. ``cost_usd`` is None while no answer
    reported a cost (the gateway's own, through LiteLLM): unknown, not free."""

    tokens: int = 0
    cost_usd: float | None = None
    requests: int = 0

    def add(self, outcome: Outcome) -> None:
        usage = outcome.usage or {}
        self.tokens += int(usage.get("total_tokens") or 0)
        cost = usage.get("cost_usd")
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + float(cost)
        self.requests += int(usage.get("requests") or 0)

    def cost(self) -> str:
        return "cost not reported" if self.cost_usd is None else f"${self.cost_usd:.4f}"

    def line(self) -> str:
        return f"{self.requests} requests, {self.tokens:,} tokens, {self.cost()}"


@attrs.frozen
class Report:
    """What one batch command did: every meeting's outcome, those an earlier run had finished (their
    keys), and what this run spent."""

    outcomes: dict[str, Outcome]
    already_done: frozenset[str]
    totals: Totals
    retried: frozenset[str] = frozenset()
    """With ``--retry``, the keys of the meetings run again: the only ones this run counts."""

    def counted(self, sources: Sequence[Source]) -> list[Source]:
        """The transcripts this run answers for: every one, or with ``--retry`` those it ran again."""
        return [source for source in sources if not self.retried or source.key in self.retried]

    def exit_code(self) -> int:
        """What the meetings this run answers for ended with, as an exit code."""
        if not self.retried:
            return _exit_code(self.outcomes)
        return _exit_code({key: self.outcomes[key] for key in self.retried if key in self.outcomes})

    def document(self, sources: Sequence[Source]) -> dict[str, Any]:
        """The ``--format json`` document: transcripts counted by what this run did with them (with
        ``--retry``, those it ran again; ``outputs`` lists every index line either way)."""
        counts = {"done": 0, "failed": 0, "incomplete": 0, "already_done": 0, NOT_STARTED: 0, UNFINISHED: 0}
        for source in self.counted(sources):
            outcome = self.outcomes.get(source.key)
            if outcome is None:
                counts[UNFINISHED] += 1
            elif source.key in self.already_done:
                counts["already_done"] += 1
            else:
                status = "failed" if outcome.status == "error" else outcome.status
                counts[status] = counts.get(status, 0) + 1
        return {
            **counts,
            "requests": self.totals.requests,
            "tokens": self.totals.tokens,
            "cost_usd": self.totals.cost_usd,
            "outputs": _index_lines(sources, self.outcomes),
        }


async def _batch(
    sources: list[Source],
    folder: Path,
    database_url: str,
    executor_id: str,
    settings: Settings,
    console: Console,
    budget: Budget,
    settings_speakers: Sequence[tuple[str, str]] = (),
    *,
    rerun: bool = False,
    retry: frozenset[str] = frozenset(),
) -> Report:
    """Run the batch; every transcript's outcome (``not_started`` for those the budget kept back).

    With ``retry`` (meeting keys) only those meetings run, again from the start; the others' outcomes
    are what the run database recorded (``unfinished`` where it recorded no end), and nothing of
    theirs is sent, taken over or written but their index lines."""
    totals = Totals()
    shown = [source for source in sources if not retry or source.key in retry]
    progress = _Progress(console, len(shown), terminal=console.stderr.isatty(), totals=totals)
    by_sha: dict[str, list[Source]] = {}
    for source in sources:
        by_sha.setdefault(source.key, []).append(source)
    outcomes: dict[str, Outcome] = {}
    speakers = dict(settings_speakers) or None
    _remove_leftovers(folder, sources)
    # Without a budget a page at a time; with one, a few, so none starts once it is spent.
    window = _PAGE if not budget else _BUDGET_WINDOW * settings.agent.batch_concurrency
    waiting = deque(key for key in by_sha if not retry or key in retry)
    already: frozenset[str] = frozenset()
    try:
        async with durable_engine(settings, database_url, executor_id) as engine:
            engine.on_notice = lambda line: console.warning(f"batch: {line}")
            if retry:
                # These meetings from the start, whatever they ended with; the others as recorded.
                await engine.forget(list(waiting))
                outcomes.update(await engine.recorded([key for key in by_sha if key not in retry]))
            elif rerun:
                # Every meeting from the start, as if no run had recorded it.
                await engine.forget(list(by_sha))
            else:
                # What an earlier version left unfinished is finished by this one (else it would wait
                # for ever); after --rerun nothing is left to take over.
                _say_taken_over(console, await engine.take_over(list(by_sha)), "batch")
            if not retry:
                # What an earlier run recorded as failed is tried again, from the start.
                await engine.forget_failed(list(by_sha))
                # What an earlier run finished is handed back as it was recorded: not this run's work.
                already = frozenset(await engine.ended_well(list(by_sha)))
            # Each end costs the same however many are pending: the engine hands out only what
            # ended since it was last asked, and nothing here walks what is still pending.
            pending: set[str] = set()
            quiet = _POLL_SECONDS
            while waiting or pending:
                engine.check_alive()
                # On a server database each submission is a commit: a poll's time of them at most, then
                # what ended is handled, so the first results do not wait for a whole page to go in.
                until = time.monotonic() + _POLL_SECONDS
                while waiting and len(pending) < window and not budget.reached(totals):
                    sha256 = waiting.popleft()
                    first = by_sha[sha256][0]
                    await engine.submit(sha256, first.text, first.input_format, speakers)
                    pending.add(sha256)
                    if time.monotonic() >= until:
                        break
                if not pending:
                    break  # the budget is spent: what is still waiting is not started
                ended = await engine.take_finished()
                for sha256, outcome in ended.items():
                    outcomes[sha256] = outcome
                    if sha256 not in already:
                        totals.add(outcome)
                    for source in by_sha[sha256]:
                        progress.finished(source, outcome, _write_summary(folder, source, outcome))
                pending -= ended.keys()
                submitting = waiting and len(pending) < window and not budget.reached(totals)
                if ended:
                    quiet = _POLL_SECONDS
                if pending and not ended and not submitting:
                    await engine.wait(quiet)
                    quiet = min(2 * quiet, _QUIET_POLL_SECONDS)
            kept_back = _durable().Outcome(NOT_STARTED, error="not started: the batch's budget was spent")
            for sha256 in waiting:
                outcomes[sha256] = kept_back
                for source in by_sha[sha256]:
                    progress.finished(source, kept_back, None)
    finally:
        progress.close()
        _write_index(folder, sources, outcomes)
    report = Report(outcomes, already, totals, retry)
    earlier = sum(source.key in already for source in sources)
    before = f", {earlier} of them finished by an earlier run" if earlier else ""
    if retry:
        before = f" (retried; the other {len(sources) - len(shown)} as the run database recorded them)"
    console.line(f"{PROG}: {progress.summary()}{before}; this run spent {totals.line()}")
    return report


def retried_keys(sources: Sequence[Source], named: Sequence[str]) -> frozenset[str]:
    """The keys of the meetings ``--retry`` names: each by its key, the first 8 or more characters of
    it, or its source as the index shows it; an :class:`InputError` for a name that matches none of
    ``sources``, or several."""
    keys: set[str] = set()
    for name in named:
        matches = {
            source.key
            for source in sources
            if name in (source.key, source.shown)
            or (len(name) >= _KEY_PREFIX and source.key.startswith(name))
        }
        if not matches:
            raise InputError(f"--retry {name!r}: no meeting of this batch has that key or source")
        if len(matches) > 1:
            raise InputError(f"--retry {name!r}: names {len(matches)} meetings; give more of the key")
        keys |= matches
    return frozenset(keys)


def batch_command(
    args: argparse.Namespace, console: Console, settings: Settings, stdin: BinaryIO, endpoint: Endpoint
) -> int:
    """``meeting-agents batch``: every check first (exit 2), then the runs; the exit code."""
    try:
        _refuse_what_is_not_honoured(args, "batch")
        sources = collect_sources(
            args.paths,
            stdin,
            args,
            limit=settings.agent.max_transcript_bytes,
            basis=meeting_basis(settings),
        )
        retry = retried_keys(sources, args.retry or ())
        folder = prepare_output(args.out)
        database_url = _database_url(args, f"sqlite:///{folder / DEFAULT_DATABASE}")
    except (ConfigurationError, InputError) as exc:
        console.error(str(exc))
        return EXIT_USAGE
    long = long_transcripts(
        [(source.shown, len(source.text)) for source in sources], settings.agent.transcript_warning_chars
    )
    if long is not None:
        console.warning(long)
    unnamed = [source for source in sources if source.unnamed_speakers]
    if unnamed:
        labels = dict.fromkeys(label for source in unnamed for label in source.unnamed_speakers)
        console.warning(
            f"the speakers {', '.join(labels)} of {len(unnamed)} of the transcripts are diarization labels"
            " and stand as their names; name them with --speaker LABEL=NAME"
        )

    async def session() -> int:
        with endpoint(settings, console) as running:
            try:
                budget = Budget(cost_usd=args.max_cost, tokens=args.max_tokens)
                report = await _batch(
                    sources,
                    folder,
                    database_url,
                    _executor_id(args, "batch"),
                    running,
                    console,
                    budget,
                    args.speakers,
                    rerun=args.rerun,
                    retry=retry,
                )
            except ConfigurationError as exc:
                console.error(str(exc))
                return EXIT_USAGE
            except _durable().LivenessLostError as exc:
                console.error(f"{exc}: run the same command again to finish the batch")
                return EXIT_MODEL_FAILED
        if args.format == "json":
            console.result_json(report.document(sources))
        return report.exit_code()

    try:
        return asyncio.run(session())
    except _database_error() as exc:
        console.error(str(exc))
        return EXIT_USAGE


def status_command(args: argparse.Namespace, console: Console) -> int:
    """``meeting-agents batch-status``: the run database's meetings by state, and their totals."""
    try:
        _refuse_what_is_not_honoured(args, "batch-status")
        database_url = _database_url(args, None)
        durable = _durable()
        states = durable.batch_status(database_url)
    except ConfigurationError as exc:
        console.error(str(exc))
        return EXIT_USAGE
    except _database_error() as exc:
        console.error(str(exc))
        return EXIT_USAGE
    totals = dict.fromkeys(durable.STATES, 0)
    for meeting in states:
        totals[meeting.state] += 1
    if args.format == "json":
        console.result_json({"meetings": [attrs.asdict(meeting) for meeting in states], "totals": totals})
        return EXIT_OK
    lines = []
    for meeting in states:
        held = f" ({meeting.executor}, {meeting.version})" if meeting.state in ("pending", "running") else ""
        why = f": {meeting.error}" if meeting.error is not None else ""
        lines.append(f"{meeting.state:<10} {meeting.key}{held}{why}")
    counts = ", ".join(f"{count} {state}" for state, count in totals.items())
    lines.append(f"{len(states)} meetings: {counts}")
    console.result("\n".join(lines) + "\n")
    return EXIT_OK


def _say_taken_over(console: Console, older: Mapping[str, Sequence[str]], who: str) -> None:
    """One line for the meetings an earlier version left unfinished that this process took over."""
    if older:
        from adapters.durable.engine import version

        count = sum(len(ids) for ids in older.values())
        versions = ", ".join(sorted(older))
        console.warning(
            f"{who}: took over {count} unfinished meeting(s) of an earlier version ({versions}) "
            f"under this one ({version()}); they go on from their last recorded step"
        )


def _refuse_what_is_not_honoured(args: argparse.Namespace, command: str) -> None:
    """A ConfigurationError naming the first global option given that ``command`` cannot honour."""
    refused = dict(_NOT_HONOURED)
    if command == "worker":
        refused["format"] = "--format json (a worker prints no result: the batch that queued the work does)"
    for option, why in refused.items():
        value = getattr(args, option, None)
        if value is True or (option == "format" and value == "json"):
            raise ConfigurationError(f"{command} does not take {why}")


def _database_error() -> type[Exception]:
    error: type[Exception] = _durable().DatabaseError
    return error


def worker_command(args: argparse.Namespace, console: Console, settings: Settings, endpoint: Endpoint) -> int:
    """``meeting-agents worker``: take transcripts from the shared queue until SIGTERM (0) or Ctrl-C (130)."""
    try:
        _refuse_what_is_not_honoured(args, "worker")
        database_url = _database_url(args, None)
        if not database_url.startswith("postgresql"):
            raise ConfigurationError(
                f"--db {args.db!r}: a worker shares the batch's queue, which needs a server database "
                "(postgresql://USER@HOST:PORT/DATABASE)"
            )
    except ConfigurationError as exc:
        console.error(str(exc))
        return EXIT_USAGE
    executor_id = _executor_id(args, "worker")

    async def session() -> int:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        with endpoint(settings, console) as running:
            announce = functools.partial(_announce, console, executor_id)
            async with durable_engine(running, database_url, executor_id, announce) as engine:
                console.line(f"worker {executor_id}: taking transcripts (Ctrl-C or SIGTERM stops)")
                stopping = asyncio.create_task(stop.wait())
                losing = asyncio.create_task(engine.wait_lost())
                await asyncio.wait({stopping, losing}, return_when=asyncio.FIRST_COMPLETED)
                for task in (stopping, losing):
                    task.cancel()
                if engine.lost is not None:
                    console.error(f"worker {executor_id}: {engine.lost}; stopping")
                    return EXIT_MODEL_FAILED
        return EXIT_OK

    try:
        return asyncio.run(session())
    except _database_error() as exc:
        console.error(str(exc))
        return EXIT_USAGE
