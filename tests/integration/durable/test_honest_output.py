"""What `meeting-agents batch` says it did: this run's counts and spending, refused options, quiet logs."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from application.meetings.summary import summary_instructions
from tests.integration.cli.support import PROCESS_TIMEOUT, run
from tests.integration.durable.support import (
    REQUESTS_PER_TRANSCRIPT,
    TRANSCRIPTS,
    CountingGateway,
    finish,
    gateway_environment,
    index,
    run_batch,
    start,
    write_transcripts,
)

pytestmark = pytest.mark.slow


def test_the_json_document_counts_what_this_run_did_and_a_rerun_that_sent_nothing_says_so(
    folder: Path, out: Path
) -> None:
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        first = run_batch("batch", str(folder), "--out", str(out), "--format", "json", environ=environ)
        again = run_batch("batch", str(folder), "--out", str(out), "--format", "json", environ=environ)
        sent = len(gateway.completed)
    assert (first.code, again.code) == (0, 0), first.err + again.err
    made, repeated = first.json(), again.json()
    assert sent == len(TRANSCRIPTS) * REQUESTS_PER_TRANSCRIPT
    assert (made["done"], made["already_done"], made["failed"], made["incomplete"]) == (3, 0, 0, 0)
    assert made["requests"] == sent
    # The plain stand-in, as OpenAI, reports no cost: unknown, not free.
    assert made["cost_usd"] is None
    assert (repeated["done"], repeated["already_done"], repeated["requests"]) == (0, 3, 0)
    assert repeated["cost_usd"] is None
    assert [line["source"] for line in made["outputs"]] == [line["source"] for line in index(out)]
    assert {line["status"] for line in repeated["outputs"]} == {"done"}
    closing = again.err_lines[-1]
    assert "this run spent 0 requests" in closing
    assert "cost not reported" in closing
    assert "$0.0000" not in first.err + again.err


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["batch", "IN", "--out", "OUT", "--stream"], "--stream"),
        (["batch", "IN", "--out", "OUT", "--trace"], "--trace"),
        (["worker", "--db", "postgresql://u@127.0.0.1:9/db", "--format", "json"], "--format json"),
        (["worker", "--db", "postgresql://u@127.0.0.1:9/db", "--stream"], "--stream"),
    ],
    ids=["batch-stream", "batch-trace", "worker-json", "worker-stream"],
)
def test_an_option_a_batch_cannot_honour_is_refused_with_one_line(
    tmp_path: Path, folder: Path, arguments: list[str], named: str
) -> None:
    argv = [str(folder) if a == "IN" else str(tmp_path / "out") if a == "OUT" else a for a in arguments]
    with CountingGateway() as gateway:
        ran = run(*argv, environ=gateway_environment(gateway.base_url))
    assert ran.code == 2, ran.err
    assert len(ran.err_lines) == 1
    assert named in ran.err
    assert gateway.arrivals == 0
    assert not (tmp_path / "out" / "index.jsonl").exists()


def test_a_bare_path_for_the_database_gets_the_url_to_type(tmp_path: Path, folder: Path) -> None:
    ran = run("batch", str(folder), "--out", str(tmp_path / "out"), "--db", "runs.sqlite")
    assert ran.code == 2
    assert ran.err_lines == [
        "meeting-agents: error: --db 'runs.sqlite': not a database URL; "
        "for a SQLite file type --db sqlite:///runs.sqlite"
    ]


def test_verbose_and_interrupted_the_batch_logs_no_transcript_or_instructions(tmp_path: Path) -> None:
    marker = "Zanzibar-marker-7781"
    folder = write_transcripts(
        tmp_path / "in", {"one.txt": f"Ana: We decided on {marker}.\nBo: I will go.\n"}
    )
    with CountingGateway() as gateway:
        gateway.hold()
        process = start(
            "batch",
            str(folder),
            "--out",
            str(tmp_path / "out"),
            "-v",
            environ=gateway_environment(gateway.base_url),
        )
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while gateway.arrivals == 0:
            assert time.monotonic() < deadline, "no request arrived"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        ran = finish(process)
        gateway.release()
    assert ran.code == 130, ran.err
    assert marker not in ran.err + ran.out
    assert summary_instructions()[:60] not in ran.err
    assert index(tmp_path / "out")[0]["status"] == "unfinished"
