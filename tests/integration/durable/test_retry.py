"""`meeting-agents batch --retry KEY`: one failed meeting run again on its own, the others as recorded."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from tests.integration.durable.support import (
    echo_gateway,
    gateway_environment,
    index,
    run_batch,
    sha256,
    write_transcripts,
)
from tests.support.upstreams import Answer, FakeServer, RecordedRequest, echo_route

pytestmark = pytest.mark.slow

MEETINGS = {
    "one.txt": "Ana: We decided to ship on Friday.\nBen: I will write the notes.\n",
    "two.txt": "Cy: We decided to drop the old API.\nDee: I will write the guide.\n",
    "three.txt": "Eve: We decided to keep the demo.\nFay: I will book the room.\n",
}


@attrs.define
class _Gateway:
    """A gateway on 127.0.0.1 that fails every request until told to answer (the same model either way)."""

    answering: bool = False

    def route(self, request: RecordedRequest) -> Answer:
        model = "echo-text" if self.answering else "echo-failed"
        return echo_route(attrs.evolve(request, body={**request.body, "model": model}))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_retry_runs_only_the_named_failed_meeting_again_and_keeps_the_others_as_recorded(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest, out: Path
) -> None:
    folder = write_transcripts(tmp_path / "in", MEETINGS)
    # SQLite: the run database the batch keeps in its output folder; Postgres: a database of the test's own.
    database = [] if backend == "sqlite" else ["--db", request.getfixturevalue("database")]
    gateway = _Gateway()
    with FakeServer(gateway.route) as server:
        environ = gateway_environment(server.base_url, "echo")
        first = run_batch("batch", str(folder), "--out", str(out), *database, environ=environ)
        failed = {Path(line["source"]).name: line for line in index(out)}
        sent_first = len(server.requests)
        gateway.answering = True
        # Named by the first characters of its key, as batch-status and the index show it.
        retried = run_batch(
            "batch",
            str(folder),
            "--out",
            str(out),
            "--retry",
            failed["two.txt"]["key"][:12],
            "--format",
            "json",
            *database,
            environ=environ,
        )
        sent_again = server.requests[sent_first:]

    assert first.code == 1, first.err
    assert {line["status"] for line in failed.values()} == {"failed"}
    assert retried.code == 0, retried.err
    # Only the named meeting's requests went out.
    assert sent_again, "the named meeting was not run again"
    assert all(request.mentions("Cy: We decided") for request in sent_again)
    lines = {Path(line["source"]).name: line for line in index(out)}
    assert lines["two.txt"]["status"] == "done"
    assert json.loads((out / lines["two.txt"]["output"]).read_text(encoding="utf-8"))["sha256"] == sha256(
        MEETINGS["two.txt"]
    )
    # The others stay as the database recorded them: failed, with the same error, nothing written.
    for name in ("one.txt", "three.txt"):
        assert lines[name] == failed[name]
    document = retried.json()
    assert (document["done"], document["failed"], document["already_done"]) == (1, 0, 0)
    assert document["outputs"] == index(out)
    assert retried.err_lines[-1].startswith(
        "meeting-agents: 1 transcripts: 1 done (retried; the other 2 as the run database recorded them); "
    )


def test_a_retry_that_names_no_meeting_of_the_batch_exits_2_before_any_request(tmp_path: Path) -> None:
    folder = write_transcripts(tmp_path / "in", MEETINGS)
    with echo_gateway("echo-text") as (server, environ):
        ran = run_batch(
            "batch",
            str(folder),
            "--out",
            str(tmp_path / "out"),
            "--retry",
            "0123456789abcdef",
            environ=environ,
        )
        both = run_batch(
            "batch", str(folder), "--out", str(tmp_path / "out"), "--retry", "x", "--rerun", environ=environ
        )
        sent = len(server.requests)
    assert ran.code == 2
    assert ran.err_lines == [
        "meeting-agents: error: --retry '0123456789abcdef': no meeting of this batch has that key or source"
    ]
    assert both.code == 2
    assert "not allowed with argument" in both.err
    assert sent == 0
