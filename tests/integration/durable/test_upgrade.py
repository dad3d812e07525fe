"""A batch killed, the package upgraded, the same command again: the new version finishes what is left."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.integration.durable.support import (
    REQUESTS_PER_TRANSCRIPT,
    TRANSCRIPTS,
    CountingGateway,
    finish,
    gateway_environment,
    index,
    start,
    write_transcripts,
)

pytestmark = pytest.mark.slow


def test_a_batch_killed_and_run_again_after_an_upgrade_finishes_what_the_old_version_left(
    tmp_path: Path,
) -> None:
    folder = write_transcripts(tmp_path / "in")
    out = tmp_path / "out"
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1")
        old = start(
            "batch", str(folder), "--out", str(out), environ={**environ, "DBOS__APPVERSION": "agents-v1"}
        )
        # Mid-way: the first transcript done, the second one's first request in flight.
        gateway.kill_at(REQUESTS_PER_TRANSCRIPT + 1, old.pid)
        assert finish(old).code == -signal.SIGKILL
        # The bounded wait of finish fails the test if the new version waits for the old one's work.
        new = finish(
            start(
                "batch", str(folder), "--out", str(out), environ={**environ, "DBOS__APPVERSION": "agents-v2"}
            )
        )
    assert new.code == 0, new.err
    assert sorted(line["status"] for line in index(out)) == ["done"] * len(TRANSCRIPTS)
    assert len(set(gateway.completed)) == len(gateway.completed), "a completed request was sent again"
    assert len(gateway.completed) == len(TRANSCRIPTS) * REQUESTS_PER_TRANSCRIPT
    said = [line for line in new.err_lines if "took over" in line]
    assert len(said) == 1, new.err
    assert (
        "took over 1 unfinished meeting(s) of an earlier version (agents-v1) under this one (agents-v2)"
        in said[0]
    )
