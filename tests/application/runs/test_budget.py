"""A run's budget and deadline (``application/runs/budget.py``, enforced by the loop): over generated
scripts of answers and generated budgets, a run never passes a limit, stops at the first request or call
that would, with the right ``stop_reason``, and without a budget sends exactly what it sent before."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    STOP_REASONS,
    Decision,
    LoopSettings,
    RunBudget,
    RunFinished,
    SummaryAgent,
    ToolLoop,
    ToolRun,
    estimate_tokens,
)
from application.runs.budget import MIN_OUTPUT_TOKENS
from application.runs.run import ToolCallRecord
from application.tools.registry import BUDGET_EXCEEDED
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    TextContent,
    ToolSpec,
    Usage,
    updates_of,
)
from tests.support.doubles import RecordingTools
from tests.support.examples import examples

USER = (ChatMessage.user("Summarize the meeting, please."),)
TOOLS = ("alpha", "beta", "gamma")


@attrs.frozen
class Turn:
    """One scripted answer: its text, how many calls it makes and how many output tokens it would take."""

    text: str
    calls: int
    output_tokens: int


turns = st.builds(
    Turn,
    text=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
    calls=st.integers(min_value=0, max_value=3),
    output_tokens=st.integers(min_value=MIN_OUTPUT_TOKENS, max_value=120),
)
scripts = st.lists(turns, min_size=1, max_size=6)
limits = st.none() | st.integers(min_value=1, max_value=12)
token_limits = st.none() | st.integers(min_value=1, max_value=1500)
budgets = st.builds(
    RunBudget,
    requests=limits,
    input_tokens=token_limits,
    output_tokens=token_limits,
    tool_calls=limits,
    cost_usd=st.none() | st.floats(min_value=0.001, max_value=2.0),
)


class MeteredChat:
    """A model that answers ``script`` in order and reports usage as a provider would.

    Its tokenizer takes four characters a token (so input tokens are ``estimate_tokens`` of what it is
    sent), it stops at the request's ``max_output_tokens`` (the answer is then incomplete) and it bills
    ``price`` dollars a token. Past the script it answers a final text.
    """

    def __init__(self, script: Sequence[Turn], price: float = 0.0001) -> None:
        self.script = list(script)
        self.price = price
        self.requests: list[tuple[tuple[ChatMessage, ...], ChatOptions | None]] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.requests.append((tuple(messages), options))
        number = len(self.requests)
        turn = self.script[number - 1] if number <= len(self.script) else Turn("The end.", 0, 20)
        cap = options.max_output_tokens if options is not None else None
        output = turn.output_tokens if cap is None else min(turn.output_tokens, cap)
        input_tokens = estimate_tokens(messages, options)
        offered = bool(options and options.tools)
        calls = tuple(
            (f"call_{number}_{n}", TOOLS[n % len(TOOLS)], "{}") for n in range(turn.calls if offered else 0)
        )
        scripted = ScriptedTurn(
            text=turn.text,
            calls=calls,
            usage=Usage(
                input_tokens, output, input_tokens + output, cost_usd=self.price * (input_tokens + output)
            ),
        ).response(number)
        return attrs.evolve(scripted, status="incomplete") if output < turn.output_tokens else scripted

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


def _options(max_output_tokens: int | None = None) -> ChatOptions:
    return ChatOptions(
        instructions="Record what was decided.",
        tools=tuple(ToolSpec(name) for name in TOOLS),
        max_output_tokens=max_output_tokens,
    )


async def _run(
    chat: MeteredChat | ScriptedChat, loop_settings: LoopSettings, options: ChatOptions
) -> ToolRun:
    return await ToolLoop(chat, loop_settings).run(USER, options, RecordingTools())


def _spent(run: ToolRun) -> Usage:
    return run.usage or Usage()


def _ran(run: ToolRun) -> list[ToolCallRecord]:
    """The calls the run answered itself: not those it answered ``budget_exceeded`` once it had stopped."""
    return [record for record in run.tool_calls if _code(record) != BUDGET_EXCEEDED]


def _code(record: ToolCallRecord) -> object:
    result = record.result.result
    return result.get("error") if isinstance(result, dict) else None


@settings(max_examples=examples(60), deadline=None)
@given(
    scripts,
    budgets,
    st.none() | st.integers(min_value=MIN_OUTPUT_TOKENS, max_value=150),
    st.floats(min_value=0.00001, max_value=0.001),
)
async def test_a_run_never_passes_a_limit_of_its_budget(
    script: list[Turn], budget: RunBudget, max_output: int | None, price: float
) -> None:
    chat = MeteredChat(script, price)
    # The price is learned from the first answer: a cost limit below the first request's cost is left out.
    first = await MeteredChat(script, price).get_response(USER, _options(max_output))
    assert first.usage is not None
    if (
        budget.cost_usd is not None
        and first.usage.cost_usd is not None
        and budget.cost_usd < first.usage.cost_usd
    ):
        budget = attrs.evolve(budget, cost_usd=None)

    run = await _run(chat, LoopSettings(run_budget=budget), _options(max_output))

    spent = _spent(run)
    if budget.requests is not None:
        assert len(chat.requests) <= budget.requests
    if budget.tool_calls is not None:
        assert len(_ran(run)) <= budget.tool_calls
    if budget.input_tokens is not None:
        assert (spent.input_tokens or 0) <= budget.input_tokens
    if budget.output_tokens is not None:
        assert (spent.output_tokens or 0) <= budget.output_tokens
    if budget.cost_usd is not None:
        assert (spent.cost_usd or 0.0) <= budget.cost_usd + 1e-12
    assert run.stop_reason is None or run.stop_reason in STOP_REASONS
    assert run.complete == (run.stop_reason is None and run.final.status != "incomplete")


def _expected_stop(
    script: list[Turn], budget: RunBudget, max_output: int | None
) -> tuple[str | None, int, int]:
    """What the run should do under a budget of requests, tool calls and output tokens: its stop reason,
    the requests it sends and the calls it answers. Written from the rule, not from the loop."""
    requests = calls = output = 0
    for turn in [*script, Turn("The end.", 0, 20)]:
        if budget.requests is not None and requests + 1 > budget.requests:
            return "budget.requests", requests, calls
        cap = max_output
        if budget.output_tokens is not None:
            left = budget.output_tokens - output
            cap = left if cap is None else min(cap, left)
            if cap < MIN_OUTPUT_TOKENS:
                return "budget.output_tokens", requests, calls
        requests += 1  # noqa: SIM113  # counts the requests sent, which the early returns cut short
        output += turn.output_tokens if cap is None else min(turn.output_tokens, cap)
        if turn.calls == 0:
            return None, requests, calls
        for _ in range(turn.calls):
            if budget.tool_calls is not None and calls + 1 > budget.tool_calls:
                return "budget.tool_calls", requests, calls
            calls += 1
    raise AssertionError("the script always ends with a final answer")


@settings(max_examples=examples(80), deadline=None)
@given(
    scripts,
    st.builds(RunBudget, requests=limits, output_tokens=token_limits, tool_calls=limits),
    st.none() | st.integers(min_value=MIN_OUTPUT_TOKENS, max_value=150),
)
async def test_the_run_stops_at_the_first_request_or_call_that_would_pass_a_limit(
    script: list[Turn], budget: RunBudget, max_output: int | None
) -> None:
    chat = MeteredChat(script)

    run = await _run(chat, LoopSettings(run_budget=budget), _options(max_output))

    reason, requests, calls = _expected_stop(script, budget, max_output)
    assert (run.stop_reason, len(chat.requests), len(_ran(run))) == (reason, requests, calls)
    # What the run had stays: every answer it got, every call it answered.
    assert len(run.responses) == requests


def _keyless(
    requests: list[tuple[tuple[ChatMessage, ...], ChatOptions | None]],
) -> list[tuple[tuple[ChatMessage, ...], ChatOptions | None]]:
    return [(messages, sent and attrs.evolve(sent, prompt_cache_key=None)) for messages, sent in requests]


@settings(max_examples=examples(40), deadline=None)
@given(scripts, st.none() | st.integers(min_value=MIN_OUTPUT_TOKENS, max_value=150))
async def test_without_a_budget_every_request_goes_as_it_did(
    script: list[Turn], max_output: int | None
) -> None:
    options = _options(max_output)
    unbudgeted, empty = MeteredChat(script), MeteredChat(script)

    run = await _run(unbudgeted, LoopSettings(), options)
    await _run(empty, LoopSettings(run_budget=RunBudget()), options)

    assert run.stop_reason is None
    # Each run has its own prompt cache key; the rest of every request is the same.
    assert _keyless(unbudgeted.requests) == _keyless(empty.requests)
    for _, sent in unbudgeted.requests:
        # Only what the loop always sets differs from the caller's options: no cap, no deadline added.
        assert sent is not None
        unchanged = attrs.evolve(
            sent, initiator="user", tools=options.tools, tool_choice=None, prompt_cache_key=None
        )
        assert unchanged == options


async def test_an_output_budget_lowers_the_cap_to_what_is_left() -> None:
    chat = MeteredChat([Turn("", 1, 60), Turn("done", 0, 60)])

    run = await _run(
        chat, LoopSettings(run_budget=RunBudget(output_tokens=100), max_output_tokens=80), _options()
    )

    # The first request leaves the cap to the chat's own (80, within the budget); the second is lowered.
    assert [sent.max_output_tokens for _, sent in chat.requests if sent is not None] == [None, 40]
    assert run.stop_reason is None
    assert _spent(run).output_tokens == 100
    # The last answer ran into the lowered cap, so the run is not complete.
    assert run.final.status == "incomplete"
    assert not run.complete


async def test_an_input_budget_stops_before_a_request_the_estimate_says_would_pass_it() -> None:
    chat = MeteredChat([Turn("", 2, 20), Turn("", 2, 20), Turn("done", 0, 20)])
    first_input = estimate_tokens(USER, _options())

    run = await _run(chat, LoopSettings(run_budget=RunBudget(input_tokens=first_input * 2)), _options())

    assert run.stop_reason == "budget.input_tokens"
    assert len(chat.requests) == 1
    assert [record.call.call_id for record in run.tool_calls] == ["call_1_0", "call_1_1"]


async def test_a_cost_budget_stops_before_the_request_that_would_cost_too_much() -> None:
    chat = MeteredChat([Turn("", 1, 20), Turn("", 1, 20), Turn("", 1, 20), Turn("done", 0, 20)], price=0.01)
    first = await MeteredChat([Turn("", 1, 20)], price=0.01).get_response(USER, _options(20))
    assert first.usage is not None
    assert first.usage.cost_usd is not None

    run = await _run(
        chat, LoopSettings(run_budget=RunBudget(cost_usd=first.usage.cost_usd * 2.5)), _options(20)
    )

    assert run.stop_reason == "budget.cost_usd"
    assert len(chat.requests) == 2
    assert (_spent(run).cost_usd or 0) <= first.usage.cost_usd * 2.5


async def test_a_budget_stop_ends_the_pipeline_incomplete_with_what_it_had() -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "record_decision", '{"decision": "Ship on Friday", "lines": [1]}'),
                ("c2", "record_decision", '{"decision": "Freeze on Thursday", "lines": [2]}'),
            ),
            usage=Usage(100, 20, 120, cost_usd=0.002),
        ),
        ScriptedTurn(text="never asked"),
    )
    agent = SummaryAgent(chat, LoopSettings(run_budget=RunBudget(tool_calls=1)))

    summary = await agent.summarize("Ana: we ship on Friday.\nBen: and freeze on Thursday.")

    assert summary.stop_reason == "budget.tool_calls"
    assert not summary.complete
    assert summary.decisions == (Decision("Ship on Friday", (1,)),)
    assert summary.usage == Usage(100, 20, 120, cost_usd=0.002)
    assert chat.remaining == 1


async def test_the_events_of_a_stopped_run_end_with_its_result() -> None:
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "alpha", "{}"),)), ScriptedTurn(text="never asked"))
    loop = ToolLoop(chat, LoopSettings(run_budget=RunBudget(requests=1)))

    events = [event async for event in loop.run_events(USER, _options(), RecordingTools())]

    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.stop_reason == "budget.requests"
    assert len(finished.result.tool_calls) == 1
    assert len(chat.requests) == 1


class SlowTools:
    """Tools that take ``seconds`` a call (longer than the run may last)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = 0

    async def invoke(self, call: object) -> object:
        self.started += 1
        await asyncio.sleep(self.seconds)
        raise AssertionError("the deadline should have ended the call")


@pytest.mark.parametrize("concurrent", [True, False])
async def test_the_run_deadline_ends_a_tool_call_that_runs_past_it(concurrent: bool) -> None:
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "alpha", "{}"), ("c2", "beta", "{}"))), ScriptedTurn("no"))
    tools = SlowTools(60)
    loop = ToolLoop(chat, LoopSettings(run_deadline_seconds=0.2, concurrent_tool_calls=concurrent))

    run = await asyncio.wait_for(loop.run(USER, _options(), tools), 30)  # type: ignore[arg-type]  # duck-typed tools

    assert run.stop_reason == "deadline"
    # Neither call finished: both are answered budget_exceeded, so the history holds a result for each.
    assert [(record.call.call_id, _code(record)) for record in run.tool_calls] == [
        ("c1", BUDGET_EXCEEDED),
        ("c2", BUDGET_EXCEEDED),
    ]
    assert len(chat.requests) == 1
    assert tools.started == (2 if concurrent else 1)


class StalledChat:
    """A chat that never answers and ignores the deadline its options give: the loop's own bound ends it."""

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        yield ChatResponseUpdate((TextContent("So far"),), item_index=0)
        await asyncio.Event().wait()


async def test_a_chat_that_ignores_the_deadline_is_ended_by_the_loop_with_what_it_had() -> None:
    loop = ToolLoop(StalledChat(), LoopSettings(run_deadline_seconds=0.1))

    whole = await asyncio.wait_for(loop.run(USER, _options(), RecordingTools()), 30)
    events = [e async for e in loop.run_events(USER, _options(), RecordingTools())]

    assert whole.stop_reason == "deadline"
    assert whole.responses == ()
    streamed = events[-1]
    assert isinstance(streamed, RunFinished)
    assert streamed.result.stop_reason == "deadline"
    assert streamed.result.text == "So far"
    assert streamed.result.final.status == "incomplete"


def test_a_budget_refuses_a_limit_that_is_not_positive() -> None:
    for bad in ({"requests": 0}, {"tool_calls": -1}, {"cost_usd": 0.0}, {"cost_usd": math.nan}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RunBudget(**bad)
    assert not RunBudget()
    assert RunBudget(requests=1)
