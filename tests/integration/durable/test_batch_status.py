"""`meeting-agents batch-status`: the meetings of a run database by state, with their totals."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.integration.cli.support import run
from tests.integration.durable.support import (
    REQUESTS_PER_TRANSCRIPT,
    TRANSCRIPTS,
    CountingGateway,
    echo_gateway,
    finish,
    gateway_environment,
    index,
    run_batch,
    start,
    write_transcripts,
)

pytestmark = pytest.mark.slow


def test_the_status_lists_done_running_and_failed_meetings_with_the_failure_and_totals(
    tmp_path: Path,
    folder: Path,
) -> None:
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1")
        killed = start(
            "batch", str(folder), "--out", str(tmp_path / "out"), "--db", database, environ=environ
        )
        # The first transcript done, the second one's first request in flight.
        gateway.kill_at(REQUESTS_PER_TRANSCRIPT + 1, killed.pid)
        assert finish(killed).code == -signal.SIGKILL
    # Another process (another --id): it leaves the killed one's meeting as it was, taken and unfinished.
    failing = write_transcripts(
        tmp_path / "failing", {"odd.txt": "Gil: We decided to fail.\nHal: I will see.\n"}
    )
    with echo_gateway("echo-failed") as (_, environ):
        failed = run_batch(
            "batch",
            str(failing),
            "--out",
            str(tmp_path / "out-2"),
            "--db",
            database,
            "--id",
            "other",
            environ=environ,
        )
    assert failed.code == 1, failed.err
    [failed_line] = index(tmp_path / "out-2")

    text = run("batch-status", "--db", database)
    listed = run("batch-status", "--db", database, "--format", "json")

    assert text.code == listed.code == 0, text.err + listed.err
    document = listed.json()
    assert document["totals"] == {"done": 1, "incomplete": 0, "failed": 1, "pending": 0, "running": 1}
    states = {meeting["state"]: meeting for meeting in document["meetings"]}
    assert states["failed"]["key"] == failed_line["key"]
    assert states["failed"]["error"] == failed_line["error"]
    assert "\n" not in states["failed"]["error"]
    assert states["running"]["executor"] is not None
    lines = text.out.splitlines()
    assert lines[-1] == "3 meetings: 1 done, 0 incomplete, 1 failed, 0 pending, 1 running"
    assert lines[0] == f"failed     {failed_line['key']}: {failed_line['error']}"
    # The status names meetings by their keys, never by what was said in them.
    for said in (*TRANSCRIPTS.values(), "Gil: We decided to fail."):
        assert said.splitlines()[0] not in text.out + json.dumps(document)


def test_a_database_no_batch_ran_on_is_one_line_and_exit_2(tmp_path: Path) -> None:
    ran = run("batch-status", "--db", f"sqlite:///{tmp_path / 'none.sqlite'}")
    assert ran.code == 2
    assert len(ran.err_lines) == 1
    assert "no run database there" in ran.err
