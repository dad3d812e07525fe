"""The engine in this process: what launching and stopping DBOS leaves behind in the host's event loop."""

from __future__ import annotations

import asyncio
import io
import logging
import sqlite3
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import attrs
import pytest

from adapters.durable import DatabaseError, DurableChat, Engine, EngineSettings, Outcome
from adapters.durable.engine import current_runtime
from adapters.redaction import REDACTED, Redactor
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import SummaryAgent
from domain import ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, updates_of
from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import runtime_over


def _settings(folder: Path, name: str, *, shared_queue: bool | None = None) -> EngineSettings:
    return EngineSettings(
        f"sqlite:///{folder / name}.sqlite", "engine-test", 1, traced=False, shared_queue=shared_queue
    )


async def test_after_shutdown_the_loop_runs_work_in_threads_again(tmp_path: Path) -> None:
    engine = await Engine.launch(_settings(tmp_path, "runs"), runtime_over(ScriptedChat()))
    try:
        # A DBOS call from the loop makes DBOS's thread pool the loop's default executor.
        assert await engine.finished(["no-such-workflow"]) == {}
        assert await asyncio.to_thread(sum, [1, 2]) == 3
    finally:
        engine.shutdown()

    # DBOS shut its pool down; the loop has one of its own again (the benchmark suite, one loop, broke here).
    assert await asyncio.to_thread(sum, [3, 4]) == 7


async def test_a_second_engine_in_the_same_loop_runs_after_the_first(tmp_path: Path) -> None:
    for round_ in range(2):
        engine = await Engine.launch(_settings(tmp_path, str(round_)), runtime_over(ScriptedChat()))
        try:
            assert await engine.finished([f"none-{round_}"]) == {}
        finally:
            engine.shutdown()
        assert await asyncio.to_thread(str, round_) == str(round_)


async def test_a_launch_after_the_stderr_of_an_earlier_one_was_closed_logs_to_the_current_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbos_logger = logging.getLogger("dbos")
    # As in a fresh process: DBOS makes its console handler at the next launch, on the stderr of then.
    monkeypatch.setattr(dbos_logger, "handlers", [])
    captured = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stderr", captured)  # a host capturing stderr around its first run
        first = await Engine.launch(_settings(tmp_path, "first"), runtime_over(ScriptedChat()))
        first.shutdown()
    captured.close()

    second = await Engine.launch(_settings(tmp_path, "second"), runtime_over(ScriptedChat()))
    try:
        assert await second.finished(["no-such-workflow"]) == {}
    finally:
        second.shutdown()
    assert [getattr(handler, "stream", None) for handler in dbos_logger.handlers] == [sys.stderr]


def test_no_runtime_before_a_launch() -> None:
    with pytest.raises(RuntimeError, match=r"no durable runtime: Engine.launch\(\) sets it"):
        current_runtime()


async def test_a_file_that_is_no_database_is_a_database_error_and_leaves_nothing_launched(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.sqlite").write_text("meeting notes, not a database\n" * 100, encoding="utf-8")
    with pytest.raises(DatabaseError, match=r"^--db 'sqlite:///.*notes.sqlite': cannot be used \("):
        await Engine.launch(_settings(tmp_path, "notes"), runtime_over(ScriptedChat()))

    # Nothing of the failed launch is left: no runtime, the loop's threads work, a launch after it runs.
    with pytest.raises(RuntimeError, match="no durable runtime"):
        current_runtime()
    assert await asyncio.to_thread(sum, [1, 2]) == 3
    engine = await Engine.launch(_settings(tmp_path, "runs"), runtime_over(ScriptedChat()))
    try:
        assert await engine.finished(["no-such-workflow"]) == {}
    finally:
        engine.shutdown()


def _unbuildable() -> SummaryAgent:
    raise RuntimeError("the pipeline could not be built")


@pytest.mark.parametrize("shared_queue", [False, True], ids=["started-here", "queued"])
async def test_a_workflow_that_raises_ends_in_error_with_its_reason(
    tmp_path: Path, shared_queue: bool
) -> None:
    runtime = attrs.evolve(runtime_over(ScriptedChat()), summary_agent=_unbuildable)
    engine = await Engine.launch(_settings(tmp_path, "runs", shared_queue=shared_queue), runtime)
    try:
        await engine.submit("transcript-1", "Ann: We decided to ship.\n")
        ended: dict[str, Outcome] = {}
        async with asyncio.timeout(PROCESS_TIMEOUT):
            while not ended:
                ended = await engine.finished(["transcript-1"])
                await engine.wait(0.05)
    finally:
        engine.shutdown()
    assert ended == {
        "transcript-1": Outcome("error", error="the run ended with the pipeline could not be built")
    }


@attrs.define
class _Unanswered:
    """A chat whose every request waits for an answer that never comes (a model slower than the host)."""

    arrived: asyncio.Event = attrs.field(factory=asyncio.Event)
    requests: int = 0
    # The task each request was sent in (a workflow's: the pipeline sends its requests in it).
    tasks: list[asyncio.Task[object] | None] = attrs.field(factory=list)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.requests += 1
        self.tasks.append(asyncio.current_task())
        self.arrived.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable: nothing sets the event")

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


def _statuses(database: Path) -> list[tuple[str, str]]:
    connection = sqlite3.connect(database)
    try:
        return connection.execute("SELECT workflow_uuid, status FROM workflow_status").fetchall()
    finally:
        connection.close()


async def test_a_transcript_running_at_shutdown_stays_pending_and_the_next_launch_finishes_it(
    tmp_path: Path,
) -> None:
    unanswered = _Unanswered()
    stuck = attrs.evolve(
        runtime_over(ScriptedChat()), summary_agent=lambda: SummaryAgent(unanswered), chat=unanswered
    )
    engine = await Engine.launch(_settings(tmp_path, "runs"), stuck)
    try:
        await engine.submit("transcript-1", "Ann: We decided to ship.\n")
        await asyncio.wait_for(unanswered.arrived.wait(), PROCESS_TIMEOUT)
    finally:
        engine.shutdown()
    # The workflow's task ends on the loop, cancelled, rather than being left to the garbage collector
    # (which would close it later, outside any loop, where DBOS's cleanup in it fails).
    [workflow] = unanswered.tasks
    assert workflow is not None
    await asyncio.wait({workflow}, timeout=PROCESS_TIMEOUT)
    assert workflow.cancelled()
    assert _statuses(tmp_path / "runs.sqlite") == [("transcript-1", "PENDING")]

    # Launched again with the same executor id, DBOS recovers the run; submitted again, it is that run.
    answering = ScriptedChat(ScriptedTurn(text="Ann decided to ship."))
    engine = await Engine.launch(_settings(tmp_path, "runs"), runtime_over(answering))
    try:
        await engine.submit("transcript-1", "Ann: We decided to ship.\n")
        ended: dict[str, Outcome] = {}
        async with asyncio.timeout(PROCESS_TIMEOUT):
            while not ended:
                await engine.wait(1.0)
                ended = await engine.finished(["transcript-1"])
    finally:
        engine.shutdown()
    assert ended["transcript-1"].summary == {"text": "Ann decided to ship."}
    assert unanswered.requests == 1
    assert len(answering.requests) == 1
    assert _statuses(tmp_path / "runs.sqlite") == [("transcript-1", "SUCCESS")]


async def test_a_durable_chat_streams_the_answer_of_its_step_scrubbed(tmp_path: Path) -> None:
    secret = "sk-live-4242-abcd"
    scripted = ScriptedChat(ScriptedTurn(text=f"the key is {secret}"))
    chat = DurableChat(scripted, Redactor([secret]))
    engine = await Engine.launch(_settings(tmp_path, "runs"), runtime_over(ScriptedChat()))
    try:
        updates = [update async for update in chat.get_streaming_response([ChatMessage.user("Hello")])]
    finally:
        engine.shutdown()
    assert ChatResponse.from_updates(updates).text == f"the key is {REDACTED}"
    assert len(scripted.requests) == 1
