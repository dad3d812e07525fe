"""Long meetings: split at speaker turns with an overlap, summarized concurrently, merged by line."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from application import (
    ActionItem,
    ChunkFinished,
    ChunkSettings,
    LoopSettings,
    RunFinished,
    SummaryAgent,
    TextDelta,
)
from application.framing import unframe_numbered
from application.meetings.chunking import OVERLAP_TURNS, chunk_transcript
from application.meetings.grounding import SPEAKER_LINE, transcript_lines
from application.meetings.summary import PREPARE_SLICE_LINES
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    FunctionCallContent,
    updates_of,
)
from tests.support.examples import examples

# ---------------------------------------------------------------- splitting


@st.composite
def transcripts(draw: st.DrawFn) -> list[str]:
    """Speaker lines, each maybe followed by unattributed continuation lines."""
    lines: list[str] = []
    for turn in range(draw(st.integers(1, 40))):
        lines.append(f"P{turn % 3}: " + "x" * draw(st.integers(0, 60)))
        lines += ["  more " * draw(st.integers(0, 5))] * draw(st.integers(0, 2))
    return lines


@settings(max_examples=examples(80))
@given(lines=transcripts(), chunk_chars=st.integers(20, 600))
def test_chunks_cover_every_line_in_order_cut_at_turns_with_an_overlap(
    lines: list[str], chunk_chars: int
) -> None:
    chunks = chunk_transcript(lines, chunk_chars)

    assert chunks[0].first == 1
    assert chunks[-1].last == len(lines)
    for chunk in chunks:
        assert chunk.lines == tuple(lines[chunk.first - 1 : chunk.last])
        size = sum(len(line) + 1 for line in chunk.lines)
        assert size <= chunk_chars or len(chunks) == 1 or chunk.first == chunk.last
    for before, after in itertools.pairwise(chunks):
        # Each chunk adds lines, and starts where a turn starts unless one turn alone was too long.
        assert after.last > before.last
        assert after.first > before.first
        assert after.first <= before.last + 1
        starts_turn = SPEAKER_LINE.match(lines[after.first - 1]) is not None
        turn_too_long = sum(len(line) + 1 for line in _turn_of(lines, after.first)) > chunk_chars
        assert starts_turn or turn_too_long


def _turn_of(lines: Sequence[str], number: int) -> list[str]:
    start = number - 1
    while start > 0 and SPEAKER_LINE.match(lines[start]) is None:
        start -= 1
    end = start + 1
    while end < len(lines) and SPEAKER_LINE.match(lines[end]) is None:
        end += 1
    return list(lines[start:end])


def test_chunks_repeat_the_last_turns_of_the_one_before() -> None:
    lines = [f"P{n % 4}: line {n:03d} " + "x" * 30 for n in range(100)]
    chunks = chunk_transcript(lines, 500)
    assert len(chunks) > 3
    for before, after in itertools.pairwise(chunks):
        assert after.first == before.last - OVERLAP_TURNS + 1


def test_a_short_transcript_is_one_chunk() -> None:
    assert [(c.first, c.last) for c in chunk_transcript(["a: b", "c: d"], 60_000)] == [(1, 2)]


# ---------------------------------------------------------------- a long meeting, end to end

LINE_WIDTH = 48
FILLER = ("Status update, nothing new here.", "Thanks, moving on.", "Let me check my notes.")
PEOPLE = ("Ana", "Ben", "Cleo", "Dev")


def _padded(text: str) -> str:
    return text.ljust(LINE_WIDTH)


@attrs.frozen
class Planted:
    owner: str
    task: str
    lines: tuple[int, ...]


def long_meeting(lines_count: int, chunk_chars: int) -> tuple[list[str], list[Planted]]:
    """A 1-line-per-turn meeting of equal-width lines, with items planted inside every chunk, in every
    overlap (seen by two chunks) and across every border (a question at a chunk's last line answered on
    the next chunk's first new line)."""
    lines = [_padded(f"{PEOPLE[n % 4]}: {FILLER[n % 3]}") for n in range(lines_count)]
    chunks = chunk_transcript(lines, chunk_chars)
    planted: list[Planted] = []

    def plant_own(number: int) -> None:
        owner, task = PEOPLE[number % 4], f"prepare report {number}"
        lines[number - 1] = _padded(f"{owner}: I'll {task}.")
        planted.append(Planted(owner, task, (number,)))

    for index, chunk in enumerate(chunks):
        plant_own((chunk.first + chunk.last) // 2)
        if index + 1 < len(chunks):
            plant_own(chunk.last - 1)  # in the overlap: both chunks see it
            asked, answered = chunk.last, chunk.last + 1
            task, owner = f"prepare report {asked}", PEOPLE[(answered + 1) % 4]
            lines[asked - 1] = _padded(f"{PEOPLE[asked % 4]}: Who can {task}?")
            lines[answered - 1] = _padded(f"{owner}: I'll do that one.")
            planted.append(Planted(owner, task, (asked, answered)))
    borders = [(chunk.first, chunk.last) for chunk in chunks]
    assert [(chunk.first, chunk.last) for chunk in chunk_transcript(lines, chunk_chars)] == borders
    return [line.rstrip() for line in lines], planted


_OWN = re.compile(r"^(?P<owner>\w+): I'll (?P<task>prepare report \d+)\.$")
_ASKED = re.compile(r"^\w+: Who can (?P<task>prepare report \d+)\?$")
_ANSWER = re.compile(r"^(?P<owner>\w+): I'll do that one\.$")


class ReadingChat:
    """A model that records exactly the planted items its chunk shows whole, citing the frame's numbers,
    then answers with text; it counts how many requests are in flight, and fails the chunks it is told to."""

    def __init__(self, failing: frozenset[int] = frozenset()) -> None:
        self.failing = failing
        self.active = 0
        self.most_active = 0
        self.chunks_seen: list[int] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            for _ in range(3):
                await asyncio.sleep(0)  # let every runnable chunk start its own request
            numbered = unframe_numbered(messages[0].text, "transcript")
            first = numbered[0][0]
            if first in self.failing:
                raise ChatTransportError("the gateway is down for this chunk", attempts=1)
            if len(messages) > 1:
                return ChatResponse(messages=(ChatMessage.assistant(f"Part from line {first}."),))
            self.chunks_seen.append(first)
            return ChatResponse(messages=(ChatMessage("assistant", tuple(self._calls(numbered))),))
        finally:
            self.active -= 1

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))

    @staticmethod
    def _calls(numbered: Sequence[tuple[int, str]]) -> list[FunctionCallContent]:
        found: list[dict[str, object]] = []
        for at, (number, text) in enumerate(numbered):
            own, asked = _OWN.match(text), _ASKED.match(text)
            if own is not None:
                found.append({"owner": own["owner"], "task": own["task"], "due": None, "lines": [number]})
            elif asked is not None and at + 1 < len(numbered):
                answer = _ANSWER.match(numbered[at + 1][1])
                if answer is not None:
                    lines = [number, number + 1]
                    found.append(
                        {"owner": answer["owner"], "task": asked["task"], "due": None, "lines": lines}
                    )
        first = numbered[0][0]
        return [
            FunctionCallContent.parse(
                call_id=f"c{first}_{index}", name="record_action_item", raw_arguments=json.dumps(arguments)
            )
            for index, arguments in enumerate(found)
        ]


CHUNK_CHARS = 20_000
CONCURRENCY = 3


def agent(chat: ReadingChat) -> SummaryAgent:
    return SummaryAgent(
        chat, LoopSettings(), chunking=ChunkSettings(chunk_chars=CHUNK_CHARS, chunk_concurrency=CONCURRENCY)
    )


async def test_a_4000_line_meeting_finds_every_planted_item_once_with_the_lines_of_the_whole_file() -> None:
    lines, planted = long_meeting(4000, CHUNK_CHARS)
    transcript = "\n".join(lines)
    chunks = chunk_transcript(transcript_lines(transcript), CHUNK_CHARS)
    assert len(chunks) >= 6
    chat = ReadingChat()

    summary = await agent(chat).summarize(transcript)

    assert summary.complete is True
    assert summary.failed_chunks == ()
    expected = [ActionItem(p.owner, p.task, None, p.lines) for p in planted]
    assert sorted(summary.action_items, key=lambda i: i.lines) == sorted(expected, key=lambda i: i.lines)
    assert len(summary.action_items) == len({item.task for item in summary.action_items})  # each once
    assert list(summary.action_items) == sorted(summary.action_items, key=lambda i: i.lines[:1])
    for item in summary.action_items:
        assert all(
            item.owner in lines[n - 1] or "do that one" in lines[n - 1] or item.task in lines[n - 1]
            for n in item.lines
        )
    assert sorted(chat.chunks_seen) == [chunk.first for chunk in chunks]
    assert chat.most_active == CONCURRENCY
    assert not any(record.result.is_error for record in summary.tool_calls)


async def test_a_failing_chunk_is_named_and_the_rest_is_kept() -> None:
    lines, planted = long_meeting(4000, CHUNK_CHARS)
    transcript = "\n".join(lines)
    chunks = chunk_transcript(transcript_lines(transcript), CHUNK_CHARS)
    broken = chunks[3]
    chat = ReadingChat(failing=frozenset({broken.first}))

    summary = await agent(chat).summarize(transcript)

    assert summary.complete is False
    assert summary.failed_chunks == ((broken.first, broken.last),)
    found = {item.lines for item in summary.action_items}
    others = [c for c in chunks if c is not broken]
    for item in planted:
        seen_elsewhere = any(c.first <= item.lines[0] and item.lines[-1] <= c.last for c in others)
        assert (item.lines in found) is seen_elsewhere


async def test_every_chunk_failing_raises_the_first_chunks_error() -> None:
    lines, _ = long_meeting(1000, CHUNK_CHARS)
    transcript = "\n".join(lines)
    chunks = chunk_transcript(transcript_lines(transcript), CHUNK_CHARS)
    chat = ReadingChat(failing=frozenset(chunk.first for chunk in chunks))
    with pytest.raises(ChatTransportError, match="down for this chunk"):
        await agent(chat).summarize(transcript)


async def test_summarize_events_reports_each_chunk_then_the_merged_text_and_result() -> None:
    lines, _ = long_meeting(2000, CHUNK_CHARS)
    transcript = "\n".join(lines)
    chunks = chunk_transcript(transcript_lines(transcript), CHUNK_CHARS)
    chat = ReadingChat(failing=frozenset({chunks[1].first}))

    events = [event async for event in agent(chat).summarize_events(transcript)]

    progress = [event for event in events if isinstance(event, ChunkFinished)]
    assert sorted(event.index for event in progress) == list(range(len(chunks)))
    assert all(event.count == len(chunks) for event in progress)
    assert {event.lines: event.failed for event in progress} == {
        (c.first, c.last): ("ChatTransportError" if c is chunks[1] else None) for c in chunks
    }
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    whole = await agent(ReadingChat(failing=frozenset({chunks[1].first}))).summarize(transcript)
    assert finished.result.action_items == whole.action_items
    assert finished.result.failed_chunks == ((chunks[1].first, chunks[1].last),)
    texts = [event.text for event in events if isinstance(event, TextDelta)]
    assert "".join(texts) == finished.result.text
    assert finished.result.text.startswith("Part from line 1.")


# ---------------------------------------------------------------- a long transcript and the event loop


class AnswersAtOnce:
    """A model that answers every request with text, noting how often the loop had turned (``turns()``)
    when the first request arrived."""

    def __init__(self, turns: Callable[[], int]) -> None:
        self._turns = turns
        self.turns_at_first_request: int | None = None

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        if self.turns_at_first_request is None:
            self.turns_at_first_request = self._turns()
        return ChatResponse(messages=(ChatMessage.assistant("Done."),))

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


@pytest.mark.parametrize("events", [False, True], ids=["summarize", "summarize_events"])
@pytest.mark.parametrize("chunk_chars", [200_000, 5_000_000], ids=["chunked", "one-chunk"])
async def test_a_long_transcript_is_prepared_in_slices_with_the_loop_turning_between_them(
    events: bool, chunk_chars: int
) -> None:
    # Issue 20: the CLI's live line froze for seconds while a 2 MB transcript was cut into chunks.
    slices = 10
    text = "\n".join(f"{PEOPLE[n % 4]}: {FILLER[n % 3]}" for n in range(slices * PREPARE_SLICE_LINES))
    turns = 0

    async def ticking() -> None:  # what else runs on the loop, as the live line does
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    chat = AnswersAtOnce(lambda: turns)
    summarizer = SummaryAgent(chat, LoopSettings(), chunking=ChunkSettings(chunk_chars=chunk_chars))
    ticker = asyncio.create_task(ticking())
    await asyncio.sleep(0)
    started = turns
    try:
        if events:
            finished = [event async for event in summarizer.summarize_events(text)][-1]
            assert isinstance(finished, RunFinished)
            summary = finished.result
        else:
            summary = await summarizer.summarize(text)
    finally:
        ticker.cancel()
    assert summary.complete
    assert chat.turns_at_first_request is not None
    # The loop turned at least once per slice of the transcript read before the first request went.
    assert chat.turns_at_first_request - started >= slices
