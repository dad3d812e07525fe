"""`meeting-agents batch` keeps every input rule `summarize` keeps, per file, before any request: the size
cap read without reading past it (/dev/zero, an endless pipe), the encoding, the long-transcript warning."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.integration.cli.support import run
from tests.integration.durable.support import (
    TRANSCRIPTS,
    CountingGateway,
    gateway_environment,
    index,
    run_batch,
)

pytestmark = pytest.mark.slow

# Above every good transcript, so only the long one is refused.
_CAP = max(len(text.encode()) for text in TRANSCRIPTS.values()) + 10


def _over_the_cap(tmp_path: Path) -> str:
    path = tmp_path / "long.txt"
    first = b"Ana: we decided to ship it.\n"
    path.write_bytes(first + b"x" * (_CAP + 1 - len(first)))
    assert path.stat().st_size == _CAP + 1
    return str(path)


@pytest.mark.parametrize("source", ["/dev/zero", "a file one byte over the cap", "a file among good ones"])
def test_a_transcript_over_max_transcript_bytes_is_refused_before_any_request(
    tmp_path: Path, folder: Path, source: str
) -> None:
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        if source == "/dev/zero":
            # Endless: read whole it would run out of memory; the default 50 MiB cap stops it.
            paths = [str(folder), "/dev/zero"]
        else:
            environ["AGENT_MAX_TRANSCRIPT_BYTES"] = str(_CAP)
            long = _over_the_cap(tmp_path)
            paths = [long] if source.startswith("a file one") else [str(folder), long]
        ran = run("batch", *paths, "--out", str(tmp_path / "out"), environ=environ)
    assert ran.code == 2, ran.err
    assert len(ran.err_lines) == 1
    assert "larger than agent.max_transcript_bytes" in ran.err
    assert gateway.arrivals == 0
    assert not (tmp_path / "out" / "index.jsonl").exists()


def test_a_pipe_that_never_ends_is_refused_after_the_cap(tmp_path: Path) -> None:
    fifo = tmp_path / "endless.txt"
    os.mkfifo(fifo)
    stop = threading.Event()

    def write_forever() -> None:
        # Blocks until the batch opens the pipe; ends when the batch closes it (a broken pipe).
        try:
            with fifo.open("wb") as pipe:
                while not stop.is_set():
                    pipe.write(b"Ana: and again.\n" * 64)
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=write_forever, daemon=True)
    writer.start()
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_MAX_TRANSCRIPT_BYTES="4096")
        ran = run("batch", str(fifo), "--out", str(tmp_path / "out"), environ=environ)
    stop.set()
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert ran.code == 2, ran.err
    assert "larger than agent.max_transcript_bytes (4,096 bytes)" in ran.err
    assert gateway.arrivals == 0


def test_a_transcript_in_another_encoding_is_refused_as_summarize_refuses_it(
    tmp_path: Path, folder: Path
) -> None:
    (folder / "utf16.txt").write_bytes("Ana: on y va\n".encode("utf-16"))
    with CountingGateway() as gateway:
        ran = run(
            "batch",
            str(folder),
            "--out",
            str(tmp_path / "out"),
            environ=gateway_environment(gateway.base_url),
        )
    assert ran.code == 2, ran.err
    assert len(ran.err_lines) == 1
    assert "UTF-16 text; save it as UTF-8" in ran.err
    assert gateway.arrivals == 0


def test_long_transcripts_get_one_warning_before_the_batch_runs(tmp_path: Path, folder: Path) -> None:
    longest = max(TRANSCRIPTS, key=lambda name: len(TRANSCRIPTS[name]))
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_TRANSCRIPT_WARNING_CHARS="10")
        ran = run_batch("batch", str(folder), "--out", str(tmp_path / "out"), environ=environ)
    assert ran.code == 0, ran.err
    warnings = [line for line in ran.err.splitlines() if "transcript_warning_chars" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"meeting-agents: warning: {len(TRANSCRIPTS)} transcripts are over ")
    assert f"{str(folder / longest)!r}, {len(TRANSCRIPTS[longest]):,} characters" in warnings[0]
    assert sorted(line["status"] for line in index(tmp_path / "out")) == ["done"] * len(TRANSCRIPTS)
