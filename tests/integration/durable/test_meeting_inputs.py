"""`meeting-agents batch` over meetings as recorded: captions and diarized JSON summarized with their times,
the labels named by --speaker, and a file that does not parse refused before any request."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Final

import pytest

from tests.integration.cli.support import ROOT, run
from tests.integration.durable.support import CountingGateway, gateway_environment, index, run_batch

pytestmark = pytest.mark.slow

SAMPLES: Final = ROOT / "tests" / "application" / "meetings" / "transcripts"


def test_a_batch_reads_captions_and_diarized_json_with_their_speakers_named(
    tmp_path: Path, out: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("teams.vtt", "pyannote.json"):
        shutil.copy(SAMPLES / name, folder / name)
    named = ("--speaker", "SPEAKER_01=Tom Becker", "--speaker", "SPEAKER_02=Maya Lind")

    with CountingGateway() as gateway:
        ran = run_batch(
            "batch", str(folder), "--out", str(out), *named, environ=gateway_environment(gateway.base_url)
        )

    assert ran.code == 0, ran.err
    assert ran.err.splitlines()[0] == (
        "meeting-agents: warning: the speakers SPEAKER_00 of 1 of the transcripts are diarization labels"
        " and stand as their names; name them with --speaker LABEL=NAME"
    )
    assert {line["status"] for line in index(out)} == {"done"}
    for name in ("teams", "pyannote"):
        summary = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        first = summary["action_items"][0]
        assert (first["owner"], first["start"], first["end"]) == ("Tom Becker", 12.4, 16.9)
        maya = summary["action_items"][1]
        assert (maya["owner"], maya["speakers"]) == ("Maya Lind", ["Maya Lind"])


def test_a_batch_refuses_a_file_that_does_not_parse_before_any_request(tmp_path: Path) -> None:
    (tmp_path / "good.vtt").write_text((SAMPLES / "zoom.vtt").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "bad.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\n\n", encoding="utf-8")

    ran = run("batch", str(tmp_path), "--out", str(tmp_path / "out"))

    assert ran.code == 2
    assert (
        ran.err == f"meeting-agents: error: PATH {str(tmp_path / 'bad.srt')!r}: cue 1 (line 2): has no text\n"
    )
    assert not (tmp_path / "out").exists()


def test_the_same_file_with_its_speakers_named_is_another_meeting_and_runs_again(
    tmp_path: Path, out: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLES / "pyannote.json", folder / "pyannote.json")
    named = ("--speaker", "SPEAKER_01=Tom Becker", "--speaker", "SPEAKER_02=Maya Lind")

    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        unnamed = run_batch("batch", str(folder), "--out", str(out), environ=environ)
        first = len(gateway.completed)
        again = run_batch("batch", str(folder), "--out", str(out), environ=environ)
        second = len(gateway.completed)
        renamed = run_batch("batch", str(folder), "--out", str(out), *named, environ=environ)

    assert unnamed.code == again.code == renamed.code == 0, renamed.err
    assert second == first, "the same file read the same way was summarized twice"
    assert len(gateway.completed) > second
    summary = json.loads((out / "pyannote.json").read_text(encoding="utf-8"))
    assert [item["owner"] for item in summary["action_items"]][:2] == ["Tom Becker", "Maya Lind"]
