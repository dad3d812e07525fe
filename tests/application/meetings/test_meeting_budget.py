"""One budget and one deadline for a whole long meeting: its chunks draw from one ledger, concurrent
ones included, and a stopped meeting names the chunks it never ran; a run stopped mid-round answers
every call it did not run, so its stored history can be sent again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from adapters.responses import ResponsesPayloadBuilder, ResponsesSettings
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    ChunkFinished,
    ChunkSettings,
    LoopSettings,
    RunBudget,
    RunFinished,
    SummaryAgent,
    ToolLoop,
    ToolRun,
    dumps,
    loads,
)
from application.meetings.chunking import chunk_transcript
from application.meetings.grounding import transcript_lines
from application.tools.registry import BUDGET_EXCEEDED
from domain import ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, ToolSpec, Usage, updates_of
from tests.support.doubles import RecordingTools

CHUNK_CHARS = 2_000


def meeting(lines: int = 300) -> str:
    """A meeting long enough for several chunks of :data:`CHUNK_CHARS`."""
    return "\n".join(
        f"P{n % 4}: point {n} of the agenda, said at some length for the record." for n in range(lines)
    )


def chunks_of(transcript: str) -> list[tuple[int, int]]:
    return [(c.first, c.last) for c in chunk_transcript(transcript_lines(transcript), CHUNK_CHARS)]


def agent(chat: object, budget: RunBudget, concurrency: int) -> SummaryAgent:
    return SummaryAgent(
        chat,  # type: ignore[arg-type]  # a ChatPort by shape
        LoopSettings(run_budget=budget),
        chunking=ChunkSettings(chunk_chars=CHUNK_CHARS, chunk_concurrency=concurrency),
    )


def answers(count: int, usage: Usage | None = None) -> list[ScriptedTurn]:
    return [ScriptedTurn(text=f"Part {n}.", usage=usage) for n in range(count)]


async def test_the_requests_budget_bounds_the_whole_meeting_and_the_chunks_never_run_are_named() -> None:
    transcript = meeting()
    borders = chunks_of(transcript)
    assert len(borders) >= 5
    chat = ScriptedChat(*answers(len(borders)))

    summary = await agent(chat, RunBudget(requests=2), concurrency=1).summarize(transcript)

    # Per-chunk budgets would have let every chunk send its request.
    assert len(chat.requests) == 2
    assert summary.stop_reason == "budget.requests"
    assert summary.run.stop_reason == "budget.requests"
    assert not summary.complete
    assert summary.text == "Part 0.\n\nPart 1."
    assert summary.failed_chunks == tuple(borders[2:])


async def test_a_cost_budget_bounds_the_whole_meeting() -> None:
    transcript = meeting()
    borders = chunks_of(transcript)
    each = Usage(input_tokens=700, output_tokens=60, total_tokens=760, cost_usd=0.15)
    chat = ScriptedChat(*answers(len(borders), each))

    summary = await agent(chat, RunBudget(cost_usd=0.5), concurrency=3).summarize(transcript)

    assert summary.usage is not None
    assert summary.usage.cost_usd is not None
    assert summary.usage.cost_usd <= 0.5
    assert summary.stop_reason == "budget.cost_usd"
    assert not summary.complete
    answered = len(summary.run.responses)
    assert 1 <= answered < len(borders)
    # Every chunk without an answer is named: nothing is dropped silently.
    assert len(summary.failed_chunks) == len(borders) - answered


class HeldChat:
    """Holds every request until ``width`` have arrived, so that many are in flight at once."""

    def __init__(self, inner: ScriptedChat, width: int) -> None:
        self.inner = inner
        self.width = width
        self.arrived = 0
        self.open = asyncio.Event()

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.arrived += 1
        if self.arrived >= self.width:
            self.open.set()
        async with asyncio.timeout(10):
            await self.open.wait()
        return await self.inner.get_response(messages, options)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


async def test_concurrent_chunks_reserve_their_requests_before_they_are_sent() -> None:
    transcript = meeting()
    borders = chunks_of(transcript)
    chat = HeldChat(ScriptedChat(*answers(len(borders))), width=2)

    summary = await asyncio.wait_for(
        agent(chat, RunBudget(requests=2), concurrency=3).summarize(transcript), 30
    )

    # Two requests were in flight together; the third chunk, starting beside them, saw them reserved.
    assert chat.open.is_set()
    assert len(chat.inner.requests) == 2
    assert summary.stop_reason == "budget.requests"
    assert len(summary.failed_chunks) == len(borders) - 2


async def test_the_events_name_each_chunk_never_started() -> None:
    transcript = meeting()
    borders = chunks_of(transcript)
    chat = ScriptedChat(*answers(len(borders)))

    events = [e async for e in agent(chat, RunBudget(requests=1), concurrency=1).summarize_events(transcript)]

    failed = {e.lines: e.failed for e in events if isinstance(e, ChunkFinished)}
    # The second chunk started and stopped at its first check; the rest never started.
    assert failed == {
        borders[0]: None,
        borders[1]: "incomplete",
        **dict.fromkeys(borders[2:], "not_started"),
    }
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.failed_chunks == tuple(borders[1:])


async def test_a_meeting_within_its_budget_is_complete() -> None:
    transcript = meeting()
    borders = chunks_of(transcript)
    chat = ScriptedChat(*answers(len(borders)))

    summary = await agent(chat, RunBudget(requests=len(borders)), concurrency=3).summarize(transcript)

    assert summary.complete
    assert summary.stop_reason is None
    assert summary.failed_chunks == ()


# ---------------------------------------------------------------- calls not run


TOOLS = tuple(
    ToolSpec(name, f"The {name} tool.", {"type": "object", "properties": {}}) for name in ("a", "b")
)


def _well_formed(run: ToolRun) -> None:
    """Every function call of the stored, reloaded history has its output, as the Responses API requires."""
    messages = loads(dumps(list(run.messages)))
    items = ResponsesPayloadBuilder(ResponsesSettings(model="m")).input_items(messages)
    calls = [item["call_id"] for item in items if item["type"] == "function_call"]
    outputs = [item["call_id"] for item in items if item["type"] == "function_call_output"]
    assert calls
    assert sorted(calls) == sorted(outputs)


@pytest.mark.parametrize("concurrent", [True, False])
async def test_calls_a_budget_stop_leaves_are_answered_budget_exceeded_and_never_run(
    concurrent: bool,
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "a", "{}"), ("c2", "b", "{}"), ("c3", "a", "{}"))),
        ScriptedTurn(text="never asked"),
    )
    tools = RecordingTools()
    settings = LoopSettings(run_budget=RunBudget(tool_calls=1), concurrent_tool_calls=concurrent)

    run = await ToolLoop(chat, settings).run((ChatMessage.user("Go."),), ChatOptions(tools=TOOLS), tools)

    assert run.stop_reason == "budget.tool_calls"
    assert [call.call_id for call in tools.calls] == ["c1"]
    results = {record.call.call_id: record.result for record in run.tool_calls}
    assert list(results) == ["c1", "c2", "c3"]
    assert not results["c1"].is_error
    for call_id in ("c2", "c3"):
        assert results[call_id].is_error
        assert results[call_id].call_id == call_id
        assert results[call_id].result["error"] == BUDGET_EXCEEDED  # type: ignore[index,call-overload]
    assert run.messages[-1].role == "tool"
    assert len(chat.requests) == 1
    _well_formed(run)


async def test_a_stop_reported_as_events_answers_the_calls_it_left() -> None:
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "a", "{}"), ("c2", "b", "{}"))), ScriptedTurn(text="no"))
    loop = ToolLoop(chat, LoopSettings(run_budget=RunBudget(tool_calls=1)))

    events = [
        e
        async for e in loop.run_events((ChatMessage.user("Go."),), ChatOptions(tools=TOOLS), RecordingTools())
    ]

    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert [r.call.call_id for r in finished.result.tool_calls] == ["c1", "c2"]
    _well_formed(finished.result)
