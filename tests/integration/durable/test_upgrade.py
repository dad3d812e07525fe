"""A batch killed, the package upgraded, the same command again: the new version finishes what is left."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.integration.cli.support import Ran
from tests.integration.durable.support import (
    REQUESTS_PER_TRANSCRIPT,
    TRANSCRIPTS,
    CountingGateway,
    finish,
    gateway_environment,
    index,
    start,
    start_worker,
    until_selected,
    write_numbered_meetings,
)

pytestmark = pytest.mark.slow


def test_a_batch_killed_and_run_again_after_an_upgrade_finishes_what_the_old_version_left(
    folder: Path, out: Path
) -> None:
    new, gateway = _killed_then_run_again_upgraded("batch", str(folder), "--out", str(out))
    _assert_finished_once(new, gateway, out, meetings=len(TRANSCRIPTS), took_over=1)


def _killed_then_run_again_upgraded(*argv: str) -> tuple[Ran, CountingGateway]:
    """``argv`` run as agents-v1 and killed with the first transcript done and the second one's first
    request in flight, then run again as agents-v2 to its end."""
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1")
        old = start(*argv, environ={**environ, "DBOS__APPVERSION": "agents-v1"})
        gateway.kill_at(REQUESTS_PER_TRANSCRIPT + 1, old.pid)
        assert finish(old).code == -signal.SIGKILL
        # The bounded wait of finish fails the test if the new version waits for the old one's work.
        new = finish(start(*argv, environ={**environ, "DBOS__APPVERSION": "agents-v2"}))
    return new, gateway


def _assert_finished_once(
    new: Ran, gateway: CountingGateway, out: Path, *, meetings: int, took_over: int
) -> None:
    """Every meeting done, no completed request sent twice, and one line saying how many meetings of the
    earlier version the new one took over."""
    assert new.code == 0, new.err
    assert sorted(line["status"] for line in index(out)) == ["done"] * meetings
    assert len(set(gateway.completed)) == len(gateway.completed), "a completed request was sent again"
    assert len(gateway.completed) == meetings * REQUESTS_PER_TRANSCRIPT
    said = [line for line in new.err_lines if "took over" in line]
    assert len(said) == 1, new.err
    assert (
        f"took over {took_over} unfinished meeting(s) of an earlier version (agents-v1) "
        "under this one (agents-v2)" in said[0]
    )


_SUMMARIES = """SELECT status, application_version FROM dbos.workflow_status
                WHERE name = 'meeting_agents.summarize' ORDER BY workflow_uuid"""


def test_a_worker_of_the_new_version_takes_over_what_a_killed_batch_of_the_old_one_left(
    tmp_path: Path, database: str
) -> None:
    meetings, folder = write_numbered_meetings(tmp_path / "in", 3)
    limits = {"AGENT_BATCH_CONCURRENCY": "1", "AGENT_BATCH_RECOVERY_SECONDS": "0.5"}
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, **limits)
        old = start(
            "batch",
            str(folder),
            "--out",
            str(tmp_path / "out"),
            "--db",
            database,
            "--id",
            "batch",
            environ={**environ, "DBOS__APPVERSION": "agents-v1"},
        )
        # The first transcript done, the second one's first request in flight, the third queued.
        gateway.kill_at(REQUESTS_PER_TRANSCRIPT + 1, old.pid)
        assert finish(old).code == -signal.SIGKILL
        worker = start_worker(database, "worker-new", {**environ, "DBOS__APPVERSION": "agents-v2"})
        try:
            rows = until_selected(
                database, _SUMMARIES, lambda found: [s for s, _ in found] == ["SUCCESS"] * 3
            )
        finally:
            worker.send_signal(signal.SIGTERM)
            stopped = finish(worker)
    assert stopped.code == 0, stopped.err
    assert sorted(version for _, version in rows) == ["agents-v1", "agents-v2", "agents-v2"]
    assert len(set(gateway.completed)) == len(gateway.completed), "a completed request was sent again"
    assert len(gateway.completed) == len(meetings) * REQUESTS_PER_TRANSCRIPT
    said = [line for line in stopped.err.splitlines() if "took over" in line]
    assert said == [
        "worker worker-new: took over 2 unfinished meeting(s) of an earlier version (agents-v1) "
        "under this one (agents-v2), left by batch, whose process is gone"
    ], stopped.err


def test_a_batch_on_postgres_killed_and_run_again_after_an_upgrade_finishes(
    tmp_path: Path, database: str, out: Path
) -> None:
    meetings, folder = write_numbered_meetings(tmp_path / "in", 3)
    new, gateway = _killed_then_run_again_upgraded(
        "batch", str(folder), "--out", str(out), "--db", database, "--id", "batch"
    )
    _assert_finished_once(new, gateway, out, meetings=len(meetings), took_over=2)
