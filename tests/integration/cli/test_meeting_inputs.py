"""`summarize` on meetings as recorded: every format, --input-format, --speaker, times on the items, and
files that do not parse refused with exit 2 and one line naming where."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from adapters.cli.exit_codes import EXIT_OK, EXIT_USAGE
from tests.integration.cli.support import OFFLINE_NOTE, ROOT, run

SAMPLES: Final = ROOT / "tests" / "application" / "meetings" / "transcripts"
PYANNOTE: Final = str(SAMPLES / "pyannote.json")
NAMED: Final = ("--speaker", "SPEAKER_00=Priya Raman", "--speaker", "SPEAKER_01=Tom Becker")


def test_a_teams_file_gives_each_item_its_time_and_speakers() -> None:
    ran = run("summarize", str(SAMPLES / "teams.vtt"), "--format", "json")

    assert ran.code == EXIT_OK, ran.err
    assert ran.err == OFFLINE_NOTE
    items = ran.json()["action_items"]
    assert items[0] == {
        "owner": "Tom Becker",
        "task": "fix the flaky checkout test",
        "due": "Wednesday",
        "lines": [3],
        "start": 12.4,
        "end": 16.9,
        "speakers": ["Priya Raman"],
    }
    assert [(item["start"], item["speakers"]) for item in ran.json()["decisions"]] == [
        (27.1, ["Priya Raman"])
    ]


def test_every_format_gives_the_summary_of_its_plain_text_twin() -> None:
    def said(path: Path, *options: str) -> list[object]:
        ran = run("summarize", str(path), "--format", "json", *options)
        assert ran.code == EXIT_OK, ran.err
        document = ran.json()
        return [
            [(i["owner"], i["task"], i["due"], i["lines"], i["speakers"]) for i in document["action_items"]],
            [(d["text"], d["lines"], d["speakers"]) for d in document["decisions"]],
        ]

    twin = said(SAMPLES / "meeting.txt")

    assert said(SAMPLES / "zoom.vtt") == twin
    assert said(SAMPLES / "meeting.srt") == twin
    assert said(SAMPLES / "whisperx.json", *NAMED, "--speaker", "SPEAKER_02=Maya Lind") == twin
    assert said(SAMPLES / "aws-transcribe.json", "--speaker", "spk_0=Priya Raman", "--speaker",
                "spk_1=Tom Becker", "--speaker", "spk_2=Maya Lind") == twin  # fmt: skip


def test_labels_left_unnamed_are_said_once_on_stderr() -> None:
    unnamed = run("summarize", PYANNOTE, "--format", "json")
    partly = run("summarize", PYANNOTE, "--format", "json", *NAMED)

    assert unnamed.code == partly.code == EXIT_OK
    assert unnamed.err == (
        "meeting-agents: warning: the speakers SPEAKER_00, SPEAKER_01, SPEAKER_02 are diarization labels"
        " and stand as their names; name them with --speaker LABEL=NAME\n" + OFFLINE_NOTE
    )
    assert partly.err == (
        "meeting-agents: warning: the speakers SPEAKER_02 are diarization labels and stand as their names;"
        " name them with --speaker LABEL=NAME\n" + OFFLINE_NOTE
    )
    owners = [item["owner"] for item in partly.json()["action_items"]]
    assert owners == ["Tom Becker", "SPEAKER_02", "Maya"]


def test_quote_shows_when_each_item_was_said() -> None:
    ran = run("summarize", str(SAMPLES / "zoom.vtt"), "--quote")

    assert ran.code == EXIT_OK, ran.err
    assert "  1. Tom Becker: fix the flaky checkout test (due Wednesday) [L3 at 00:12-00:16]" in ran.out
    assert (
        "       L3 | [00:12] Priya Raman: Then Tom will fix the flaky checkout test by Wednesday." in ran.out
    )
    assert "[L8 at 1:00:01-1:00:05]" in ran.out


def test_input_format_forces_the_reading() -> None:
    as_text = run("summarize", str(SAMPLES / "zoom.vtt"), "--input-format", "text", "--format", "json")
    as_srt = run("summarize", str(SAMPLES / "zoom.vtt"), "--input-format", "srt")

    assert as_text.code == EXIT_OK, as_text.err
    # Read as plain text, the cue lines are lines of their own and no item has a time.
    assert {item["start"] for item in as_text.json()["action_items"]} == {None}
    assert as_srt.code == EXIT_USAGE
    assert as_srt.err_lines == [
        f"meeting-agents: error: TRANSCRIPT_FILE {str(SAMPLES / 'zoom.vtt')!r}: cue 1 (line 1): a SRT cue"
        " needs a timing line (start --> end), found 'WEBVTT'"
    ]


def test_a_file_that_does_not_parse_exits_2_naming_its_cue(tmp_path: Path) -> None:
    broken = tmp_path / "broken.vtt"
    broken.write_text(
        "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.000\nAna: hi\n\n2\n00:00:09.000 --> 00:00:03.000\nBen: yo\n"
    )
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"segments": [{"start": 0, "end": 1, "speaker": "A"}]}')

    for path, where in ((broken, "cue 2 (line 8): ends (00:00:03.000) before it starts (00:00:09.000)"),
                        (wrong, "segment 1: has no text")):  # fmt: skip
        ran = run("summarize", str(path))
        assert ran.code == EXIT_USAGE
        assert ran.err == f"meeting-agents: error: TRANSCRIPT_FILE {str(path)!r}: {where}\n"
        assert ran.out == ""


def test_a_speaker_the_file_does_not_have_is_refused() -> None:
    ran = run("summarize", PYANNOTE, "--speaker", "SPEAKER_09=Ana")
    bad = run("summarize", PYANNOTE, "--speaker", "SPEAKER_00")

    assert ran.code == bad.code == EXIT_USAGE
    assert ran.err == (
        f"meeting-agents: error: --speaker SPEAKER_09=Ana: TRANSCRIPT_FILE {PYANNOTE!r} has no speaker"
        " 'SPEAKER_09' (its speakers: SPEAKER_00, SPEAKER_01, SPEAKER_02)\n"
    )
    assert bad.err.startswith("meeting-agents: error: argument --speaker: expected LABEL=NAME")


def test_huge_files_are_refused_in_one_line_within_the_limits(tmp_path: Path) -> None:
    cues = "".join(f"{n}\n00:{n // 60 % 60:02d}:{n % 60:02d},000 --> 00:{n // 60 % 60:02d}:{n % 60:02d},500\n"
                   f"Ana: point {n}\n\n" for n in range(1, 200_000))  # fmt: skip
    many = tmp_path / "many.srt"
    many.write_text(cues + "200000\n00:00:01,000 --> 00:00:00,500\nAna: the last one\n")
    big = tmp_path / "big.vtt"
    big.write_bytes(b"WEBVTT\n\n" + b"x" * (50 * 1024 * 1024))

    for path, why in ((many, "cue 200000 (line 799998): ends"),
                      (big, "larger than agent.max_transcript_bytes")):  # fmt: skip
        ran = run("summarize", str(path))
        assert ran.code == EXIT_USAGE
        assert len(ran.err.splitlines()) == 1
        assert why in ran.err
