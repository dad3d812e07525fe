"""The batch loop and the engine pay the same for each finished transcript however long the batch.

Counted, not timed: every hash, equality and ordering comparison of the transcripts' ids that the batch
command's loop and the engine make, for a batch and for one four times as long. Before, each wake-up of
the loop sorted every pending id and the engine looked each of them up: the count grew with the square
of the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

import adapters.durable.engine as engine_module
from adapters.cli.display.console import Console
from adapters.cli.meetings import batch
from adapters.cli.meetings.batch import Budget, Source
from adapters.durable import Engine, EngineSettings, Outcome
from adapters.settings import Settings, resolve_settings

_CONCURRENCY = 4


class _CountedId(str):
    """A transcript id that counts every comparison and hash made of it."""

    __slots__ = ()
    operations: ClassVar[int] = 0

    def __hash__(self) -> int:
        _CountedId.operations += 1
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        _CountedId.operations += 1
        return str.__eq__(self, other)

    def __lt__(self, other: str) -> bool:
        _CountedId.operations += 1
        return str.__lt__(self, other)


class _Handle:
    """A workflow that ends after a turn of the event loop or a few, as the id says."""

    def __init__(self, turns: int) -> None:
        self._turns = turns

    async def get_result(self) -> Outcome:
        for _ in range(self._turns):
            await asyncio.sleep(0)
        return Outcome("done", usage={"requests": 2, "total_tokens": 10})


class _WorkflowsAtOnce:
    """DBOS's calls the engine makes for transcripts started in the process, without a database: the
    bookkeeping of the loop and the engine is what is counted."""

    turns: ClassVar[Callable[[], int]]
    application_version: ClassVar[str] = "meeting-agents-test"

    @classmethod
    async def start_workflow_async(cls, _workflow: Any, *_meeting: Any) -> _Handle:
        return _Handle(cls.turns())

    @staticmethod
    async def list_workflows_async(**_: Any) -> list[Any]:
        return []  # nothing failed, finished or left by another version before


def _settings() -> Settings:
    agent = {"base_url": "http://127.0.0.1:9", "api_key": "sk-test", "model": "m", "telemetry": False}
    return resolve_settings(config={"agent": {**agent, "batch_concurrency": _CONCURRENCY}})


def _operations(
    count: int, folder: Path, monkeypatch: pytest.MonkeyPatch, *, engine: type[Engine] = Engine
) -> tuple[int, dict[str, Outcome]]:
    turns = itertools.cycle([1, 3, 2, 1, 5])
    monkeypatch.setattr(_WorkflowsAtOnce, "turns", lambda: next(turns), raising=False)
    monkeypatch.setattr(engine_module, "DBOS", _WorkflowsAtOnce)

    @contextlib.asynccontextmanager
    async def started_here(settings: Settings, url: str, executor_id: str) -> AsyncIterator[Engine]:
        yield engine(EngineSettings(url, executor_id, settings.agent.batch_concurrency, shared_queue=False))

    monkeypatch.setattr(batch, "durable_engine", started_here)
    sources = []
    for number in range(count):
        text = f"Ana: item {number}.\n"
        digest = _CountedId(hashlib.sha256(text.encode()).hexdigest())
        sources.append(Source(f"in/{number}.txt", str(number), text, digest))
    folder.mkdir()
    console = Console(io.StringIO(), io.StringIO(), verbose=False, chatty=False, environ={})
    _CountedId.operations = 0
    report = asyncio.run(
        batch._batch(sources, folder, "sqlite:///unused", "test", _settings(), console, Budget())
    )
    return _CountedId.operations, report.outcomes


def test_each_finished_transcript_costs_the_loop_and_the_engine_the_same_however_long_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short, short_outcomes = _operations(100, tmp_path / "short", monkeypatch)
    long, long_outcomes = _operations(400, tmp_path / "long", monkeypatch)

    assert len(short_outcomes) == 100
    assert len(long_outcomes) == 400
    assert {outcome.status for outcome in long_outcomes.values()} == {"done"}
    # Four times the transcripts, about four times the work (the ends heard together are sorted: a
    # little more); the square of the batch would be sixteen times.
    assert long / short < 6, (short, long)
    assert long / 400 < 60, f"{long / 400:.1f} operations a transcript"


class _Submissions:
    """What a batch submitted to the engine: in all, the most outstanding at once, and how many when the
    first results were heard of."""

    def __init__(self) -> None:
        self.submitted = 0
        self.outstanding = 0
        self.most = 0
        self.at_first_end: list[int] = []


def _counting(submissions: _Submissions, *, delay: float = 0.0) -> type[Engine]:
    """An engine that counts its submissions in ``submissions``; each takes ``delay`` seconds (a
    server's commit) before it counts."""

    class _Counting(Engine):
        async def submit(self, sha256: str, *meeting: Any) -> None:
            if delay:
                await asyncio.sleep(delay)
            submissions.outstanding += 1
            submissions.submitted += 1
            submissions.most = max(submissions.most, submissions.outstanding)
            await super().submit(sha256, *meeting)

        async def take_finished(self) -> dict[str, Outcome]:
            ended = await super().take_finished()
            if ended and not submissions.at_first_end:
                submissions.at_first_end.append(submissions.submitted)
            submissions.outstanding -= len(ended)
            return ended

    return _Counting


def _paged(
    count: int, page: int, folder: Path, monkeypatch: pytest.MonkeyPatch, *, delay: float = 0.0
) -> tuple[int, _Submissions]:
    """``count`` transcripts run in pages of ``page`` on the counting engine, every one of them done: the
    operations counted, and what was submitted."""
    monkeypatch.setattr(batch, "_PAGE", page)
    submissions = _Submissions()
    operations, outcomes = _operations(count, folder, monkeypatch, engine=_counting(submissions, delay=delay))
    assert len(outcomes) == count
    assert {outcome.status for outcome in outcomes.values()} == {"done"}
    return operations, submissions


def test_a_long_backlog_is_submitted_in_pages_while_the_first_results_are_handled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = 8
    count, submissions = _paged(100, page, tmp_path / "paged", monkeypatch)
    assert submissions.most <= page, "more transcripts were submitted at once than a page"
    assert submissions.at_first_end == [page], "the first results waited for the whole backlog"
    assert count > 0


def test_the_first_results_are_handled_while_slow_submissions_of_a_page_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each submission takes a server's commit (here 50 ms): a page of 32 takes 1.6 s to go in, and the
    # batch hears what ended after a poll's time of them (0.25 s), not after the whole page.
    page = 32
    _, submissions = _paged(40, page, tmp_path / "slow", monkeypatch, delay=0.05)
    [first] = submissions.at_first_end
    assert first < page, "the first results waited for the whole page to be submitted"


def test_polls_that_hear_of_nothing_space_out_to_a_second_and_an_end_brings_them_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    calls = 0
    held: dict[str, Outcome] = {}

    class _Quiet(Engine):
        """Hears of nothing for five polls, then of one end, then of nothing once, then of the rest."""

        async def take_finished(self) -> dict[str, Outcome]:
            nonlocal calls
            calls += 1
            held.update(await super().take_finished())
            if calls <= 5 or calls == 7 or not held:
                return {}
            if calls == 6:
                first = min(held)
                return {first: held.pop(first)}
            released = dict(held)
            held.clear()
            return released

        async def wait(self, seconds: float) -> None:
            waits.append(seconds)
            await asyncio.sleep(0)

    _, outcomes = _operations(8, tmp_path / "quiet", monkeypatch, engine=_Quiet)
    assert len(outcomes) == 8
    assert waits[:6] == [0.25, 0.5, 1.0, 1.0, 1.0, 0.25], waits
