"""Approval before a tool runs: the loop holds an answer, pauses or asks, and resumes as if never stopped."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalRequested,
    Approve,
    Deny,
    LoopSettings,
    RoundStarted,
    RunEvent,
    RunFinished,
    ToolCallFinished,
    ToolLoop,
    ToolRegistry,
    ToolRun,
    WorkflowEditorAgent,
    dumps,
    loads,
)
from domain import ChatMessage, ChatOptions, FunctionResultContent, Workflow, WorkflowStep
from tests.support.doubles import CallLog
from tests.support.examples import examples

USER = (ChatMessage.user("tidy the rooms"),)


@attrs.frozen
class Room:
    n: int
    tag: str = ""


def args(n: int, tag: str) -> str:
    return json.dumps({"n": n, "tag": tag})


class Tools:
    """A registry of three tools (one free, one always held, one held for even ``n``) and what ran."""

    def __init__(self, log: list[tuple[str, ...]] | None = None) -> None:
        self.log: list[tuple[str, ...]] = [] if log is None else log
        self.registry = ToolRegistry()
        for name, approval in (("free", False), ("held", True), ("even", _even)):
            self.registry.add(self._tool(name), name=name, params=Room, needs_approval=approval)

    def _tool(self, name: str) -> Callable[[Room], dict[str, object]]:
        def run(params: Room) -> dict[str, object]:
            self.log.append(("ran", params.tag))
            return {"ran": name, "n": params.n}

        return run

    @property
    def ran(self) -> list[str]:
        """The tags of the calls that ran, in the order they ran."""
        return [entry[1] for entry in self.log if entry[0] == "ran"]


def _even(params: Room) -> bool:
    return params.n % 2 == 0


def options() -> ChatOptions:
    return ChatOptions(instructions="be brief", tools=Tools().registry.specs)


# ---------------------------------------------------------------- planned answers

MALFORMED = '{"n": 1'


@attrs.frozen
class Planned:
    call_id: str
    name: str
    raw: str
    decision: ApprovalDecision


@st.composite
def answers(draw: st.DrawFn) -> list[list[Planned]]:
    """One or two answers of calls (malformed, held, maybe held, free, repeated ids), each with a decision."""
    turns: list[list[Planned]] = []
    ids: list[str] = []
    for turn in range(draw(st.integers(1, 2))):
        calls: list[Planned] = []
        for index in range(draw(st.integers(1, 5))):
            if ids and draw(st.integers(0, 4)) == 0:
                call_id = draw(st.sampled_from(ids))  # a repeated id: duplicate_call_id, never held
            else:
                call_id = f"c{turn}{index}"
                ids.append(call_id)
            name = draw(st.sampled_from(["free", "held", "even"]))
            raw = draw(st.sampled_from([args(index, call_id), MALFORMED]))
            decisions: list[ApprovalDecision] = [Approve(), Deny(), Deny(reason="not today")]
            decision = draw(st.sampled_from(decisions))
            calls.append(Planned(call_id, name, raw, decision))
        turns.append(calls)
    return turns


def script(turns: Sequence[Sequence[Planned]], first: int = 0) -> ScriptedChat:
    """The answers, then a closing text; response ids count from ``first``, whichever chat plays them."""
    return ScriptedChat(
        *(
            ScriptedTurn(calls=tuple((p.call_id, p.name, p.raw) for p in calls), response_id=f"r{first + i}")
            for i, calls in enumerate(turns)
        ),
        ScriptedTurn(text="Done.", response_id=f"r{first + len(turns)}"),
    )


def plan_of(turns: Sequence[Sequence[Planned]]) -> dict[str, ApprovalDecision]:
    # A repeated id is never held; the first occurrence's decision is the one asked for.
    plan: dict[str, ApprovalDecision] = {}
    for calls in turns:
        for planned in calls:
            plan.setdefault(planned.call_id, planned.decision)
    return plan


async def approved_by(
    turns: Sequence[Sequence[Planned]], concurrent: bool
) -> tuple[ToolRun, ScriptedChat, Tools]:
    """``turns`` run with an approver that decides each call as planned (:func:`plan_of`)."""
    plan = plan_of(turns)
    tools = Tools()

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        tools.log.append(("asked", request.call_id))
        return plan[request.call_id]

    chat = script(turns)
    loop = ToolLoop(chat, LoopSettings(concurrent_tool_calls=concurrent), approver=approver)
    return await loop.run(USER, options(), tools.registry), chat, tools


async def paused_and_resumed(
    turns: Sequence[Sequence[Planned]], concurrent: bool
) -> tuple[ToolRun, ScriptedChat, Tools, list[ToolRun]]:
    """``turns`` run without an approver, paused at each held answer and resumed with the decisions
    planned (:func:`plan_of`): the run, the chat, the tools and every paused run."""
    plan = plan_of(turns)
    tools = Tools()
    chat = script(turns)
    loop = ToolLoop(chat, LoopSettings(concurrent_tool_calls=concurrent))
    run = await loop.run(USER, options(), tools.registry)
    paused = []
    while run.state is not None:
        paused.append(run)
        # Nothing of the held answer has run (a call's tag is its id).
        calls = run.final.function_calls
        unanswered = {
            call.call_id for call, record in zip(calls, run.state.held, strict=True) if record is None
        }
        assert not unanswered & set(tools.ran)
        decisions = {request.call_id: plan[request.call_id] for request in run.pending}
        # Stored and read back, as a host keeps it while a person decides.
        stored = loads(dumps(run.state))
        assert stored == run.state
        run = await loop.resume(stored, decisions, tools.registry)
    return run, chat, tools, paused


def requests_of(chat: ScriptedChat) -> list[tuple[tuple[ChatMessage, ...], ChatOptions | None]]:
    """What each request sent, but for the run's own prompt cache key: one per run, so two runs differ
    there (every request of the run carries the same one, paused and resumed runs included)."""
    keys = {request.options.prompt_cache_key for request in chat.requests if request.options is not None}
    assert len(keys) <= 1
    return [
        (
            request.messages,
            None if request.options is None else attrs.evolve(request.options, prompt_cache_key=None),
        )
        for request in chat.requests
    ]


# ---------------------------------------------------------------- properties


@settings(max_examples=examples(60))
@given(turns=answers(), concurrent=st.booleans())
async def test_a_paused_and_resumed_run_sends_what_a_run_with_an_approver_sends(
    turns: list[list[Planned]], concurrent: bool
) -> None:
    asked, asked_chat, asked_tools = await approved_by(turns, concurrent)
    resumed, resumed_chat, resumed_tools, _ = await paused_and_resumed(turns, concurrent)

    assert requests_of(resumed_chat) == requests_of(asked_chat)
    assert resumed == asked
    assert resumed.status == "done"
    assert resumed.pending == ()
    assert resumed.state is None
    assert sorted(resumed_tools.ran) == sorted(asked_tools.ran)


@settings(max_examples=examples(60))
@given(turns=answers(), concurrent=st.booleans())
async def test_every_call_is_answered_once_in_call_order_and_denied_calls_never_run(
    turns: list[list[Planned]], concurrent: bool
) -> None:
    run, _, tools, paused = await paused_and_resumed(turns, concurrent)
    plan = plan_of(turns)

    tool_messages = [message for message in run.messages if message.role == "tool"]
    assert len(tool_messages) == len(turns)
    for calls, message in zip(turns, tool_messages, strict=True):
        results = [content for content in message.contents if isinstance(content, FunctionResultContent)]
        assert [result.call_id for result in results] == [p.call_id for p in calls]
    assert [record.call.call_id for record in run.tool_calls] == [p.call_id for calls in turns for p in calls]
    denied = {
        request.call_id
        for stopped in paused
        for request in stopped.pending
        if isinstance(plan[request.call_id], Deny)
    }
    for record in run.tool_calls:
        if record.call.call_id in denied and not record.guarded:
            assert isinstance(record.result.result, Mapping)
            assert record.result.result["error"] == "approval_denied"
    assert not denied & set(tools.ran)


@settings(max_examples=examples(60))
@given(turns=answers(), concurrent=st.booleans())
async def test_nothing_of_a_held_answer_runs_before_every_decision(
    turns: list[list[Planned]], concurrent: bool
) -> None:
    run, _, tools = await approved_by(turns, concurrent)

    seen: set[str] = set()
    for calls in turns:
        fresh = {p.call_id for p in calls} - seen
        seen |= fresh
        asked = [i for i, entry in enumerate(tools.log) if entry == ("asked", entry[1]) and entry[1] in fresh]
        ran = [i for i, entry in enumerate(tools.log) if entry == ("ran", entry[1]) and entry[1] in fresh]
        if asked and ran:
            assert max(asked) < min(ran)
    assert run.status == "done"


# ---------------------------------------------------------------- pausing


async def test_an_answer_with_a_held_call_stops_the_run_before_any_of_its_calls_runs() -> None:
    tools = Tools()
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(("a", "free", args(1, "a")), ("b", "held", args(2, "b")), ("c", "free", MALFORMED))
        ),
    )
    run = await ToolLoop(chat).run(USER, options(), tools.registry)

    assert run.status == "awaiting_approval"
    assert run.pending == (ApprovalRequest("b", "held", {"n": 2, "tag": "b"}, args(2, "b")),)
    assert tools.ran == []
    # The guard answered the malformed call first; the free one waits with the held one.
    assert [(r.call.call_id, r.guarded) for r in run.tool_calls] == [("c", True)]
    assert run.messages[-1].role == "assistant"
    assert len(chat.requests) == 1
    assert run.state is not None
    assert [None if r is None else r.call.call_id for r in run.state.held] == [None, None, "c"]


async def test_resuming_goes_on_as_if_the_run_had_never_stopped() -> None:
    tools = Tools()
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(("a", "free", args(1, "a")), ("b", "held", args(2, "b")), ("c", "held", args(3, "c")))
        ),
        ScriptedTurn(calls=(("b", "held", args(2, "b")),)),  # a repeated id stays a duplicate after resuming
        ScriptedTurn(text="Done."),
    )
    loop = ToolLoop(chat)
    paused = await loop.run(USER, options(), tools.registry)
    assert paused.state is not None
    decisions: dict[str, ApprovalDecision] = {"b": Approve(), "c": Deny(reason="room 3 is booked")}
    run = await loop.resume(paused.state, decisions, tools.registry)

    assert run.status == "done"
    assert run.text == "Done."
    assert tools.ran == ["a", "b"]
    results = {r.call.call_id + str(i): r.result for i, r in enumerate(run.tool_calls)}
    assert results["a0"] == FunctionResultContent("a", {"ran": "free", "n": 1})
    denied = results["c2"]
    assert denied.is_error
    assert isinstance(denied.result, Mapping)
    assert denied.result["error"] == "approval_denied"
    assert "room 3 is booked" in str(denied.result["message"])
    duplicate = results["b3"]
    assert isinstance(duplicate.result, Mapping)
    assert duplicate.result["error"] == "duplicate_call_id"
    assert [r.options.initiator for r in chat.requests if r.options] == ["user", "agent", "agent"]
    assert run.iterations == 2


async def test_resuming_leaves_the_state_as_it_was() -> None:
    tools = Tools()
    chat = ScriptedChat(ScriptedTurn(calls=(("b", "held", args(2, "b")),)), ScriptedTurn(text="ok"))
    loop = ToolLoop(chat)
    paused = await loop.run(USER, options(), tools.registry)
    state = paused.state
    assert state is not None
    copy = attrs.evolve(state)

    first = await ToolLoop(ScriptedChat(ScriptedTurn(text="ok"))).resume(
        state, {"b": Approve()}, tools.registry
    )
    second = await ToolLoop(ScriptedChat(ScriptedTurn(text="ok"))).resume(
        state, {"b": Approve()}, tools.registry
    )

    assert state == copy
    # A state resumed twice runs its approved call twice: why a host keeps a resumed state as spent.
    assert first == second
    assert tools.ran == ["b", "b"]


@pytest.mark.parametrize(
    ("decisions", "words"),
    [
        ({}, "no decision given: 'b'"),
        ({"b": Approve(), "c": Approve()}, "no decision given: 'd'"),
        ({"b": Approve(), "c": Approve(), "d": Deny(), "zz": Approve()}, "not waiting for approval: 'zz'"),
        ([("b", Approve()), ("c", Deny()), ("d", Approve()), ("b", Deny())], "decided more than once: 'b'"),
    ],
)
async def test_missing_unknown_or_repeated_decisions_are_refused_before_anything_runs(
    decisions: Any, words: str
) -> None:
    tools = Tools()
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(("b", "held", args(2, "b")), ("c", "held", args(3, "c")), ("d", "even", args(4, "d")))
        ),
        ScriptedTurn(text="ok"),
    )
    loop = ToolLoop(chat)
    paused = await loop.run(USER, options(), tools.registry)
    assert paused.state is not None
    assert len(paused.pending) == 3

    with pytest.raises(ValueError, match=words):
        await loop.resume(paused.state, decisions, tools.registry)
    with pytest.raises(ValueError, match=words):
        loop.resume_events(paused.state, decisions, tools.registry)
    assert tools.ran == []
    assert len(chat.requests) == 1


async def test_a_decision_that_is_neither_approve_nor_deny_is_refused() -> None:
    tools = Tools()
    loop = ToolLoop(ScriptedChat(ScriptedTurn(calls=(("b", "held", args(2, "b")),))))
    paused = await loop.run(USER, options(), tools.registry)
    assert paused.state is not None
    with pytest.raises(TypeError, match="not Approve"):
        await loop.resume(paused.state, {"b": True}, tools.registry)  # type: ignore[arg-type]  # on purpose
    assert tools.ran == []


async def test_an_approver_that_answers_something_else_ends_the_run() -> None:
    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        return "yes"  # type: ignore[return-value]  # a host's mistake, on purpose

    tools = Tools()
    loop = ToolLoop(ScriptedChat(ScriptedTurn(calls=(("b", "held", args(2, "b")),))), approver=approver)
    with pytest.raises(TypeError, match="approver answered a str"):
        await loop.run(USER, options(), tools.registry)
    assert tools.ran == []


# ---------------------------------------------------------------- the policy


async def test_a_predicate_decides_per_call_and_arguments_that_do_not_fit_are_never_held() -> None:
    tools = Tools()
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(
                ("odd", "even", args(1, "odd")),
                ("even", "even", args(2, "even")),
                ("wrong", "held", '{"n": "two", "tag": "wrong"}'),
                ("none", "nope", "{}"),
            )
        ),
    )
    run = await ToolLoop(chat).run(USER, options(), tools.registry)
    assert [request.call_id for request in run.pending] == ["even"]


async def test_a_predicate_that_raises_holds_the_call() -> None:
    def broken(params: Room) -> bool:
        raise RuntimeError("cannot say")

    registry = ToolRegistry()
    registry.add(lambda params: {}, name="risky", params=Room, needs_approval=broken)
    run = await ToolLoop(ScriptedChat(ScriptedTurn(calls=(("r", "risky", args(1, "r")),)))).run(
        USER, ChatOptions(tools=registry.specs), registry
    )
    assert [request.call_id for request in run.pending] == ["r"]


def test_a_registry_is_an_approval_policy() -> None:
    policy: ApprovalPolicy = Tools().registry
    assert isinstance(policy, ApprovalPolicy)


async def test_an_invoker_without_a_policy_never_pauses() -> None:
    tools = Tools()

    class Plain:
        async def invoke(self, call: Any) -> FunctionResultContent:
            return await tools.registry.invoke(call)

    run = await ToolLoop(
        ScriptedChat(ScriptedTurn(calls=(("b", "held", args(2, "b")),)), ScriptedTurn(text="ok"))
    ).run(USER, options(), Plain())
    assert run.status == "done"
    assert tools.ran == ["b"]


# ---------------------------------------------------------------- events and the chain


async def test_approval_requests_are_reported_before_the_pause() -> None:
    tools = Tools()
    chat = ScriptedChat(ScriptedTurn(calls=(("a", "free", MALFORMED), ("b", "held", args(2, "b")))))
    events = [event async for event in ToolLoop(chat).run_events(USER, options(), tools.registry)]

    kinds = [type(event).__name__ for event in events]
    assert kinds[-3:] == ["ToolCallFinished", "ApprovalRequested", "RunFinished"]
    assert events[-2] == ApprovalRequested(ApprovalRequest("b", "held", {"n": 2, "tag": "b"}, args(2, "b")))
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.status == "awaiting_approval"


async def test_paused_then_resumed_events_are_the_events_of_a_run_with_an_approver() -> None:
    turns = [
        ScriptedTurn(calls=(("a", "free", args(1, "a")), ("b", "held", args(2, "b")))),
        ScriptedTurn(text="ok"),
    ]

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        return Deny()

    asked = [
        e
        async for e in ToolLoop(ScriptedChat(*turns), approver=approve).run_events(
            USER, options(), Tools().registry
        )
    ]
    loop = ToolLoop(ScriptedChat(*turns))
    tools = Tools()
    paused: list[RunEvent[ToolRun]] = [e async for e in loop.run_events(USER, options(), tools.registry)]
    last = paused.pop()
    assert isinstance(last, RunFinished)
    assert last.result.state is not None
    resumed = [e async for e in loop.resume_events(last.result.state, {"b": Deny()}, tools.registry)]

    assert paused + resumed == asked
    assert sum(isinstance(e, RoundStarted) for e in asked) == 2
    assert [e.record.call.call_id for e in resumed if isinstance(e, ToolCallFinished)] == ["a", "b"]


async def test_a_denied_call_passes_through_the_chain_and_never_reaches_the_tools() -> None:
    seen = CallLog()
    tools = Tools()
    loop = ToolLoop(
        ScriptedChat(ScriptedTurn(calls=(("b", "held", args(2, "b")),)), ScriptedTurn(text="ok")),
        decorators=(seen,),
    )
    paused = await loop.run(USER, options(), tools.registry)
    assert paused.state is not None
    assert seen.calls == []
    run = await loop.resume(paused.state, {"b": Deny()}, tools.registry)

    assert [call.call_id for call in seen.calls] == ["b"]
    assert tools.ran == []
    assert run.tool_calls[0].guarded is False
    assert run.tool_calls[0].result.is_error


async def test_a_paused_edit_and_its_state_are_documents() -> None:
    edit = await WorkflowEditorAgent(removal_then()).edit(RELEASE, "x")
    assert edit.state is not None
    assert loads(dumps(edit.state)) == edit.state
    assert loads(dumps(edit)) == edit
    assert loads(dumps(edit.run)) == edit.run


# ---------------------------------------------------------------- the workflow editor

RELEASE = Workflow(
    "release",
    (
        WorkflowStep("s1", "Build", "task"),
        WorkflowStep("s2", "Manual QA", "approval"),
        WorkflowStep("s3", "Deploy", "deploy"),
    ),
)


def removal_then(*turns: ScriptedTurn) -> ScriptedChat:
    return ScriptedChat(
        ScriptedTurn(
            calls=(
                ("r1", "rename_step", '{"step_id": "s1", "name": "Compile"}'),
                ("d1", "remove_step", '{"step_id": "s3"}'),
            )
        ),
        *turns,
    )


async def test_remove_step_waits_for_approval_and_the_edit_shows_the_workflow_unchanged_by_the_answer() -> (
    None
):
    edit = await WorkflowEditorAgent(removal_then()).edit(
        RELEASE, "rename Build to Compile and remove Deploy"
    )

    assert edit.status == "awaiting_approval"
    assert edit.pending == (ApprovalRequest("d1", "remove_step", {"step_id": "s3"}, '{"step_id": "s3"}'),)
    assert edit.workflow == RELEASE  # the rename in the same answer waits too
    assert edit.state is not None
    assert edit.state.pipeline == "workflow_editor"
    assert edit.state.workflow == RELEASE


@pytest.mark.parametrize(
    ("decision", "steps", "error"),
    [(Approve(), ("s1",), None), (Deny(reason="keep it"), ("s1", "s3"), "approval_denied")],
)
async def test_a_resumed_edit_applies_the_decision(
    decision: ApprovalDecision, steps: tuple[str, ...], error: str | None
) -> None:
    paused = await WorkflowEditorAgent(removal_then()).edit(RELEASE, "rename Build and remove Deploy")
    assert paused.state is not None
    agent = WorkflowEditorAgent(ScriptedChat(ScriptedTurn(text="Done.")))
    edit = await agent.resume(paused.state, {"d1": decision})

    assert edit.status == "done"
    assert tuple(step.id for step in edit.workflow.steps if step.id != "s2") == steps
    assert edit.workflow.step("s1").name == "Compile"
    codes = [
        r.result.result.get("error") if isinstance(r.result.result, Mapping) else None
        for r in edit.tool_calls
    ]
    assert codes == [None, error]


async def test_an_approver_decides_at_once_and_the_edit_never_stops() -> None:
    asked: list[ApprovalRequest] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return Approve()

    edit = await WorkflowEditorAgent(removal_then(ScriptedTurn(text="Done.")), approver=approver).edit(
        RELEASE, "x"
    )
    assert edit.status == "done"
    assert [request.call_id for request in asked] == ["d1"]
    assert [step.id for step in edit.workflow.steps] == ["s1", "s2"]


async def test_no_approval_is_asked_when_no_tool_requires_it() -> None:
    edit = await WorkflowEditorAgent(
        removal_then(ScriptedTurn(text="Done.")), approval_required_tools=()
    ).edit(RELEASE, "x")
    assert edit.status == "done"
    assert [step.id for step in edit.workflow.steps] == ["s1", "s2"]


async def test_any_workflow_tool_can_require_approval_but_no_other_name() -> None:
    agent = WorkflowEditorAgent(removal_then(), approval_required_tools=("rename_step",))
    edit = await agent.edit(RELEASE, "x")
    assert [request.call_id for request in edit.pending] == ["r1"]
    with pytest.raises(ValueError, match="no tool named 'record_decision'"):
        WorkflowEditorAgent(removal_then(), approval_required_tools=("record_decision",))


async def test_only_a_paused_workflow_edit_is_resumed_by_the_editor() -> None:
    tools = Tools()
    paused = await ToolLoop(ScriptedChat(ScriptedTurn(calls=(("b", "held", args(2, "b")),)))).run(
        USER, options(), tools.registry
    )
    assert paused.state is not None
    with pytest.raises(ValueError, match="not a paused workflow edit"):
        await WorkflowEditorAgent(ScriptedChat()).resume(paused.state, {"b": Approve()})


async def test_edit_events_report_the_approval_request_then_the_paused_edit() -> None:
    events = [event async for event in WorkflowEditorAgent(removal_then()).edit_events(RELEASE, "x")]
    assert isinstance(events[-2], ApprovalRequested)
    assert events[-2].request.call_id == "d1"
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.status == "awaiting_approval"


# ---------------------------------------------------------------- another process

# Reads a stored state, resumes it with the turns left and the decisions, and reports what it sent.
RESUME_ELSEWHERE = """
import asyncio, json, sys
from application import Approve, Deny, ToolLoop, dumps, loads
from tests.application.tools.test_approval import Planned, Tools, script

state_file, job = sys.argv[1], json.loads(sys.argv[2])
state = loads(open(state_file, encoding="utf-8").read())
turns = [[Planned(*call, Approve()) for call in calls] for calls in job["turns"]]
chat, tools = script(turns, job["first"]), Tools()
decisions = {
    call_id: Approve() if reason is None else Deny(reason=reason) for call_id, reason in job["decisions"]
}
run = asyncio.run(ToolLoop(chat).resume(state, decisions, tools.registry))
sent = [
    {"messages": dumps(r.messages), "initiator": r.options.initiator, "tools": len(r.options.tools)}
    for r in chat.requests
]
print(json.dumps({"requests": sent, "run": dumps(run), "ran": tools.ran}))
"""


def sent(chat: ScriptedChat) -> list[dict[str, object]]:
    return [
        {
            "messages": r.messages,
            "initiator": r.options.initiator if r.options else None,
            "tools": len(r.options.tools) if r.options else 0,
        }
        for r in chat.requests
    ]


@pytest.mark.slow  # a process per example: `make test` runs it, `make check` (no subprocess) does not
@settings(max_examples=examples(4), deadline=None)
@given(turns=answers())
@example(turns=[[Planned("a", "held", args(0, "a"), Approve()), Planned("b", "free", args(1, "b"), Deny())]])
@example(turns=[[Planned("a", "free", MALFORMED, Approve()), Planned("b", "even", args(2, "b"), Deny("no"))]])
async def test_a_state_loaded_in_another_process_resumes_as_a_run_with_an_approver(
    turns: list[list[Planned]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    asked, asked_chat, asked_tools = await approved_by(turns, concurrent=True)
    plan = plan_of(turns)
    tools = Tools()
    chat = script(turns)
    paused = await ToolLoop(chat).run(USER, options(), tools.registry)
    if paused.state is None:
        assert paused == asked  # nothing needed approval
        return
    state_file = tmp_path_factory.mktemp("state") / "state.json"
    state_file.write_text(dumps(paused.state), encoding="utf-8")
    answered = len(paused.responses)
    job = {
        "first": answered,
        "turns": [[[p.call_id, p.name, p.raw] for p in calls] for calls in turns[answered:]],
        "decisions": [
            [r.call_id, None if isinstance(plan[r.call_id], Approve) else plan[r.call_id].reason]  # type: ignore[union-attr]  # a Deny
            for r in paused.pending
        ],
    }
    # The test waits for the process on purpose: nothing else runs in its loop meanwhile.
    done = subprocess.run(  # noqa: S603, ASYNC221  # this interpreter running the test's own script
        [sys.executable, "-c", RESUME_ELSEWHERE, str(state_file), json.dumps(job)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    elsewhere = [{**r, "messages": loads(r["messages"])} for r in report["requests"]]
    run = loads(report["run"])
    if run.state is not None:
        return  # paused again on the next answer; the in-process property covers several pauses
    assert run == asked
    assert elsewhere == sent(asked_chat)[answered:]
    assert sorted(tools.ran + report["ran"]) == sorted(asked_tools.ran)
