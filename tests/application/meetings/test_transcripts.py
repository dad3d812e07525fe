"""Transcript import: each format read to numbered speaker lines, broken files refused where they broke."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from application import Transcript, TranscriptError, TranscriptLine
from application.meetings.transcripts import FORMATS, MERGE_GAP_SECONDS, TranscriptFormat, detect_format
from tests.application.strategies import (
    CAPTION_WRITERS,
    Cue,
    cue_lists,
    diarized_documents,
    spoilt_captions,
    teams_vtt,
)

SAMPLES: Final = Path(__file__).parent / "transcripts"


def _sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def _well_formed(transcript: Transcript) -> None:
    numbers = [line.number for line in transcript.lines]
    assert numbers == list(range(1, len(numbers) + 1))
    starts = [line.start for line in transcript.lines if line.start is not None]
    assert starts == sorted(starts)
    assert all(line.end is None or line.start is None or line.end >= line.start for line in transcript.lines)
    # Each line reaches the model as one line of the numbered frame.
    assert all(len(framed.splitlines()) <= 1 for framed in transcript.framed_lines())


# ---------------------------------------------------------------- each format


def test_plain_text_is_numbered_as_the_summary_numbers_it() -> None:
    text = "Standup notes\n\n[00:12] Ana: Ben will fix it.\r\nBen: Sure.\nno speaker here"

    transcript = Transcript.parse(text)

    assert transcript.format == "text"
    assert transcript.lines == (
        TranscriptLine(1, None, "Standup notes"),
        TranscriptLine(2, None, ""),
        TranscriptLine(3, "Ana", "Ben will fix it."),
        TranscriptLine(4, "Ben", "Sure."),
        TranscriptLine(5, None, "no speaker here"),
    )
    # What the model reads is the text as written, line for line.
    assert transcript.framed_lines() == tuple(text.splitlines())


def test_a_teams_file_joins_one_speakers_cues_and_reads_its_voice_tags() -> None:
    transcript = Transcript.parse(_sample("teams.vtt"))

    assert transcript.format == "vtt"
    assert transcript.lines[0] == TranscriptLine(
        1, "Priya Raman", "Morning, everyone. Quick round, then the release question.", 0.0, 5.0
    )
    # The cue written without its closing </v> reads as the others do.
    assert transcript.lines[3] == TranscriptLine(
        4, "Maya Lind", "I'll update the release notes by Thursday noon.", 17.5, 21.3
    )
    assert transcript.participants == ("Priya Raman", "Tom Becker", "Maya Lind")
    assert transcript.unnamed_speakers == ()


def test_the_model_reads_a_short_time_never_a_cue_id_or_a_full_timestamp() -> None:
    framed = Transcript.parse(_sample("teams.vtt")).framed_lines()

    assert framed[1] == (
        "[00:06] Tom Becker: The flaky checkout test failed twice more overnight, always on the payment step."
    )
    assert framed[-1].startswith("[1:00:01] Priya Raman: Action: Maya")
    assert not any("-->" in line or "9f1c2b7e" in line or "00:00:06.200" in line for line in framed)


@pytest.mark.parametrize(
    ("name", "format", "names"),
    [
        ("zoom.vtt", "vtt", None),
        ("meeting.srt", "srt", None),
        ("openai-diarized.json", "json", {"A": "Priya Raman", "B": "Tom Becker", "C": "Maya Lind"}),
        (
            "pyannote.json",
            "json",
            {"SPEAKER_00": "Priya Raman", "SPEAKER_01": "Tom Becker", "SPEAKER_02": "Maya Lind"},
        ),
        (
            "whisperx.json",
            "json",
            {"SPEAKER_00": "Priya Raman", "SPEAKER_01": "Tom Becker", "SPEAKER_02": "Maya Lind"},
        ),
        (
            "aws-transcribe.json",
            "json",
            {"spk_0": "Priya Raman", "spk_1": "Tom Becker", "spk_2": "Maya Lind"},
        ),
    ],
)
def test_every_format_reads_to_the_lines_of_its_plain_text_twin(
    name: str, format: TranscriptFormat, names: dict[str, str] | None
) -> None:
    twin = Transcript.parse(_sample("meeting.txt"))

    transcript = Transcript.parse(_sample(name), speakers=names)

    assert transcript.format == format
    assert [(line.speaker, line.text) for line in transcript.lines] == [
        (line.speaker, line.text) for line in twin.lines
    ]
    assert [(line.start, line.end) for line in transcript.lines][2] == pytest.approx((12.4, 16.9), abs=0.01)
    _well_formed(transcript)


def test_diarization_labels_stand_as_names_until_mapped() -> None:
    text = _sample("aws-transcribe.json")

    unnamed = Transcript.parse(text)
    named = Transcript.parse(text, speakers={"spk_0": "Priya Raman"})

    assert unnamed.participants == unnamed.unnamed_speakers == ("spk_0", "spk_1", "spk_2")
    assert named.participants == ("Priya Raman", "spk_1", "spk_2")
    assert named.unnamed_speakers == ("spk_1", "spk_2")
    assert named.framed_lines()[0].startswith("[00:00] Priya Raman: Morning, everyone.")
    # AWS punctuation items stick to the word before them.
    assert named.lines[-1].text == "Action: Maya to book the retro room for next Tuesday."


def test_a_mapping_renames_plain_text_speakers_too() -> None:
    transcript = Transcript.parse("SPEAKER_00: I will send it.\nnote", speakers={"SPEAKER_00": "Ana"})

    assert transcript.lines[0].speaker == "Ana"
    assert transcript.framed_lines() == ("Ana: I will send it.", "note")


def test_the_format_is_found_from_the_content_the_name_only_a_hint() -> None:
    assert detect_format(_sample("zoom.vtt"), "notes.txt") == "vtt"
    assert detect_format(_sample("meeting.srt"), "meeting.vtt") == "srt"
    assert detect_format(_sample("pyannote.json"), "meeting.txt") == "json"
    assert detect_format("[00:01] Ana: hi", "meeting.txt") == "text"
    assert detect_format("Ana: hi", "meeting.vtt") == "vtt"
    with pytest.raises(TranscriptError, match="starts with WEBVTT"):
        Transcript.parse("Ana: hi", name="meeting.vtt")
    # Forced, the format is what it is told.
    assert Transcript.parse(_sample("zoom.vtt"), format="text").format == "text"


def test_a_line_break_inside_a_speaker_or_a_text_never_splits_a_framed_line() -> None:
    segments = [{"start": 0, "end": 1, "text": "ship\u2028it\r\nnow", "speaker": "Ana\nL7 | Souza"}]

    transcript = Transcript.parse(
        json.dumps({"segments": segments}), speakers={"Ana L7 | Souza": "Ana\x85Souza"}
    )

    assert transcript.framed_lines() == ("[00:00] Ana Souza: ship it now",)


def test_webvtt_hours_are_optional_and_cue_settings_are_read_past() -> None:
    text = (
        "WEBVTT Kind: captions\n\nNOTE written by hand\n\n"
        "00:01.500 --> 00:04.000 align:start position:10%\n<v.loud Ana Souza>Hello &amp; welcome\n\n"
        "1:02:03.000 --> 1:02:05.250\n<c.yellow>Ben:</c> <i>bye</i>\n"
    )

    lines = Transcript.parse(text).lines

    assert lines == (
        TranscriptLine(1, "Ana Souza", "Hello & welcome", 1.5, 4.0),
        TranscriptLine(2, "Ben", "bye", 3723.0, 3725.25),
    )


def test_consecutive_cues_of_one_speaker_join_only_within_two_seconds() -> None:
    cues = [
        Cue("Ana", "one", 0.0, 1.0),
        Cue("Ana", "two", 1.0 + MERGE_GAP_SECONDS, 4.0),
        Cue("Ana", "three", 4.0 + MERGE_GAP_SECONDS + 0.001, 7.0),
        Cue("Ben", "four", 7.0, 8.0),
    ]

    lines = Transcript.parse(teams_vtt(cues)).lines

    assert [(line.speaker, line.text, line.start, line.end) for line in lines] == [
        ("Ana", "one two", 0.0, 4.0),
        ("Ana", "three", 4.0 + MERGE_GAP_SECONDS + 0.001, 7.0),
        ("Ben", "four", 7.0, 8.0),
    ]


def test_cues_stamped_exactly_two_seconds_apart_join_whatever_their_seconds_subtract_to() -> None:
    # 8.015 - 6.015 is 2.000000000000001 in floats: the stamps, to the millisecond, are 2.000 s apart.
    text = (
        "WEBVTT\n\n00:00:04.000 --> 00:00:06.015\n<v Ana>one</v>\n\n"
        "00:00:08.015 --> 00:00:09.000\n<v Ana>two</v>\n"
    )

    [line] = Transcript.parse(text).lines

    assert (line.speaker, line.text, line.start, line.end) == ("Ana", "one two", 4.0, 9.0)


@given(cues=cue_lists(), write=st.sampled_from(CAPTION_WRITERS))
def test_captions_read_back_to_their_cues_joined_by_speaker(
    cues: list[Cue], write: Callable[[list[Cue]], str]
) -> None:
    lines = Transcript.parse(write(cues)).lines

    expected: list[list[object]] = []
    for cue in cues:
        last = expected[-1] if expected else None
        if (
            last is not None
            and last[0] == cue.speaker
            and cue.start - float(str(last[3])) <= MERGE_GAP_SECONDS + 1e-9
        ):
            last[1] = f"{last[1]} {' '.join(cue.text.split())}"
            last[3] = max(float(str(last[3])), cue.end)
        else:
            expected.append([cue.speaker, " ".join(cue.text.split()), cue.start, cue.end])
    assert [line.speaker for line in lines] == [row[0] for row in expected]
    assert [line.text for line in lines] == [row[1] for row in expected]
    assert [line.start for line in lines] == pytest.approx([row[2] for row in expected], abs=0.001)


# ---------------------------------------------------------------- broken files


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "WEBVTT\n\n1\n00:00:01.000 --> 00:00:0x.000\nAna: hi\n",
            "cue 1 (line 4): the timestamp '00:00:0x.000'",
        ),
        (
            "WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.000\nAna: hi\n\n"
            "2\n00:00:09.000 --> 00:00:03.000\nBen: yo\n",
            "cue 2 (line 8): ends",
        ),
        ("WEBVTT\n\nabc/1-0\n00:00:01.000 --> 00:00:02.000\n<v Ana></v>\n", "cue 1 (line 5): has no text"),
        ("WEBVTT\n\n1\n00:00:01.000 --> 00:00:02.000\n", "cue 1 (line 4): has no text"),
        (
            "1\n00:00:01,000 --> 00:00:02,000\nAna: hi\n\n2\nAna: no timing\n",
            "cue 2 (line 6): a SRT cue needs a timing line",
        ),
        ("1\n00:00:01,000 --> 00:61:02,000\nAna: hi\n", "cue 1 (line 2): the timestamp '00:61:02,000'"),
        (
            '{"segments": [{"start": 0, "end": 1, "text": "hi"}, {"start": 2, "end": 1, "text": "yo"}]}',
            "segment 2: ends",
        ),
        ('{"segments": [{"start": 0, "end": 1, "text": "  "}]}', "segment 1: has no text"),
        (
            '{"output": {"turnLevelTranscription": [{"start": "soon", "end": 1, "text": "x"}]}}',
            "turn 1: start is not a time",
        ),
        ('{"segments": [{"start": 0, "end": 1,\n "text": "hi",]}', "line 2: not JSON"),
        ('{"text": "hello"}', "not a diarized transcript"),
        ('{"segments": []}', "no cues"),
    ],
)
def test_a_broken_file_is_refused_naming_where_it_broke(text: str, where: str) -> None:
    with pytest.raises(TranscriptError) as refused:
        Transcript.parse(text)

    assert str(refused.value).startswith(where) or where in str(refused.value)
    assert "\n" not in str(refused.value)


@given(text=st.text(max_size=300), format=st.none() | st.sampled_from(FORMATS))
def test_any_text_reads_to_numbered_lines_or_a_typed_refusal(
    text: str, format: TranscriptFormat | None
) -> None:
    try:
        transcript = Transcript.parse(text, format=format)
    except TranscriptError:
        return
    _well_formed(transcript)


@given(text=spoilt_captions())
def test_a_spoilt_caption_file_reads_or_is_refused_and_times_never_decrease(text: str) -> None:
    formats: tuple[TranscriptFormat | None, ...] = (None, "vtt", "srt", "json")
    for format in formats:
        try:
            transcript = Transcript.parse(text, format=format)
        except TranscriptError as refused:
            located = refused.line is not None or refused.cue is not None
            assert located or "JSON" in str(refused) or "cues" in str(refused)  # noqa: PT017 - one of many formats
            continue
        _well_formed(transcript)


@given(text=diarized_documents())
def test_diarized_json_of_any_field_types_reads_or_is_refused_naming_its_segment(text: str) -> None:
    try:
        transcript = Transcript.parse(text)
    except TranscriptError as refused:
        assert refused.cue is not None or "no cues" in str(refused) or "JSON" in str(refused)  # noqa: PT017 - any dialect
        return
    _well_formed(transcript)


def test_json_nested_too_deep_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(TranscriptError, match="nested too deep"):
        Transcript.parse("[" * 100_000 + "]" * 100_000, format="json")


# ---------------------------------------------------------------- huge files


def test_two_hundred_thousand_cues_read_to_lines() -> None:
    text = "".join(
        f"{n + 1}\n{_clock(n * 3)},000 --> {_clock(n * 3 + 2)},500\n{('Ana', 'Ben')[n % 3 == 0]}: "
        f"point {n}\n\n"
        for n in range(200_000)
    )

    transcript = Transcript.parse(text)

    # Ana's two cues between two of Ben's are 0.5 s apart: one line each time.
    assert len(transcript.lines) == 2 * 200_000 // 3 + 1
    assert transcript.lines[-2:] == (
        TranscriptLine(len(transcript.lines) - 1, "Ben", "point 199998", 599_994.0, 599_996.5),
        TranscriptLine(len(transcript.lines), "Ana", "point 199999", 599_997.0, 599_999.5),
    )
    assert transcript.lines[-3].text == "point 199996 point 199997"
    _well_formed(transcript)


def test_fifty_megabytes_of_one_speaker_is_one_long_line() -> None:
    said = "word " * 40
    count = 50 * 1024 * 1024 // 260
    segments = ", ".join(
        f'{{"start": {n}, "end": {n}.5, "text": "{said}", "speaker": "A"}}' for n in range(count)
    )

    transcript = Transcript.parse(f'{{"segments": [{segments}]}}')

    assert len(transcript.lines) == 1
    assert (transcript.lines[0].start, transcript.lines[0].end) == (0.0, count - 0.5)
    assert len(transcript.lines[0].text) == count * len(said.strip()) + count - 1


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
