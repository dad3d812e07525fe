"""Several processes on one Postgres (started here): workers split a batch, each transcript once."""

from __future__ import annotations

import contextlib
import json
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from adapters.durable.liveness import ExecutorInUseError, Liveness
from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import (
    REQUESTS_PER_TRANSCRIPT,
    CountingGateway,
    cut_liveness,
    finish,
    gateway_environment,
    index,
    numbered_meetings,
    run_batch,
    selected,
    start,
    start_worker,
    stored_outcomes,
    until_selected,
    write_numbered_meetings,
    write_transcripts,
)

pytestmark = pytest.mark.slow

_READY: Final = b"taking transcripts"
# A takeover's processes: one transcript each, the dead found within half a second; held requests wait for
# the kill however loaded the machine (no client gives up on one and retries).
_TAKEOVER_LIMITS: Final = {
    "AGENT_BATCH_CONCURRENCY": "1",
    "AGENT_BATCH_RECOVERY_SECONDS": "0.5",
    "AGENT_TIMEOUT_SECONDS": str(PROCESS_TIMEOUT),
}


def _batch(folder: Path, out: Path, database: str, environ: dict[str, str]) -> subprocess.Popen[bytes]:
    """``batch`` over ``folder`` into ``out`` as executor ``batch``, in a process of its own."""
    return start("batch", str(folder), "--out", str(out), "--db", database, "--id", "batch", environ=environ)


def _wait_until_ready(process: subprocess.Popen[bytes]) -> None:
    """Read the worker's stderr until it says it takes work (bounded: a hung start fails the test)."""
    assert process.stderr is not None
    deadline = time.monotonic() + PROCESS_TIMEOUT
    seen = b""
    while _READY not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"the worker did not start: {seen!r}"
        ready, _, _ = select.select([process.stderr], [], [], left)
        if ready:
            line = process.stderr.readline()
            assert line, f"the worker exited: {seen!r}"
            seen += line


def _stop(workers: list[subprocess.Popen[bytes]]) -> list[int]:
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    return [finish(worker).code for worker in workers]


def test_two_workers_and_the_batch_split_the_transcripts_each_summarized_once(
    tmp_path: Path, database: str, out: Path
) -> None:
    meetings, folder = write_numbered_meetings(tmp_path / "in", 6)
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1")
        workers = [start_worker(database, f"worker-{n}", environ) for n in (1, 2)]
        try:
            for worker in workers:
                _wait_until_ready(worker)
            ran = run_batch(
                "batch", str(folder), "--out", str(out), "--db", database, "--id", "batch", environ=environ
            )
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            stopped = [finish(process) for process in workers]
    assert ran.code == 0, ran.err
    assert [done.code for done in stopped] == [0, 0]
    assert sorted(line["status"] for line in index(out)) == ["done"] * len(meetings)
    assert len(set(gateway.completed)) == len(gateway.completed) == len(meetings) * REQUESTS_PER_TRANSCRIPT
    # Each worker says which meetings it took and finished, by id, never their text.
    for number, said in enumerate(stopped, start=1):
        taken = selected(
            database,
            f"SELECT workflow_uuid FROM dbos.workflow_status WHERE executor_id = 'worker-{number}'",  # noqa: S608  # the test's own id
        )
        for (meeting,) in taken:
            assert f"worker worker-{number}: took meeting {meeting}" in said.err
            assert f"worker worker-{number}: finished meeting {meeting}: done" in said.err
        assert not any(text.splitlines()[0] in said.err for text in meetings.values())
    executors = selected(database, "SELECT executor_id FROM dbos.workflow_status")
    assert len(executors) == len(meetings)
    # One transcript at a time per process, six transcripts: more than one process took some.
    assert len({executor for (executor,) in executors}) >= 2
    assert {executor for (executor,) in executors} <= {"worker-1", "worker-2", "batch"}


def test_the_request_rate_limit_holds_across_every_process(tmp_path: Path, database: str) -> None:
    limit = 2
    folder = write_transcripts(tmp_path / "in", numbered_meetings(3))
    with CountingGateway() as gateway:
        environ = gateway_environment(
            gateway.base_url, AGENT_BATCH_CONCURRENCY="1", AGENT_BATCH_REQUESTS_PER_MINUTE=str(limit)
        )
        workers = [start_worker(database, f"worker-{n}", environ) for n in (1, 2)]
        batch = None
        try:
            for worker in workers:
                _wait_until_ready(worker)
            batch = start(
                "batch", str(folder), "--out", str(tmp_path / "out"), "--db", database, environ=environ
            )
            # Wait until the limit is used up and a request has waited a second more while three processes
            # polled the queue: a request the limiter did not hold would have been taken by then.
            deadline = time.monotonic() + PROCESS_TIMEOUT
            held = """SELECT count(*) FROM dbos.workflow_status WHERE queue_name = 'meeting-agents-requests'
                      AND status = 'ENQUEUED' AND created_at < extract(epoch from now()) * 1000 - 1000"""
            taken_query = """SELECT count(*) FROM dbos.workflow_status
                             WHERE queue_name = 'meeting-agents-requests' AND status <> 'ENQUEUED'"""
            while (taken := selected(database, taken_query)[0][0]) < limit or selected(database, held)[0][
                0
            ] == 0:
                assert time.monotonic() < deadline, f"{taken} requests taken, none held back"
                time.sleep(0.1)
            taken = selected(database, taken_query)[0][0]
            arrivals = gateway.arrivals
        finally:
            if batch is not None:
                batch.send_signal(signal.SIGKILL)
                finish(batch)
            _stop(workers)
    assert taken == limit
    assert arrivals <= limit


def _outputs(out: Path) -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in out.glob("*.json")}


@contextlib.contextmanager
def _doomed_and_held_gateways() -> Iterator[tuple[CountingGateway, CountingGateway]]:
    """The doomed process's gateway of its own, which the test tells to kill it at its second request
    (``kill_at``) after answering its first, and the others' gateway, which holds their requests until the
    test releases them: so the doomed process surely holds a transcript when it dies."""
    with CountingGateway() as doomed, CountingGateway() as others:
        others.hold()
        yield doomed, others


def _assert_each_request_answered_once(
    doomed: CountingGateway, others: CountingGateway, meetings: int
) -> None:
    """The doomed process's first request was answered (a step recorded) and its second killed in flight;
    the others replayed the recorded step and sent only the request that never completed: every request of
    every meeting answered exactly once, across both gateways."""
    assert len(doomed.completed) == 1
    assert len(doomed.killed_in_flight) == 1
    completed = doomed.completed + others.completed
    assert len(set(completed)) == len(completed) == meetings * REQUESTS_PER_TRANSCRIPT
    assert doomed.killed_in_flight[0] in others.completed
    assert doomed.completed[0] not in others.completed


def test_a_worker_killed_mid_request_and_never_started_again_has_its_transcripts_finished_by_the_others(
    tmp_path: Path, database: str, out: Path
) -> None:
    meetings, folder = write_numbered_meetings(tmp_path / "in", 4)
    limits = _TAKEOVER_LIMITS
    # The doomed worker surely holds a transcript: one a process, the batch and the survivor one each,
    # the doomed one a third.
    with _doomed_and_held_gateways() as (doomed_gateway, gateway):
        doomed_environ = gateway_environment(doomed_gateway.base_url, **limits)
        environ = gateway_environment(gateway.base_url, **limits)
        doomed = start_worker(database, "worker-doomed", doomed_environ)
        survivor = start_worker(database, "worker-survivor", environ)
        others = [doomed]  # killed in the end if the test failed before they ended
        try:
            doomed_gateway.kill_at(2, doomed.pid)
            for worker in (doomed, survivor):
                _wait_until_ready(worker)
            batch = _batch(folder, out, database, environ)
            others.append(batch)
            assert doomed_gateway.killed.wait(PROCESS_TIMEOUT), "the doomed worker sent no second request"
            assert finish(doomed).code == -signal.SIGKILL
            gateway.release()
            ran = finish(batch)
            # Started again after the others took its transcript over: nothing is left for it to run.
            again = start_worker(database, "worker-doomed", doomed_environ)
            others.append(again)
            _wait_until_ready(again)
            # Then its liveness connection cut (a database restart, a network cut): it can no longer
            # prove it is alive, so it stops (others may take its transcripts over).
            cut = cut_liveness(database, "worker-doomed")
            restarted = finish(again)
        finally:
            gateway.release()
            for process in others:
                if process.returncode is None:
                    process.send_signal(signal.SIGKILL)
                    finish(process)
            _stop([survivor])
    assert ran.code == 0, ran.err
    assert cut == [(True,)]
    assert restarted.code == 1, restarted.err
    assert "worker worker-doomed: the liveness connection to the run database broke" in restarted.err
    assert sorted(line["status"] for line in index(out)) == ["done"] * len(meetings)
    _assert_each_request_answered_once(doomed_gateway, gateway, len(meetings))
    assert doomed_gateway.arrivals == 2  # started again, it sent nothing
    rows = selected(database, "SELECT workflow_uuid, status, executor_id FROM dbos.workflow_status")
    assert len(rows) == len(meetings)
    assert {status for _, status, _ in rows} == {"SUCCESS"}
    assert {executor for _, _, executor in rows} <= {"worker-survivor", "batch"}
    # Each summary written once, whole: one file per transcript, no temporary file left.
    outputs = _outputs(out)
    assert sorted(outputs) == sorted(f"{Path(name).stem}.json" for name in meetings)
    assert {line["key"] for line in index(out)} == {row[0] for row in rows}
    assert {document["sha256"] for document in outputs.values()} == {line["sha256"] for line in index(out)}
    assert not list(out.glob(".*.tmp"))


def test_an_id_a_live_process_holds_is_refused_until_its_connection_ends(database: str) -> None:
    version = "meeting-agents-test"
    holder = Liveness.take(database, "worker-a", 1.0, version)
    try:
        with pytest.raises(ExecutorInUseError, match="'worker-a': another live process runs with this id"):
            Liveness.take(database, "worker-a", 1.0, version, wait_seconds=0.2)
        other = Liveness.take(database, "worker-b", 1.0, version, wait_seconds=0.2)
        other.close()
    finally:
        holder.close()
    # The holder's connection gone (as when its process dies), the id is free again.
    again = Liveness.take(database, "worker-a", 1.0, version, wait_seconds=5)
    again.close()


_SUMMARIES: Final = """SELECT workflow_uuid, status, executor_id FROM dbos.workflow_status
                        WHERE name = 'meeting_agents.summarize' ORDER BY workflow_uuid"""


def test_a_batch_killed_mid_request_and_never_started_again_has_its_transcripts_finished_by_a_worker(
    tmp_path: Path, database: str
) -> None:
    meetings, folder = write_numbered_meetings(tmp_path / "in", 3)
    limits = _TAKEOVER_LIMITS
    # The batch is the doomed process: it surely holds a transcript when it is killed.
    with _doomed_and_held_gateways() as (doomed_gateway, gateway):
        environ = gateway_environment(gateway.base_url, **limits)
        worker = start_worker(database, "worker-survivor", environ)
        batch = None
        try:
            _wait_until_ready(worker)
            batch = _batch(
                folder, tmp_path / "out", database, gateway_environment(doomed_gateway.base_url, **limits)
            )
            doomed_gateway.kill_at(2, batch.pid)
            assert doomed_gateway.killed.wait(PROCESS_TIMEOUT), "the batch sent no second request"
            assert finish(batch).code == -signal.SIGKILL
            gateway.release()
            rows = until_selected(
                database, _SUMMARIES, lambda found: [s for _, s, _ in found] == ["SUCCESS"] * 3
            )
        finally:
            gateway.release()
            if batch is not None and batch.returncode is None:
                batch.send_signal(signal.SIGKILL)
                finish(batch)
            stopped = _stop([worker])
    assert stopped == [0]
    assert {status for _, status, _ in rows} == {"SUCCESS"}
    assert {executor for _, _, executor in rows} == {"worker-survivor"}
    assert [outcome.status for outcome in stored_outcomes(database)] == ["done"] * len(meetings)
    _assert_each_request_answered_once(doomed_gateway, gateway, len(meetings))


_REQUESTS: Final = """SELECT status FROM dbos.workflow_status
                       WHERE name = 'meeting_agents.model_request' ORDER BY status"""


def test_a_worker_taking_over_a_killed_batch_keeps_to_the_request_rate_limit(
    tmp_path: Path, database: str
) -> None:
    folder = write_transcripts(tmp_path / "in", numbered_meetings(2))
    limits = {"AGENT_BATCH_REQUESTS_PER_MINUTE": "1", "AGENT_BATCH_RECOVERY_SECONDS": "0.5"}
    with CountingGateway() as gateway:
        batch = _batch(
            folder,
            tmp_path / "out",
            database,
            gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1", **limits),
        )
        worker = None
        try:
            # The batch holds one transcript, whose first request used the minute's one request and whose
            # second waits on the limiter; the other transcript waits on the queue. Then it dies.
            until_selected(database, _REQUESTS, lambda found: found == [("ENQUEUED",), ("SUCCESS",)])
            batch.send_signal(signal.SIGKILL)
            assert finish(batch).code == -signal.SIGKILL
            worker = start_worker(
                database,
                "worker-survivor",
                gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="2", **limits),
            )
            _wait_until_ready(worker)
            # The worker takes both transcripts, the batch's recovered; each waits for its next request.
            taken_over = until_selected(
                database,
                _SUMMARIES,
                lambda found: [(s, e) for _, s, e in found] == [("PENDING", "worker-survivor")] * 2,
            )
            requests = until_selected(database, _REQUESTS, lambda found: len(found) == 3)
            # The limit counts what the dead batch sent: while the worker polls its queues for a second,
            # nothing more goes out.
            held_until = time.monotonic() + 1.0
            while time.monotonic() < held_until:
                assert gateway.arrivals == 1
                time.sleep(0.1)
            still = selected(database, _REQUESTS)
        finally:
            if batch.returncode is None:
                batch.send_signal(signal.SIGKILL)
                finish(batch)
            stopped = _stop([worker]) if worker is not None else []
    assert stopped == [0]
    assert len(taken_over) == 2
    assert requests == still == [("ENQUEUED",), ("ENQUEUED",), ("SUCCESS",)]
    # The recorded request was replayed, not sent again: the gateway answered one request in all.
    assert gateway.arrivals == len(gateway.completed) == 1
