"""Meetings as recorded, end to end through the offline stand-in: every caption and diarized format gives
the summary its plain-text twin gives, with times and speakers on every item."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import pytest

from adapters.offline import OFFLINE_MODEL, OfflineResponsesServer
from application import ActionItem, Decision, MeetingSummary, SummaryAgent, Transcript, dumps, loads
from tests.integration.offline.support import bounded, build_container

SAMPLES: Final = Path(__file__).resolve().parents[2] / "application" / "meetings" / "transcripts"
# Each diarization service's own labels for the three people of the sample meeting.
NAMES: Final = {
    "openai-diarized.json": {"A": "Priya Raman", "B": "Tom Becker", "C": "Maya Lind"},
    "pyannote.json": {"SPEAKER_00": "Priya Raman", "SPEAKER_01": "Tom Becker", "SPEAKER_02": "Maya Lind"},
    "whisperx.json": {"SPEAKER_00": "Priya Raman", "SPEAKER_01": "Tom Becker", "SPEAKER_02": "Maya Lind"},
    "aws-transcribe.json": {"spk_0": "Priya Raman", "spk_1": "Tom Becker", "spk_2": "Maya Lind"},
}
RECORDED: Final = ("teams.vtt", "zoom.vtt", "meeting.srt", *NAMES)
# When each line of the sample meeting starts and ends in its recordings (the Teams cues of line 1 and
# line 6 are two each, joined).
TIMES: Final = {3: (12.4, 16.9), 4: (17.5, 21.3), 6: (27.1, 33.0), 8: (3601.5, 3605.0)}


@pytest.fixture(scope="module")
def server() -> Iterator[OfflineResponsesServer]:
    with OfflineResponsesServer() as running:
        yield running


@pytest.fixture
async def agent(server: OfflineResponsesServer) -> AsyncIterator[SummaryAgent]:
    container = build_container(server, OFFLINE_MODEL)
    try:
        yield container.summary_agent()
    finally:
        await container.aclose()


def _example(name: str) -> str:
    return (Path(__file__).resolve().parents[3] / "examples" / name).read_text(encoding="utf-8")


def _read(name: str) -> Transcript:
    return Transcript.parse((SAMPLES / name).read_text(encoding="utf-8"), speakers=NAMES.get(name), name=name)


def _said(summary: MeetingSummary) -> tuple[object, ...]:
    """What a summary says, leaving out where in the recording it was said."""
    return (
        tuple((item.owner, item.task, item.due, item.lines, item.speakers) for item in summary.action_items),
        tuple((decision.text, decision.lines, decision.speakers) for decision in summary.decisions),
    )


@pytest.mark.parametrize("name", RECORDED)
async def test_a_recorded_meeting_is_summarized_as_its_plain_text_twin(
    agent: SummaryAgent, name: str
) -> None:
    twin = await bounded(agent.summarize(Transcript.parse((SAMPLES / "meeting.txt").read_text())))
    summary = await bounded(agent.summarize(_read(name)))

    assert _said(summary) == _said(twin)
    assert [item.owner for item in summary.action_items] == ["Tom Becker", "Maya Lind", "Maya Lind"]
    assert [decision.lines for decision in summary.decisions] == [(6,)]
    items: list[ActionItem | Decision] = [*summary.action_items, *summary.decisions]
    for item in items:
        assert (item.start, item.end) == pytest.approx(TIMES[item.lines[0]], abs=0.01)
        assert item.speakers
    untimed: list[ActionItem | Decision] = [*twin.action_items, *twin.decisions]
    assert all(item.start is None and item.end is None for item in untimed)
    assert loads(dumps(summary)) == summary


async def test_labels_left_unnamed_stand_as_the_speakers(agent: SummaryAgent) -> None:
    transcript = Transcript.parse((SAMPLES / "pyannote.json").read_text(encoding="utf-8"))

    summary = await bounded(agent.summarize(transcript))

    assert transcript.unnamed_speakers == ("SPEAKER_00", "SPEAKER_01", "SPEAKER_02")
    # "I'll update the release notes" is SPEAKER_02's own commitment, owned by the label.
    assert ("SPEAKER_02", "update the release notes") in {(i.owner, i.task) for i in summary.action_items}
    assert all(set(item.speakers) <= set(transcript.participants) for item in summary.action_items)


async def test_the_example_teams_file_says_what_the_example_transcript_says(agent: SummaryAgent) -> None:
    text = await bounded(agent.summarize(_example("standup-transcript.txt")))
    teams = await bounded(agent.summarize(Transcript.parse(_example("standup.vtt"))))

    assert [(i.task, i.due) for i in teams.action_items] == [(i.task, i.due) for i in text.action_items]
    assert [i.owner for i in teams.action_items] == [
        "Tom Becker", "Maya Lind", "Dev Patel", "Alex Chen", "Dev Patel", "Priya Raman"
    ]  # fmt: skip
    assert [d.text for d in teams.decisions] == [d.text for d in text.decisions]
    assert all(item.start is not None and item.speakers for item in teams.action_items)


async def test_a_long_recorded_meeting_is_chunked_with_the_lines_and_times_of_the_whole_file(
    server: OfflineResponsesServer,
) -> None:
    transcript = Transcript.parse(_example("standup.vtt"))
    whole_agent = build_container(server, OFFLINE_MODEL)
    chunked = build_container(server, OFFLINE_MODEL)
    chunked.config.from_dict({"agent": {"chunk_chars": 700}})
    try:
        whole = await bounded(whole_agent.summary_agent().summarize(transcript))
        parts = await bounded(chunked.summary_agent().summarize(transcript))
    finally:
        await whole_agent.aclose()
        await chunked.aclose()

    assert len(parts.run.responses) > len(whole.run.responses)  # several chunks, each its own run
    assert parts.complete
    assert parts.failed_chunks == ()
    assert parts.action_items == whole.action_items
    assert parts.decisions == whole.decisions
