"""Which processes sharing a Postgres run database are alive, and recovery of the workflows of the dead.

Each process that runs workflows on Postgres holds a session-level advisory lock keyed by its executor id,
on a connection of its own, for as long as it runs. Postgres drops the lock by itself when the process or
its connection dies (a SIGKILL closes the socket at once; a machine that vanishes is noticed by the TCP
keepalives this connection asks both ends for), so no timer guesses whether a process is alive.

Every live process looks, at start and then every ``interval`` seconds, for executor ids that hold
PENDING workflows and whose lock it can take: their process is gone. It takes that lock while DBOS
recovers exactly those workflows (puts them back on their queue, where the next process with a free slot
takes them), then gives it back. Two survivors cannot both recover one dead executor (the lock admits one
at a time, and DBOS re-enqueues only a workflow still PENDING under the dead executor's id); a process
started again with the dead one's id waits (bounded) for the lock before DBOS recovers anything of its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

import psycopg
from dbos import DBOS, WorkflowStatus

from adapters.durable.dbos_seam import recover_pending_workflows
from adapters.durable.takeover import UNFINISHED, older_unfinished, take_over

__all__ = ["ExecutorInUseError", "Liveness", "LivenessLostError"]

_log = logging.getLogger(__name__)

# The seed of hashtextextended: the advisory-lock keys of executor ids, apart from other users' keys.
_KEY_SEED: Final = 0x6D656574  # "meet"
_KEY: Final = "hashtextextended(%s, %s)"
_CONNECT_TIMEOUT_SECONDS: Final = 10
# How long a process starting waits for its own id's lock while a survivor holds it to recover the dead
# process's workflows (a query or two): a longer hold means something is wrong, and the start is refused.
_TAKE_SECONDS: Final = 10
# Who holds an executor id's lock: the application name of the session holding it (pg_locks keeps a
# bigint advisory key as its high and low 32 bits, objsubid 1).
_HOLDER: Final = """
    SELECT activity.application_name
    FROM pg_locks AS locks JOIN pg_stat_activity AS activity ON activity.pid = locks.pid,
         (SELECT hashtextextended(%s, %s) AS key) AS wanted
    WHERE locks.locktype = 'advisory' AND locks.granted AND locks.objsubid = 1
      AND locks.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND locks.classid = ((wanted.key >> 32) & 4294967295)::oid
      AND locks.objid = (wanted.key & 4294967295)::oid"""
# Every statement on the liveness connection ends within this (an unreachable server is an error).
_STATEMENT_SECONDS: Final = 30
_STOP_SECONDS: Final = 30
# TCP keepalives: a peer gone without closing its socket is noticed after idle + interval x count.
_KEEPALIVE_COUNT: Final = 3


class ExecutorInUseError(Exception):
    """Another live process holds this executor id's lock on the database."""


class LivenessLostError(RuntimeError):
    """This process's liveness connection broke: other processes may take its workflows over, so it stops."""


def _keepalive_seconds(interval: float) -> int:
    return max(1, round(interval))


def _application_name(executor_id: str) -> str:
    """What the liveness connection of ``executor_id`` calls itself (Postgres keeps 63 bytes of it)."""
    return f"meeting-agents liveness {executor_id}".encode()[:63].decode("utf-8", "ignore")


def _connect(url: str, executor_id: str, interval: float) -> psycopg.Connection[tuple[object, ...]]:
    keepalive = _keepalive_seconds(interval)
    return psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=_CONNECT_TIMEOUT_SECONDS,
        application_name=_application_name(executor_id),
        keepalives=1,
        keepalives_idle=keepalive,
        keepalives_interval=keepalive,
        keepalives_count=_KEEPALIVE_COUNT,
    )


def _configure(connection: psycopg.Connection[tuple[object, ...]], interval: float) -> None:
    """The server's side of the keepalives (user-settable per session): it drops the backend, and so the
    lock, once a vanished client stops answering; the client's side (:func:`_connect`) notices a vanished
    server. Set by statements, not the startup packet's options, which some poolers refuse and a URL may
    set."""
    keepalive = _keepalive_seconds(interval)
    for setting, value in (
        ("tcp_keepalives_idle", keepalive),
        ("tcp_keepalives_interval", keepalive),
        ("tcp_keepalives_count", _KEEPALIVE_COUNT),
        ("statement_timeout", _STATEMENT_SECONDS * 1000),
    ):
        connection.execute(f"SET {setting} = {int(value)}")


class Liveness:
    """This process's lock on a Postgres run database, and the recovery of dead processes' workflows.

    :meth:`take` before DBOS launches (so DBOS recovers this id's own workflows only once it holds the
    lock); :meth:`start` once it runs; :meth:`stop`, then DBOS's end, then :meth:`close` (the lock goes last).
    """

    def __init__(
        self,
        connection: psycopg.Connection[tuple[object, ...]],
        executor_id: str,
        interval: float,
        app_version: str,
    ) -> None:
        self.executor_id = executor_id
        self.interval = interval
        self._connection = connection
        self._app_version = app_version
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # The workflows of an earlier version a dead process left: their name, the queue they go back
        # on under this version, and who hears of it (None: they are left alone).
        self._take_over: tuple[str, str, Callable[[str], None]] | None = None

    @classmethod
    def take(
        cls,
        url: str,
        executor_id: str,
        interval: float,
        app_version: str,
        wait_seconds: float | None = None,
    ) -> Liveness:
        """The lock of ``executor_id``; :class:`ExecutorInUseError` at once when a live process of that
        id holds it (its own liveness connection does), a ``psycopg.Error`` when the database cannot be
        reached or ends the connection meanwhile (which is then closed).

        A survivor recovering that id's workflows holds the lock on a connection named for its own id,
        for a query or two: the lock is then waited for, at most ``wait_seconds`` (None: ten seconds)."""
        wait = _TAKE_SECONDS if wait_seconds is None else wait_seconds
        connection = _connect(url, executor_id, interval)
        try:
            _configure(connection, interval)
            arguments = (executor_id, _KEY_SEED)
            row = connection.execute(f"SELECT pg_try_advisory_lock({_KEY})", arguments).fetchone()
            if row is None or not row[0]:
                holders = connection.execute(_HOLDER, arguments).fetchall()
                if (_application_name(executor_id),) in holders:
                    raise ExecutorInUseError
                connection.execute(f"SET lock_timeout = {max(1, round(wait * 1000))}")
                connection.execute(f"SELECT pg_advisory_lock({_KEY})", arguments)
                connection.execute("RESET lock_timeout")
        except (psycopg.errors.LockNotAvailable, ExecutorInUseError):
            connection.close()
            raise ExecutorInUseError(
                f"--id {executor_id!r}: another live process runs with this id on this database; "
                "give each process its own --id"
            ) from None
        except BaseException:
            connection.close()
            raise
        return cls(connection, executor_id, interval, app_version)

    def start(
        self, on_lost: Callable[[str], None], take_over: tuple[str, str, Callable[[str], None]] | None = None
    ) -> None:
        """Look for dead processes' workflows now and every ``interval`` seconds, in a thread of its own,
        until :meth:`stop`; ``on_lost`` (called from that thread) hears why, if this connection breaks.
        ``take_over`` (a workflow name, a queue, who hears of it in one line): a dead process's
        workflows of that name and of an earlier application version go back on that queue under
        this one (:func:`adapters.durable.takeover.take_over`), instead of waiting for ever."""
        self._take_over = take_over
        self._thread = threading.Thread(
            target=self._watch, args=(on_lost,), name=f"liveness {self.executor_id}", daemon=True
        )
        self._thread.start()

    def _watch(self, on_lost: Callable[[str], None]) -> None:
        while not self._stop.is_set():
            try:
                self._connection.execute("SELECT 1")
                self.recover_dead()
            except Exception as exc:
                if self._connection.broken or self._connection.closed:
                    reason = f"the liveness connection to the run database broke ({type(exc).__name__})"
                    _log.error("executor %s: %s; stopping", self.executor_id, reason)
                    on_lost(reason)
                    return
                # The lock still held (a query that failed on an open connection, or one of DBOS's own,
                # which retries its transient errors itself): try again next time.
                _log.warning(
                    "executor %s: looking for dead processes failed: %s", self.executor_id, exc, exc_info=True
                )
            self._stop.wait(self.interval)

    def recover_dead(self) -> list[str]:
        """The executor ids whose lock was free and whose PENDING workflows DBOS recovered while this
        process held that lock."""
        unfinished = DBOS.list_workflows(status=UNFINISHED, load_input=False, load_output=False)
        pending = [s for s in unfinished if s.status == "PENDING" and s.app_version == self._app_version]
        older = self._older(unfinished)
        candidates = sorted(
            {s.executor_id for s in [*pending, *older] if s.executor_id and s.executor_id != self.executor_id}
        )
        recovered: list[str] = []
        for executor in candidates:
            row = self._connection.execute(
                f"SELECT pg_try_advisory_lock({_KEY})", (executor, _KEY_SEED)
            ).fetchone()
            if row is None or not row[0]:
                continue  # alive (or another survivor is recovering it right now)
            taken: dict[str, list[str]] = {}
            try:
                # Each is re-enqueued only while still PENDING under that id, so it runs once.
                handles = recover_pending_workflows([executor])
                if self._take_over is not None:
                    # Listed again under the lock: another survivor may have taken them over meanwhile.
                    again = DBOS.list_workflows(
                        status=UNFINISHED, executor_id=executor, load_input=False, load_output=False
                    )
                    taken = take_over(self._older(again), self._app_version, self._take_over[1])
            finally:
                self._connection.execute(f"SELECT pg_advisory_unlock({_KEY})", (executor, _KEY_SEED))
            if handles:
                _log.warning(
                    "executor %s: recovered %d workflows of executor %s, whose process is gone",
                    self.executor_id,
                    len(handles),
                    executor,
                )
                recovered.append(executor)
            if taken and self._take_over is not None:
                count = sum(len(ids) for ids in taken.values())
                versions = ", ".join(sorted(taken))
                self._take_over[2](
                    f"took over {count} unfinished meeting(s) of an earlier version ({versions}) "
                    f"under this one ({self._app_version}), left by {executor}, whose process is gone"
                )
                recovered.append(executor)
        return recovered

    def _older(self, statuses: list[WorkflowStatus]) -> list[WorkflowStatus]:
        if self._take_over is None:
            return []
        name = self._take_over[0]
        return [status for status in older_unfinished(statuses, self._app_version) if status.name == name]

    def stop(self) -> None:
        """No more looking for dead processes (waits, bounded, for a look under way to end)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(_STOP_SECONDS)

    def close(self) -> None:
        """Give the lock back: from now on other processes may recover this executor's workflows."""
        self._connection.close()
