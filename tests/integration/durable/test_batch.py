"""`meeting-agents batch` on SQLite: every transcript once, resumable after SIGKILL, nothing sent twice."""

from __future__ import annotations

import json
import random
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
    numbered_meetings,
    run_batch,
    sha256,
    start,
    stored_values,
    write_numbered_meetings,
    write_transcripts,
)

pytestmark = pytest.mark.slow

PLANTED_KEY = "sk-PLANTED-durable-4242"


def _expected_owner(text: str) -> str:
    return text.splitlines()[1].split(":", 1)[0]


def _assert_every_transcript_summarized(out: Path, folder: Path) -> None:
    lines = index(out)
    assert sorted(line["source"] for line in lines) == sorted(str(folder / name) for name in TRANSCRIPTS)
    for line in lines:
        name = Path(line["source"]).name
        assert line["status"] == "done"
        assert line["sha256"] == sha256(TRANSCRIPTS[name])
        summary = json.loads((out / line["output"]).read_text(encoding="utf-8"))
        assert summary["source"] == line["source"]
        assert summary["sha256"] == line["sha256"]
        assert summary["complete"] is True
        assert [item["owner"] for item in summary["action_items"]] == [_expected_owner(TRANSCRIPTS[name])]
    assert not list(out.glob(".*.tmp")), "a temporary file was left behind"


def test_a_batch_summarizes_each_transcript_once_and_a_second_run_sends_nothing(
    tmp_path: Path, folder: Path, out: Path
) -> None:
    (tmp_path / "copy.txt").write_text(TRANSCRIPTS["standup.txt"], encoding="utf-8")
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        first = run_batch(
            "batch", str(folder), str(tmp_path / "copy.txt"), "--out", str(out), environ=environ
        )
        sent = len(gateway.completed)
        again = run_batch(
            "batch", str(folder), str(tmp_path / "copy.txt"), "--out", str(out), environ=environ
        )
    assert first.code == 0, first.err
    assert sent == len(TRANSCRIPTS) * REQUESTS_PER_TRANSCRIPT
    assert len(gateway.completed) == sent, "the second run sent requests for transcripts already done"
    assert again.code == 0, again.err
    copy = json.loads((out / "copy.json").read_text(encoding="utf-8"))
    standup = json.loads((out / "standup.json").read_text(encoding="utf-8"))
    assert copy["sha256"] == standup["sha256"]
    assert {**copy, "source": None} == {**standup, "source": None}
    # A line per finished transcript on stderr when it is not a terminal.
    assert sum(line.startswith("done ") for line in first.err.splitlines()) == len(TRANSCRIPTS) + 1
    assert first.out == ""


def test_killed_during_requests_the_same_command_finishes_and_no_completed_request_is_sent_again(
    folder: Path, out: Path
) -> None:
    rng = random.Random(23)  # noqa: S311  # where to kill, not a secret
    with CountingGateway() as gateway:
        # One transcript at a time, so every answer sent before a kill was recorded before the next request.
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1")
        kills = 0
        while True:
            process = start("batch", str(folder), "--out", str(out), environ=environ)
            if kills < 3:
                # Somewhere in the next few requests: mid-transcript or at a transcript's first request.
                gateway.kill_at(gateway.arrivals + rng.randint(1, 4), process.pid)
            ran = finish(process)
            if ran.code != -signal.SIGKILL:
                break
            kills += 1
    assert ran.code == 0, ran.err
    assert kills == 3
    assert len(gateway.killed_in_flight) == kills
    assert len(set(gateway.completed)) == len(gateway.completed), "a completed request was sent again"
    assert len(gateway.completed) == len(TRANSCRIPTS) * REQUESTS_PER_TRANSCRIPT
    _assert_every_transcript_summarized(out, folder)


def test_killed_while_writing_summaries_nothing_is_half_written(tmp_path: Path, out: Path) -> None:
    transcripts, folder = write_numbered_meetings(tmp_path / "in", 8)
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="8")
        process = start("batch", str(folder), "--out", str(out), environ=environ)
        assert process.stderr is not None
        # The first finished transcript's line: the others are being written around now.
        assert process.stderr.readline().startswith(b"done ")
        process.send_signal(signal.SIGKILL)
        assert finish(process).code == -signal.SIGKILL
        for written in out.glob("*.json"):
            json.loads(written.read_text(encoding="utf-8"))  # whole, or not there at all
        ran = run_batch("batch", str(folder), "--out", str(out), environ=environ)
    assert ran.code == 0, ran.err
    # Killed at any moment, an answer the gateway finished sending may not have reached the run's
    # database yet, so it may be asked for again (the strict check is the test above, which kills
    # only with a request in flight); a transcript's summary is still written once, whole.
    assert sorted(line["status"] for line in index(out)) == ["done"] * len(transcripts)
    assert not list(out.glob(".*.tmp"))


def test_a_batch_budget_starts_no_transcript_once_it_is_spent(tmp_path: Path, out: Path) -> None:
    folder = write_transcripts(tmp_path / "in", numbered_meetings(5))
    with CountingGateway() as gateway:
        # One at a time, two queued at a time: the first to finish spends the budget, the second still runs.
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_CONCURRENCY="1")
        ran = run_batch("batch", str(folder), "--out", str(out), "--max-tokens", "1", environ=environ)
    assert ran.code == 3, ran.err
    lines = index(out)
    assert [line["status"] for line in lines] == ["done", "done", "not_started", "not_started", "not_started"]
    assert all("output" not in line for line in lines[2:])
    assert len(gateway.completed) == 2 * REQUESTS_PER_TRANSCRIPT
    spent = sum(line["usage"]["total_tokens"] for line in lines[:2])
    assert spent > 1
    assert f"{spent:,} tokens" in ran.err_lines[-1]
    assert sorted(path.name for path in out.glob("*.json")) == ["meeting-0.json", "meeting-1.json"]


@pytest.mark.parametrize(
    ("model", "code", "status"), [("echo-text", 0, "done"), ("echo-failed", 1, "failed")]
)
def test_the_run_database_and_the_summaries_hold_no_api_key(
    tmp_path: Path, model: str, code: int, status: str, out: Path
) -> None:
    folder = write_transcripts(tmp_path / "in", {"one.txt": TRANSCRIPTS["standup.txt"]})
    with echo_gateway(model, PLANTED_KEY) as (echo, environ):
        ran = run_batch("batch", str(folder), "--out", str(out), "-v", environ=environ)
        assert any(PLANTED_KEY in request.headers.get("authorization", "") for request in echo.requests)
    assert ran.code == code, ran.err
    assert index(out)[0]["status"] == status
    assert PLANTED_KEY not in ran.out + ran.err
    for value in stored_values(out / ".runs.sqlite"):
        assert PLANTED_KEY.encode() not in value
    for written in out.iterdir():
        if written.is_file() and written.suffix != ".sqlite":
            assert PLANTED_KEY not in written.read_text(encoding="utf-8")


def test_a_second_run_tries_the_failed_transcripts_again(tmp_path: Path, out: Path) -> None:
    folder = write_transcripts(tmp_path / "in", {"one.txt": TRANSCRIPTS["standup.txt"]})
    with echo_gateway("echo-failed") as (echo, failing):
        first = run_batch("batch", str(folder), "--out", str(out), environ=failing)
        first_status = index(out)[0]["status"]
        sent_first = len(echo.requests)
        again = run_batch(
            "batch", str(folder), "--out", str(out), environ={**failing, "AGENT_MODEL": "echo-text"}
        )
    assert (first.code, first_status) == (1, "failed"), first.err
    assert index(out)[0]["status"] == "done"
    assert again.code == 0, again.err
    assert sent_first >= 1
    assert len(echo.requests) > sent_first, "the failed transcript was not tried again"
    assert json.loads((out / "one.json").read_text(encoding="utf-8"))["sha256"] == sha256(
        TRANSCRIPTS["standup.txt"]
    )


# ---------------------------------------------------------------- bad input: exit 2, before any request


def _unwritable_out(tmp_path: Path) -> list[str]:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    return ["--out", str(tmp_path / "a-file" / "out")]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (lambda tmp: [str(tmp / "missing.txt"), "--out", str(tmp / "out")], "no such file or folder"),
        (lambda tmp: [str(tmp / "latin1.txt"), "--out", str(tmp / "out")], "not UTF-8"),
        (
            lambda tmp: [str(tmp / "empty-folder"), "--out", str(tmp / "out")],
            "a folder with no transcript (*.txt, *.md, *.vtt, *.srt, *.json)",
        ),
        (lambda tmp: [str(tmp / "blank.txt"), "--out", str(tmp / "out")], "empty"),
        (lambda tmp: [str(tmp / "in"), *_unwritable_out(tmp)], "cannot be written"),
        (lambda tmp: [str(tmp / "in"), "--out", str(tmp / "out"), "--db", "mysql://h/db"], "expected sqlite"),
        (
            lambda tmp: [str(tmp / "in"), "--out", str(tmp / "out"), "--db", f"sqlite:///{tmp}/no/such/x.db"],
            "does not exist",
        ),
        (lambda tmp: [str(tmp / "in"), "--out", str(tmp / "out"), "--db", "postgresql://:x@/"], "host"),
    ],
    ids=[
        "missing",
        "not-utf8",
        "empty-folder",
        "empty-file",
        "out-unwritable",
        "db-scheme",
        "db-folder",
        "db-host",
    ],
)
def test_bad_input_exits_2_with_one_line_before_any_request(
    tmp_path: Path, arguments: object, named: str
) -> None:
    write_transcripts(tmp_path / "in")
    (tmp_path / "latin1.txt").write_bytes("Zoë: on y va\n".encode("latin-1"))
    (tmp_path / "empty-folder").mkdir()
    (tmp_path / "blank.txt").write_text("  \n", encoding="utf-8")
    assert callable(arguments)
    with CountingGateway() as gateway:
        ran = run("batch", *arguments(tmp_path), environ=gateway_environment(gateway.base_url))
    assert ran.code == 2
    assert len(ran.err_lines) == 1
    assert named in ran.err
    assert gateway.arrivals == 0


def test_a_database_that_cannot_be_reached_exits_2_before_any_request(tmp_path: Path, folder: Path) -> None:
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        # Port 9 on the loopback (discard): nothing listens there in a test machine.
        ran = run_batch(
            "batch",
            str(folder),
            "--out",
            str(tmp_path / "out"),
            "--db",
            "postgresql://u:pw@127.0.0.1:9/x",
            environ=environ,
        )
    assert ran.code == 2, ran.err
    assert len(ran.err_lines) == 1
    assert "cannot be used" in ran.err
    assert "pw" not in ran.err
    assert gateway.arrivals == 0


def test_paths_can_come_from_stdin(folder: Path, out: Path) -> None:
    listed = "\n".join(str(folder / name) for name in TRANSCRIPTS).encode()
    with CountingGateway() as gateway:
        ran = run_batch(
            "batch", "-", "--out", str(out), environ=gateway_environment(gateway.base_url), stdin=listed
        )
    assert ran.code == 0, ran.err
    _assert_every_transcript_summarized(out, folder)
