"""A process's liveness on Postgres, in this process: a lock held by another live process, a server that
ends the lock's connection (while it is awaited, or once held), a look for dead processes that fails."""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

import adapters.durable.liveness as liveness
from adapters.durable import DatabaseError, Engine, EngineSettings, LivenessLostError
from adapters.durable.engine import version
from adapters.durable.liveness import Liveness
from adapters.scripted import ScriptedChat
from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import cut_liveness, runtime_over, selected

pytestmark = pytest.mark.slow


def _settings(database: str, executor_id: str) -> EngineSettings:
    return EngineSettings(database, executor_id, 1, traced=False, recovery_seconds=0.2)


async def test_a_launch_with_an_id_a_live_process_holds_is_refused_at_once(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A launch that waited for the lock would outlive the test's deadline: the refusal must not wait.
    monkeypatch.setattr(liveness, "_TAKE_SECONDS", 2 * PROCESS_TIMEOUT)
    holder = Liveness.take(database, "engine-a", 1.0, version())
    try:
        with pytest.raises(DatabaseError, match=r"^--id 'engine-a': another live process runs with this id"):
            await asyncio.wait_for(
                Engine.launch(_settings(database, "engine-a"), runtime_over(ScriptedChat())), PROCESS_TIMEOUT
            )
    finally:
        holder.close()


def _survivor_holding(database: str, executor_id: str) -> psycopg.Connection[tuple[object, ...]]:
    """A survivor's liveness connection holding ``executor_id``'s lock, as while it recovers its workflows."""
    survivor = psycopg.connect(
        database, autocommit=True, connect_timeout=10, application_name="meeting-agents liveness survivor"
    )
    survivor.execute(_LOCK, (executor_id, liveness._KEY_SEED))
    return survivor


_LOCK = "SELECT pg_advisory_lock(hashtextextended(%s, %s))"


def test_an_id_whose_lock_a_survivor_holds_while_recovering_is_waited_for_not_refused(database: str) -> None:
    survivor = _survivor_holding(database, "engine-b")
    lock = ("engine-b", liveness._KEY_SEED)
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(Liveness.take, database, "engine-b", 1.0, version(), PROCESS_TIMEOUT)
            waiter = """SELECT 1 FROM pg_stat_activity
                        WHERE application_name = 'meeting-agents liveness engine-b'
                        AND wait_event_type = 'Lock'"""
            deadline = time.monotonic() + PROCESS_TIMEOUT
            while not selected(database, waiter):
                assert not waiting.done(), f"refused instead of waiting: {waiting.exception()}"
                assert time.monotonic() < deadline, "no process waited for the lock"
                time.sleep(0.05)
            survivor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, %s))", lock)
            taken = waiting.result(PROCESS_TIMEOUT)
        taken.close()
    finally:
        survivor.close()
    assert taken.executor_id == "engine-b"


def test_a_server_that_ends_the_connection_while_the_lock_is_awaited_is_an_error(database: str) -> None:
    holder = _survivor_holding(database, "worker-a")
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(Liveness.take, database, "worker-a", 1.0, version(), PROCESS_TIMEOUT)
            # The holder's backend is idle; the one waiting for its lock is ended (a restart, an admin).
            waiter = """SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE application_name = 'meeting-agents liveness worker-a'
                        AND wait_event_type = 'Lock'"""
            deadline = time.monotonic() + PROCESS_TIMEOUT
            while not selected(database, waiter):
                assert time.monotonic() < deadline, "no process waited for the lock"
                time.sleep(0.05)
            with pytest.raises(psycopg.OperationalError):
                waiting.result(PROCESS_TIMEOUT)
        # The holder still holds the lock: the id is refused once the wait for it runs out.
        with pytest.raises(liveness.ExecutorInUseError):
            Liveness.take(database, "worker-a", 1.0, version(), wait_seconds=0.2)
    finally:
        holder.close()


async def test_an_engine_whose_liveness_connection_the_server_ends_knows_it_is_lost(database: str) -> None:
    engine = await Engine.launch(_settings(database, "engine-cut"), runtime_over(ScriptedChat()))
    try:
        engine.check_alive()
        assert engine.lost is None
        assert cut_liveness(database, "engine-cut") == [(True,)]
        reason = await asyncio.wait_for(engine.wait_lost(), PROCESS_TIMEOUT)
        with pytest.raises(LivenessLostError) as raised:
            engine.check_alive()
    finally:
        engine.shutdown()
    assert reason.startswith("the liveness connection to the run database broke (")
    assert str(raised.value) == reason == engine.lost


def test_a_look_for_dead_processes_that_fails_is_logged_and_tried_again(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    lost: list[str] = []
    # DBOS is not launched in this process: each look's query of DBOS fails, the lock's connection is fine.
    watcher = Liveness.take(database, "worker-looking", 0.05, version())
    try:
        with caplog.at_level(logging.WARNING, logger=liveness.__name__):
            watcher.start(lost.append)
            deadline = time.monotonic() + PROCESS_TIMEOUT
            failed: list[logging.LogRecord] = []
            while len(failed) < 2:
                assert time.monotonic() < deadline, "no look for dead processes failed twice"
                time.sleep(0.05)
                failed = [r for r in caplog.records if "looking for dead processes failed" in r.getMessage()]
            watcher.stop()
    finally:
        watcher.close()
    assert lost == []
    assert {record.levelno for record in failed} == {logging.WARNING}
    assert all(record.getMessage().startswith("executor worker-looking: ") for record in failed)


async def test_a_launch_that_fails_after_taking_the_lock_gives_the_lock_back(database: str) -> None:
    # A role that may connect but not create DBOS's schema: the lock is taken, then DBOS cannot start.
    reader = f"reader_{database.rsplit('/', 1)[1]}"
    with psycopg.connect(database, autocommit=True, connect_timeout=10) as connection:
        connection.execute(f"CREATE ROLE {reader} LOGIN")
    as_reader = database.replace("postgresql://postgres@", f"postgresql://{reader}@")
    with pytest.raises(DatabaseError, match=r"^--db 'postgresql://reader_.*': cannot be used \(") as raised:
        await Engine.launch(_settings(as_reader, "engine-reader"), runtime_over(ScriptedChat()))
    assert "permission denied" in str(raised.value)
    # The id is free again at once (a lock left behind would refuse it), and nothing is left launched.
    Liveness.take(database, "engine-reader", 1.0, version(), wait_seconds=0.2).close()
    assert await asyncio.to_thread(sum, [1, 2]) == 3
