"""ToolLoop: rounds of model output and guarded tool results, its limits and its failure path."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    GuardedToolInvoker,
    LoopSettings,
    RoundFinished,
    RoundStarted,
    RunEvent,
    RunFinished,
    TextDelta,
    ToolCallFinished,
    ToolLoop,
    ToolRegistry,
    ToolRun,
    ToolRunError,
    error_result,
)
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    FunctionCallContent,
    FunctionResultContent,
    MalformedResponseError,
    ResponseFailedError,
    ToolInvokerPort,
    ToolSpec,
    Usage,
)
from tests.strategies import MARKER, loop_scripts, repeating_call_turns
from tests.support.doubles import CallLog, FailingTools, NoAclose, RecordingTools, WholeAnswers
from tests.support.examples import examples
from tests.support.runs import leave_at

USER = (ChatMessage.user("hello"),)


def options(*names: str) -> ChatOptions:
    return ChatOptions(instructions="be brief", tools=tuple(ToolSpec(n) for n in names), tool_choice="auto")


def calls_turn(*calls: tuple[str, str, str], usage: Usage | None = None) -> ScriptedTurn:
    return ScriptedTurn(calls=calls, usage=usage)


def tool_results(message: ChatMessage) -> list[FunctionResultContent]:
    assert message.role == "tool"
    return [c for c in message.contents if isinstance(c, FunctionResultContent)]


async def test_a_round_appends_the_output_as_returned_and_one_result_per_call_in_order() -> None:
    raw_a, raw_b = '{"b": 1,  "a": [ ]}', "{"
    chat = ScriptedChat(calls_turn(("c1", "a", raw_a), ("c2", "b", raw_b)), ScriptedTurn(text="done"))

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("a", "b"), RecordingTools())

    assert chat.requests[0].messages == USER
    follow_up = chat.requests[1].messages
    assert follow_up[0] == USER[0]
    assistant, tool = follow_up[1], follow_up[2]
    assert assistant == run.messages[0]
    assert [c.raw_arguments for c in assistant.function_calls] == [raw_a, raw_b]
    assert [(r.call_id, r.is_error) for r in tool_results(tool)] == [("c1", False), ("c2", True)]
    assert tool_results(tool)[0].result == "ran a"
    assert len(follow_up) == 3


async def test_the_first_request_is_the_users_and_the_rest_the_agents() -> None:
    chat = ScriptedChat(calls_turn(("c1", "a", "{}")), calls_turn(("c2", "a", "{}")), ScriptedTurn(text="ok"))

    await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    assert [r.options.initiator for r in chat.requests if r.options] == ["user", "agent", "agent"]
    assert all(r.options and r.options.instructions == "be brief" for r in chat.requests)


async def test_the_run_holds_every_message_the_summed_usage_and_the_last_response() -> None:
    chat = ScriptedChat(
        calls_turn(("c1", "a", "{}"), usage=Usage(10, 2, 12, None, 1)),
        ScriptedTurn(text="final words", usage=Usage(20, 3, 23, 5, None), response_id="resp_last"),
    )

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    assert [m.role for m in run.messages] == ["assistant", "tool", "assistant"]
    assert run.messages[0] == run.responses[0].messages[0]
    assert run.usage == Usage(30, 5, 35, 5, 1)
    assert [r.response_id for r in run.responses] == ["resp_scripted_1", "resp_last"]
    assert run.final is run.responses[-1]
    assert run.final.finish_reason == "stop"
    assert run.final.response_id == "resp_last"
    assert run.text == "final words"
    assert run.iterations == 1
    assert [(r.call.call_id, r.result.result, r.guarded) for r in run.tool_calls] == [("c1", "ran a", False)]


async def test_usage_stays_unknown_when_no_response_reports_it() -> None:
    chat = ScriptedChat(calls_turn(("c1", "a", "{}")), ScriptedTurn(text="ok"))
    run = await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())
    assert run.usage is None


async def test_the_loop_guards_the_raw_tools_it_is_handed() -> None:
    echo = RecordingTools()
    chat = ScriptedChat(calls_turn(("c1", "a", f'{{"x": "{MARKER}"'), ("c2", "a", "{}")), ScriptedTurn())

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("a"), echo)

    assert [c.call_id for c in echo.calls] == ["c2"]
    assert [r.guarded for r in run.tool_calls] == [True, False]
    assert isinstance(run.tool_calls[0].result.result, dict)
    assert run.tool_calls[0].result.result["error"] == "invalid_tool_arguments"


async def test_decorators_wrap_the_one_guard_in_order_and_see_every_call_refused_ones_included() -> None:
    seen: list[tuple[str, str]] = []
    inner, outer = CallLog("inner", seen), CallLog("outer", seen)
    echo = RecordingTools()
    chat = ScriptedChat(calls_turn(("c1", "a", "{"), ("c2", "a", "{}")), ScriptedTurn())
    loop = ToolLoop(chat, LoopSettings(concurrent_tool_calls=False), decorators=(inner, outer))

    run = await loop.run(USER, options("a"), echo)

    # The first decorator wraps the guard the loop built; the second wraps the first.
    assert isinstance(inner.wrapped[0], GuardedToolInvoker)
    assert not isinstance(outer.wrapped[0], GuardedToolInvoker)
    assert seen == [("outer", "c1"), ("inner", "c1"), ("outer", "c2"), ("inner", "c2")]
    assert [c.call_id for c in echo.calls] == ["c2"]
    assert [r.guarded for r in run.tool_calls] == [True, False]


async def test_decorators_are_applied_once_per_run() -> None:
    only = CallLog()
    loop = ToolLoop(
        ScriptedChat(
            calls_turn(("c1", "a", "{}")), calls_turn(("c2", "a", "{}")), ScriptedTurn(), ScriptedTurn()
        ),
        decorators=(only,),
    )

    await loop.run(USER, options("a"), RecordingTools())
    await loop.run(USER, options("a"), RecordingTools())

    assert len(only.wrapped) == 2
    assert only.wrapped[0] is not only.wrapped[1]


async def test_guarded_reports_what_the_guard_refused_not_what_a_parser_would_say() -> None:
    def refuse_everything(inner: ToolInvokerPort) -> ToolInvokerPort:
        class Refuser:
            async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
                return error_result(call.call_id, "not_approved", "A person said no.")

        return Refuser()

    chat = ScriptedChat(calls_turn(("c1", "a", "{"), ("c2", "a", "{}")), ScriptedTurn())

    run = await ToolLoop(chat, decorators=(refuse_everything,)).run(USER, options("a"), RecordingTools())

    # The host's decorator answered before the guard saw anything: nothing was guarded.
    assert [r.guarded for r in run.tool_calls] == [False, False]
    assert {r.result.result["error"] for r in run.tool_calls if isinstance(r.result.result, dict)} == {
        "not_approved"
    }


async def test_what_a_decorator_raises_ends_the_run() -> None:
    def explode(inner: ToolInvokerPort) -> ToolInvokerPort:
        class Exploding:
            async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
                raise LookupError(MARKER)

        return Exploding()

    chat = ScriptedChat(calls_turn(("c1", "a", "{}")), ScriptedTurn())

    with pytest.raises(LookupError):
        await ToolLoop(chat, decorators=(explode,)).run(USER, options("a"), RecordingTools())
    assert len(chat.requests) == 1


async def test_an_unknown_tool_is_answered_and_the_loop_goes_on() -> None:
    registry = ToolRegistry()
    registry.add(lambda: "pong", name="ping")
    chat = ScriptedChat(calls_turn(("c1", "pnig", "{}")), calls_turn(("c2", "ping", "{}")), ScriptedTurn())

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("ping"), registry)

    assert [r.result.result for r in run.tool_calls] == [
        {"error": "unknown_tool", "message": "No tool of that name is offered. The tools are: ping."},
        "pong",
    ]
    assert len(chat.requests) == 3


@pytest.mark.parametrize("detailed", [False, True])
async def test_a_failing_tools_exception_text_reaches_the_model_only_with_detailed_errors(
    detailed: bool,
) -> None:
    registry = ToolRegistry(detailed_errors=detailed)

    @registry.tool()
    def boom() -> str:
        raise RuntimeError(MARKER)

    chat = ScriptedChat(calls_turn(("c1", "boom", "{}")), ScriptedTurn(text="sorry"))

    await ToolLoop(chat, LoopSettings(detailed_tool_errors=detailed)).run(USER, options("boom"), registry)

    (result,) = tool_results(chat.requests[1].messages[-1])
    assert result.is_error
    assert isinstance(result.result, dict)
    assert result.result["error"] == "tool_failed"
    assert (MARKER in str(result.result)) is detailed


async def test_after_max_iterations_one_last_request_goes_without_tools() -> None:
    turns = [calls_turn((f"c{i}", "a", "{}")) for i in range(3)]
    chat = ScriptedChat(*turns)

    run = await ToolLoop(chat, LoopSettings(max_tool_iterations=2)).run(USER, options("a"), RecordingTools())

    assert [len(r.options.tools) if r.options else None for r in chat.requests] == [1, 1, 0]
    assert chat.requests[2].options is not None
    assert chat.requests[2].options.tool_choice is None
    # The calls of the last answer were made with no tools on offer: they stay unanswered.
    assert run.iterations == 2
    assert [r.call.call_id for r in run.tool_calls] == ["c0", "c1"]
    assert run.messages[-1].function_calls[0].call_id == "c2"


async def test_the_default_iteration_cap_is_forty() -> None:
    chat = ScriptedChat(*[calls_turn((f"c{i}", "a", "{}")) for i in range(40)], ScriptedTurn(text="enough"))

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    assert len(chat.requests) == 41
    assert [bool(r.options and r.options.tools) for r in chat.requests] == [True] * 40 + [False]
    assert run.iterations == 40
    assert run.text == "enough"


async def test_after_three_rounds_with_errors_in_a_row_tools_are_withdrawn() -> None:
    chat = ScriptedChat(
        calls_turn(("c1", "a", "{")),
        calls_turn(("c2", "a", "{}"), ("c3", "a", "")),
        calls_turn(("c4", "a", "[]")),
        ScriptedTurn(text="I could not use the tools."),
    )

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    assert [bool(r.options and r.options.tools) for r in chat.requests] == [True, True, True, False]
    assert run.text == "I could not use the tools."


async def test_a_clean_round_resets_the_error_budget() -> None:
    chat = ScriptedChat(
        calls_turn(("c1", "a", "{")),
        calls_turn(("c2", "a", "{")),
        calls_turn(("c3", "a", "{}")),
        calls_turn(("c4", "a", "{")),
        calls_turn(("c5", "a", "{")),
        ScriptedTurn(text="ok"),
    )

    await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    assert all(r.options and r.options.tools for r in chat.requests)


async def test_tool_errors_count_like_invalid_arguments() -> None:
    chat = ScriptedChat(calls_turn(("c1", "a", "{}")), calls_turn(("c2", "a", "{}")), ScriptedTurn())

    await ToolLoop(chat, LoopSettings(max_consecutive_tool_errors=2)).run(USER, options("a"), FailingTools())

    assert [bool(r.options and r.options.tools) for r in chat.requests] == [True, True, False]


async def test_without_tools_on_offer_the_loop_asks_once() -> None:
    chat = ScriptedChat(calls_turn(("c1", "a", "{}")))
    echo = RecordingTools()

    run = await ToolLoop(chat).run(USER, None, echo)

    assert len(chat.requests) == 1
    assert echo.calls == []
    assert run.tool_calls == ()
    assert run.iterations == 0


async def test_a_failure_mid_run_is_raised_with_the_run_so_far() -> None:
    failure = ChatTransportError("HTTP 502", status_code=502, request_id="req_1")
    chat = ScriptedChat(calls_turn(("c1", "a", "{}"), usage=Usage(1, 1, 2)), failure)

    with pytest.raises(ChatTransportError) as caught:
        await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    error = caught.value
    # A new error of the adapter error's class, chained from it; the adapter's own is left as it was.
    assert error is not failure
    assert error.__cause__ is failure
    assert isinstance(error, ToolRunError)
    assert not hasattr(failure, "run")
    assert type(error).__name__ == "ChatTransportError"
    assert (error.message, error.status_code, error.request_id) == ("HTTP 502", 502, "req_1")
    assert [m.role for m in error.run.messages] == ["assistant", "tool"]
    assert error.run.usage == Usage(1, 1, 2)
    assert error.run.final.response_id == "resp_scripted_1"
    assert [r.call.call_id for r in error.run.tool_calls] == ["c1"]
    assert error.run.iterations == 1


async def test_a_failure_on_the_first_request_carries_an_empty_run() -> None:
    chat = ScriptedChat(ResponseFailedError("boom", code="server_error"))

    with pytest.raises(ResponseFailedError) as caught:
        await ToolLoop(chat, LoopSettings()).run(USER, options("a"), RecordingTools())

    assert isinstance(caught.value, ToolRunError)
    assert caught.value.run == ToolRun()
    assert caught.value.run.final == ChatResponse()
    assert caught.value.run.text == ""
    assert caught.value.code == "server_error"


class InFlight:
    """Counts how many invocations overlap; each yields to the event loop a few times."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        self.current += 1
        self.peak = max(self.peak, self.current)
        for _ in range(3):
            await asyncio.sleep(0)  # a bare yield to the event loop, not a wait for time to pass
        self.current -= 1
        return FunctionResultContent(call.call_id, call.name)


@pytest.mark.parametrize(("concurrent", "peak"), [(True, 3), (False, 1)])
async def test_calls_of_one_response_run_concurrently_only_when_allowed(concurrent: bool, peak: int) -> None:
    spy = InFlight()
    chat = ScriptedChat(calls_turn(("c1", "a", "{}"), ("c2", "b", "{}"), ("c3", "c", "{}")), ScriptedTurn())

    run = await ToolLoop(chat, LoopSettings(concurrent_tool_calls=concurrent)).run(USER, options("a"), spy)

    assert spy.peak == peak
    assert [r.result.result for r in run.tool_calls] == ["a", "b", "c"]


async def test_results_keep_call_order_when_a_later_call_finishes_first() -> None:
    released = asyncio.Event()

    class Ordered:
        async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
            if call.name == "first":
                await released.wait()
            else:
                released.set()
            return FunctionResultContent(call.call_id, call.name)

    chat = ScriptedChat(calls_turn(("c1", "first", "{}"), ("c2", "second", "{}")), ScriptedTurn())

    run = await ToolLoop(chat, LoopSettings()).run(USER, options("first"), Ordered())

    assert [r.call_id for r in tool_results(run.messages[1])] == ["c1", "c2"]


def test_settings_have_the_mature_defaults_and_refuse_nonsense() -> None:
    assert attrs.asdict(LoopSettings()) == {
        "max_tool_iterations": 40,
        "max_consecutive_tool_errors": 3,
        "concurrent_tool_calls": True,
        "detailed_tool_errors": False,
        "run_budget": {
            "requests": None,
            "input_tokens": None,
            "output_tokens": None,
            "tool_calls": None,
            "cost_usd": None,
            "allow_unmetered": False,
        },
        "run_deadline_seconds": None,
        "max_output_tokens": None,
        "max_calls_per_response": 128,
        "redact": None,
        "max_output_retries": 1,
        "conversation_state": "client",
        "prompt_cache_retention": None,
    }
    with pytest.raises(ValueError, match="max_tool_iterations"):
        LoopSettings(max_tool_iterations=0)
    with pytest.raises(ValueError, match="max_consecutive_tool_errors"):
        LoopSettings(max_consecutive_tool_errors=0)


def test_the_loop_exposes_its_settings() -> None:
    settings = LoopSettings(max_tool_iterations=5)
    assert ToolLoop(ScriptedChat(), settings).settings is settings
    assert ToolLoop(ScriptedChat()).settings == LoopSettings()


@settings(max_examples=examples(200))
@given(turns=repeating_call_turns, concurrent=st.booleans())
async def test_a_call_id_runs_at_most_once_per_run_and_every_call_gets_one_result(
    turns: list[list[tuple[str, str]]], concurrent: bool
) -> None:
    echo = RecordingTools()
    chat = ScriptedChat(
        *(calls_turn(*((cid, "a", raw) for cid, raw in turn)) for turn in turns), ScriptedTurn()
    )
    loop = ToolLoop(chat, LoopSettings(max_consecutive_tool_errors=100, concurrent_tool_calls=concurrent))

    run = await loop.run(USER, options("a"), echo)

    calls = [call for turn in turns for call in turn]
    seen: set[str] = set()
    expected: list[str] = []  # what each call's result must be, in order
    for call_id, raw in calls:
        expected.append("duplicate_call_id" if call_id in seen else "invalid" if raw == "{" else "ran")
        seen.add(call_id)
    assert [c.call_id for c in echo.calls] == [
        cid for (cid, _), e in zip(calls, expected, strict=True) if e == "ran"
    ]
    assert len({c.call_id for c in echo.calls}) == len(echo.calls)
    outcomes = [
        r.result.result["error"] if isinstance(r.result.result, dict) else r.result.result
        for r in run.tool_calls
    ]
    assert outcomes == [
        {"ran": "ran a", "invalid": "invalid_tool_arguments", "duplicate_call_id": "duplicate_call_id"}[e]
        for e in expected
    ]
    assert [r.guarded for r in run.tool_calls] == [e != "ran" for e in expected]
    # One tool message per round, one result per call, in the calls' order and under their ids.
    tool_messages = [m for m in run.messages if m.role == "tool"]
    assert [[r.call_id for r in tool_results(m)] for m in tool_messages] == [
        [cid for cid, _ in t] for t in turns
    ]


# ---------------------------------------------------------------- run events


def scripted(script: list[tuple[str, list[tuple[str, str]]]]) -> ScriptedChat:
    return ScriptedChat(
        *(ScriptedTurn(text=text, calls=[(cid, "a", raw) for cid, raw in calls]) for text, calls in script)
    )


async def collect(events: AsyncIterator[RunEvent[ToolRun]]) -> list[RunEvent[ToolRun]]:
    return [event async for event in events]


def finished(events: list[RunEvent[ToolRun]]) -> ToolRun:
    last = events[-1]
    assert isinstance(last, RunFinished)
    assert not any(isinstance(event, RunFinished) for event in events[:-1])
    return last.result


def round_texts(events: list[RunEvent[ToolRun]]) -> list[str]:
    """The text pieces of each round, each round's pieces joined."""
    texts: list[str] = []
    for event in events:
        if isinstance(event, RoundStarted):
            texts.append("")
        elif isinstance(event, TextDelta):
            texts[-1] += event.text
    return texts


@settings(max_examples=examples(100))
@given(script=loop_scripts(), concurrent=st.booleans())
async def test_the_events_end_with_the_run_that_run_returns_and_report_every_piece_call_and_round(
    script: list[tuple[str, list[tuple[str, str]]]], concurrent: bool
) -> None:
    loop_settings = LoopSettings(max_consecutive_tool_errors=100, concurrent_tool_calls=concurrent)
    whole = await ToolLoop(scripted(script), loop_settings).run(USER, options("a"), RecordingTools())
    chat = scripted(script)

    events = await collect(ToolLoop(chat, loop_settings).run_events(USER, options("a"), RecordingTools()))

    result = finished(events)
    assert result == whole
    assert all(request.stream for request in chat.requests)
    assert [e.round for e in events if isinstance(e, RoundStarted)] == list(range(1, len(script) + 1))
    assert [e.round for e in events if isinstance(e, RoundFinished)] == list(range(1, len(script) + 1))
    assert [e.response for e in events if isinstance(e, RoundFinished)] == list(result.responses)
    assert round_texts(events) == [response.text for response in result.responses]
    # One ToolCallFinished per answered call, in the order they were answered.
    unreported = list(result.tool_calls)
    for event in events:
        if isinstance(event, ToolCallFinished):
            unreported.remove(event.record)
    assert unreported == []
    assert sum(isinstance(e, ToolCallFinished) for e in events) == len(result.tool_calls)
    assert [r for e in events if isinstance(e, RoundFinished) for r in e.tool_calls] == list(
        result.tool_calls
    )


async def test_a_chat_with_only_whole_answers_gives_each_answers_text_as_one_piece() -> None:
    script = [("Let me look.", [("c1", "{}")]), ("It is done.", [])]
    whole = await ToolLoop(scripted(script)).run(USER, options("a"), RecordingTools())
    chat = scripted(script)

    events = await collect(ToolLoop(WholeAnswers(chat)).run_events(USER, options("a"), RecordingTools()))

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Let me look.", "It is done."]
    assert finished(events) == whole
    assert not any(request.stream for request in chat.requests)


class ClosingSpy(WholeAnswers[ScriptedChat]):
    """A streaming ChatPort over a script that counts the streams it opened and the ones closed."""

    def __init__(self, inner: ScriptedChat) -> None:
        super().__init__(inner)
        self.opened = 0
        self.closed = 0

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        self.opened += 1
        try:
            async for update in self.inner.get_streaming_response(messages, options):
                yield update
        finally:
            self.closed += 1


async def test_leaving_at_the_first_text_closes_the_models_stream_and_runs_no_tool() -> None:
    echo = RecordingTools()
    chat = ClosingSpy(scripted([("a long answer", [("c1", "{}")]), ("done", [])]))
    await leave_at(ToolLoop(chat).run_events(USER, options("a"), echo), TextDelta)

    assert (chat.opened, chat.closed) == (1, 1)
    assert echo.calls == []
    assert len(chat.inner.requests) == 1


async def test_leaving_after_the_first_answered_call_runs_no_further_tool() -> None:
    echo = RecordingTools()
    chat = scripted([("", [("c1", "{}"), ("c2", "{}")]), ("", [("c3", "{}")]), ("done", [])])
    await leave_at(
        ToolLoop(chat, LoopSettings(concurrent_tool_calls=False)).run_events(USER, options("a"), echo),
        ToolCallFinished,
    )

    assert [c.call_id for c in echo.calls] == ["c1"]
    assert len(chat.requests) == 1


class Stalling:
    """Answers ``quick`` calls at once; ``slow`` ones wait until cancelled, which is recorded."""

    def __init__(self) -> None:
        self.slow_started = asyncio.Event()
        self.cancelled: list[str] = []
        self.answered: list[str] = []

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        if call.name == "slow":
            self.slow_started.set()
            try:
                await asyncio.Event().wait()  # never set: only cancellation ends this call
            except asyncio.CancelledError:
                self.cancelled.append(call.call_id)
                raise
        self.answered.append(call.call_id)
        return FunctionResultContent(call.call_id, "done")


async def test_cancelling_a_run_cancels_the_calls_in_flight_and_starts_no_other() -> None:
    tools = Stalling()
    chat = ScriptedChat(
        calls_turn(("c1", "slow", "{}"), ("c2", "quick", "{}")),
        calls_turn(("c3", "quick", "{}")),
        ScriptedTurn(),
    )
    quick_reported = asyncio.Event()

    async def consume() -> None:
        async for event in ToolLoop(chat).run_events(USER, options("slow", "quick"), tools):
            if isinstance(event, ToolCallFinished):
                quick_reported.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(asyncio.gather(tools.slow_started.wait(), quick_reported.wait()), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=10)

    assert tools.cancelled == ["c1"]
    assert tools.answered == ["c2"]
    assert len(chat.requests) == 1


async def test_a_decorator_raising_under_concurrency_cancels_the_other_calls_of_its_round() -> None:
    tools = Stalling()

    def explode_on_quick(inner: ToolInvokerPort) -> ToolInvokerPort:
        class Exploding:
            async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
                if call.name == "quick":
                    await asyncio.wait_for(tools.slow_started.wait(), timeout=10)
                    raise LookupError(MARKER)
                return await inner.invoke(call)

        return Exploding()

    chat = ScriptedChat(calls_turn(("c1", "slow", "{}"), ("c2", "quick", "{}")), ScriptedTurn())

    with pytest.raises(LookupError):
        await ToolLoop(chat, decorators=(explode_on_quick,)).run(USER, options("slow", "quick"), tools)

    assert tools.cancelled == ["c1"]


async def test_a_stream_that_fails_gives_its_text_then_raises_with_the_run_so_far() -> None:
    partial = ChatResponse(messages=(ChatMessage.assistant("half an ans"),), response_id="resp_cut")
    failure = MalformedResponseError("the stream ended early", partial=partial, response_id="resp_cut")
    chat = ScriptedChat(calls_turn(("c1", "a", "{}")), failure)
    seen: list[RunEvent[ToolRun]] = []

    async def consume() -> None:
        async for event in ToolLoop(chat).run_events(USER, options("a"), RecordingTools()):
            seen.append(event)

    with pytest.raises(MalformedResponseError) as caught:
        await consume()

    error = caught.value
    assert isinstance(error, ToolRunError)
    assert error.__cause__ is failure
    assert error.partial is partial
    assert round_texts(seen) == ["", "half an ans"]
    assert [r.call.call_id for r in error.run.tool_calls] == ["c1"]
    assert len(error.run.responses) == 1


async def test_a_result_a_decorator_files_under_another_id_still_answers_its_call() -> None:
    def misfiling(inner: ToolInvokerPort) -> ToolInvokerPort:
        class Misfiling:
            async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
                return attrs.evolve(await inner.invoke(call), call_id="someone-else")

        return Misfiling()

    chat = ScriptedChat(calls_turn(("c1", "a", "{}")), ScriptedTurn())

    run = await ToolLoop(chat, decorators=(misfiling,)).run(USER, options("a"), RecordingTools())

    assert [(r.call.call_id, r.result.call_id) for r in run.tool_calls] == [("c1", "c1")]
    assert [r.call_id for r in tool_results(run.messages[1])] == ["c1"]


async def test_a_stream_without_aclose_is_read_to_its_end() -> None:
    assert not hasattr(NoAclose(ScriptedChat()).get_streaming_response([]), "aclose")
    chat = NoAclose(ScriptedChat(ScriptedTurn(text="plain words")))

    events = await collect(ToolLoop(chat).run_events(USER, None, RecordingTools()))

    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "plain words"
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1
    assert finished(events).text == "plain words"
