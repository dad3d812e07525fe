"""Stored runs a person can trust: what waits is the held answer's own calls; a tampered state never runs."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any, Final

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.settings import AgentSettings
from application import (
    ApprovalDecision,
    ApprovalRequest,
    ApprovalRequested,
    Approve,
    Deny,
    DocumentError,
    LoopSettings,
    RunBudget,
    RunFinished,
    RunState,
    ToolLoop,
    ToolRegistry,
    WorkflowEditorAgent,
    dumps,
    loads,
)
from application.documents import MAX_DOCUMENT_BYTES
from domain import ChatMessage, ChatOptions, ChatResponse, FunctionCallContent, Workflow, WorkflowStep
from tests.application.strategies import (
    chat_responses,
    conversations,
    meeting_summaries,
    mutated_documents,
    tool_runs,
    workflow_edits,
)
from tests.support.examples import examples
from tests.support.states import held_calls, pending_emptied, pending_renamed, raw_arguments_edited

USER = (ChatMessage.user("settle the invoice"),)
SLOW = settings(
    max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
FIVE = '{"amount": 5}'


@attrs.frozen
class Payment:
    amount: int


@attrs.frozen
class Lookup:
    invoice: str = ""


class Till:
    """A host's tools: ``pay`` always needs approval, ``refund`` above 10, ``look_up`` never."""

    def __init__(self) -> None:
        self.paid: list[int] = []
        self.registry = self._tools(refund=self._pay)

    def _tools(self, refund: Callable[[Payment], dict[str, object]]) -> ToolRegistry:
        """``pay``, ``refund`` (run by ``refund``) and ``look_up``, each with its approval rule."""
        registry = ToolRegistry()
        registry.add(self._pay, name="pay", params=Payment, needs_approval=True)
        registry.add(refund, name="refund", params=Payment, needs_approval=lambda p: p.amount > 10)
        registry.add(lambda params: {"due": 5}, name="look_up", params=Lookup)
        return registry

    def _pay(self, params: Payment) -> dict[str, object]:
        self.paid.append(params.amount)
        return {"paid": params.amount}


def chat(*calls: tuple[str, str, str]) -> ScriptedChat:
    return ScriptedChat(ScriptedTurn(calls=calls), ScriptedTurn(text="Done."))


async def paused(*calls: tuple[str, str, str]) -> tuple[RunState, Till]:
    till = Till()
    run = await ToolLoop(chat(*calls)).run(USER, ChatOptions(tools=till.registry.specs), till.registry)
    assert run.state is not None
    return run.state, till


# ---------------------------------------------------------------- tampering with the document


def tampered(state: RunState, change: Callable[[dict[str, Any]], None]) -> str:
    document = json.loads(dumps(state))
    change(document)
    return json.dumps(document)


def answer_renamed(document: dict[str, Any]) -> None:
    for call in held_calls(document):
        call["name"] = "refund"


def second_call_added(document: dict[str, Any]) -> None:
    """A second ``pay`` added to the held answer, with everything but ``pending`` made to agree."""
    value = document["value"]
    extra = {"kind": "function_call", "call_id": "p2", "name": "pay", "raw_arguments": '{"amount": 5000}'}
    answer = value["responses"][-1]["messages"]
    for messages in (answer, value["produced"][-len(answer) :]):
        messages[-1]["contents"].append(dict(extra, item_id=None))
    value["held"].append(None)
    value["answered"] = sorted([*value["answered"], "p2"])


def second_call_added_half_way(document: dict[str, Any]) -> None:
    """The second call in the held answer only: ``held`` still has one entry per call it admitted."""
    extra = {"kind": "function_call", "call_id": "p2", "name": "pay", "raw_arguments": FIVE, "item_id": None}
    document["value"]["responses"][-1]["messages"][-1]["contents"].append(extra)


def responses_emptied(document: dict[str, Any]) -> None:
    document["value"]["responses"] = []


def held_answered_by_hand(document: dict[str, Any]) -> None:
    """The held call given a forged answer, as if it had been answered before the pause."""
    value = document["value"]
    value["held"][0] = {
        "call": {key: item for key, item in held_calls(document)[0].items() if key != "kind"},
        "result": {"call_id": "p1", "result": {"paid": 0}, "is_error": False},
        "guarded": False,
    }


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (raw_arguments_edited('{"amount": 5000}'), "value.pending[0].raw_arguments"),
        (pending_emptied, "value.pending"),
        (pending_renamed("look_up"), "value.pending[0].name"),
        (answer_renamed, "value.pending[0].name"),
        (second_call_added_half_way, "value.held"),
        (responses_emptied, "value.responses"),
        (held_answered_by_hand, "value.held[0]"),
    ],
)
async def test_a_state_whose_parts_disagree_with_its_held_answer_does_not_load(
    change: Callable[[dict[str, Any]], None], path: str
) -> None:
    state, till = await paused(("p1", "pay", FIVE))
    with pytest.raises(DocumentError) as refused:
        loads(tampered(state, change))
    assert refused.value.path == path
    assert till.paid == []


# ---------------------------------------------------------------- tampering with the value


def with_calls(
    state: RunState, edit: Callable[[list[FunctionCallContent]], list[FunctionCallContent]]
) -> RunState:
    """``state`` with the held answer's calls edited in both places it stores them (its last response
    and the end of ``produced``), ``held``, ``answered`` and ``pending`` left as they were."""
    answer = state.responses[-1]

    def edited(message: ChatMessage) -> ChatMessage:
        calls = [c for c in message.contents if isinstance(c, FunctionCallContent)]
        if not calls:
            return message
        rest = tuple(c for c in message.contents if not isinstance(c, FunctionCallContent))
        return attrs.evolve(message, contents=rest + tuple(edit(calls)))

    messages = tuple(edited(message) for message in answer.messages)
    return attrs.evolve(
        state,
        responses=(*state.responses[:-1], attrs.evolve(answer, messages=messages)),
        produced=(*state.produced[: -len(messages)], *messages),
    )


def call(call_id: str, name: str, raw: str) -> FunctionCallContent:
    return FunctionCallContent.parse(call_id=call_id, name=name, raw_arguments=raw)


async def resume_refused(
    state: RunState, decisions: dict[str, ApprovalDecision], till: Till, words: str, *, by_state: bool = True
) -> None:
    """Resuming ``state`` raises ValueError with ``words``, whole or as events, and nothing is paid;
    ``by_state``: the state itself is at fault, so asking what waits raises it too."""
    loop = ToolLoop(chat())
    with pytest.raises(ValueError, match=words):
        await loop.resume(state, decisions, till.registry)
    with pytest.raises(ValueError, match=words):
        loop.resume_events(state, decisions, till.registry)
    if by_state:
        with pytest.raises(ValueError, match=words):
            loop.waiting(state, till.registry)
    assert till.paid == []


async def test_shown_5_is_never_paid_5000() -> None:
    state, till = await paused(("p1", "pay", FIVE))
    assert state.pending == (ApprovalRequest("p1", "pay", {"amount": 5}, FIVE),)
    edited = with_calls(state, lambda calls: [call("p1", "pay", '{"amount": 5000}')])
    await resume_refused(edited, {"p1": Approve()}, till, r"pending\[0\]\.raw_arguments")


async def test_raw_arguments_that_parse_to_an_equal_mapping_are_still_not_the_call_shown() -> None:
    # {"amount": 5.0} == {"amount": 5} in Python; the string the tool gets is compared, not the mapping.
    state, till = await paused(("p1", "pay", FIVE))
    edited = with_calls(state, lambda calls: [call("p1", "pay", '{"amount": 5.0}')])
    await resume_refused(edited, {"p1": Approve()}, till, "raw_arguments")


async def test_an_empty_pending_lets_no_held_call_run_undecided() -> None:
    state, till = await paused(("p1", "pay", FIVE))
    await resume_refused(attrs.evolve(state, pending=()), {}, till, "pending: empty")


async def test_a_second_call_added_to_the_held_answer_does_not_run_under_the_first_ones_approval() -> None:
    state, till = await paused(("p1", "pay", FIVE))
    added = with_calls(state, lambda calls: [*calls, call("p2", "pay", '{"amount": 5000}')])
    # Everything but pending made to agree: the policy, asked again, holds the new call back.
    added = attrs.evolve(added, held=(None, None), answered=("p1", "p2"))
    await resume_refused(added, {"p1": Approve()}, till, "leaves out 'p2'")
    await resume_refused(added, {"p1": Approve(), "p2": Approve()}, till, "leaves out 'p2'")


async def test_a_renamed_pending_call_is_refused() -> None:
    state, till = await paused(("p1", "pay", FIVE))
    renamed = attrs.evolve(state, pending=(attrs.evolve(state.pending[0], name="look_up"),))
    await resume_refused(renamed, {"p1": Approve()}, till, r"pending\[0\]\.name")
    # The answer's call renamed instead: refund holds 5 back no more, and pending no longer names it.
    refund = with_calls(state, lambda calls: [call("p1", "refund", FIVE)])
    await resume_refused(refund, {"p1": Approve()}, till, r"pending\[0\]\.name")


async def test_a_state_without_a_held_answer_is_refused_not_an_index_error() -> None:
    state, till = await paused(("p1", "pay", FIVE))
    await resume_refused(attrs.evolve(state, responses=()), {"p1": Approve()}, till, "responses: empty")


async def test_the_policy_is_asked_again_and_a_call_it_lets_run_is_not_pending() -> None:
    state, till = await paused(("r1", "refund", '{"amount": 50}'))
    # Refund and pending both made 5, in agreement: refund holds back only above 10.
    small = with_calls(state, lambda calls: [call("r1", "refund", FIVE)])
    small = attrs.evolve(small, pending=(ApprovalRequest("r1", "refund", {"amount": 5}, FIVE),))
    await resume_refused(small, {"r1": Approve()}, till, "does not hold back")


async def test_a_decision_for_a_call_that_does_not_wait_is_refused() -> None:
    state, till = await paused(("l1", "look_up", "{}"), ("p1", "pay", FIVE))
    assert [request.call_id for request in state.pending] == ["p1"]
    await resume_refused(
        state, {"p1": Approve(), "l1": Approve()}, till, "not waiting for approval: 'l1'", by_state=False
    )
    listed = attrs.evolve(state, pending=(ApprovalRequest("l1", "look_up", {}, "{}"), *state.pending))
    await resume_refused(listed, {"p1": Approve(), "l1": Approve()}, till, "does not hold back")


# ---------------------------------------------------------------- what is shown is what runs


async def test_what_is_shown_is_built_from_the_call_that_runs() -> None:
    till = Till()
    loop = ToolLoop(chat(("p1", "pay", '{"amount":  7}')))
    events = [e async for e in loop.run_events(USER, ChatOptions(tools=till.registry.specs), till.registry)]
    requested = [e.request for e in events if isinstance(e, ApprovalRequested)]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    state = finished.result.state
    assert state is not None
    [held] = state.responses[-1].function_calls
    shown = ApprovalRequest("p1", "pay", {"amount": 7}, held.raw_arguments)
    assert held.raw_arguments == '{"amount":  7}'
    assert requested == list(state.pending) == list(loop.waiting(state, till.registry)) == [shown]

    resumed = await ToolLoop(ScriptedChat(ScriptedTurn(text="Done."))).resume(
        loads(dumps(state)), {"p1": Approve()}, till.registry
    )
    assert resumed.status == "done"
    assert till.paid == [7]


async def test_a_workflow_edit_waits_on_the_calls_the_editor_holds_back_now() -> None:
    release = Workflow(
        "release", (WorkflowStep("s1", "Build", "task"), WorkflowStep("s3", "Deploy", "deploy"))
    )
    turns = ScriptedChat(ScriptedTurn(calls=(("d1", "remove_step", '{"step_id": "s3"}'),)))
    edit = await WorkflowEditorAgent(turns).edit(release, "remove Deploy")
    assert edit.state is not None
    agent = WorkflowEditorAgent(ScriptedChat(ScriptedTurn(text="Done.")))
    assert agent.waiting(edit.state) == edit.pending
    swapped = with_calls(edit.state, lambda calls: [call("d1", "remove_step", '{"step_id": "s1"}')])
    with pytest.raises(ValueError, match="raw_arguments"):
        await agent.resume(swapped, {"d1": Approve()})
    # An editor that no longer holds remove_step back does not resume a state that says it waits.
    free = WorkflowEditorAgent(ScriptedChat(ScriptedTurn(text="Done.")), approval_required_tools=())
    with pytest.raises(ValueError, match="does not hold back"):
        await free.resume(edit.state, {"d1": Approve()})


# ---------------------------------------------------------------- signed documents

SECRET = "state-secret-7f3a"


@SLOW
@given(st.one_of(conversations, chat_responses, tool_runs, meeting_summaries, workflow_edits))
def test_a_signed_document_loads_back_equal_with_its_secret(value: object) -> None:
    text = dumps(value, secret=SECRET)
    assert loads(text, secret=SECRET) == value
    assert loads(text) == value  # without a secret, the signature is not checked


def test_the_signature_is_hmac_sha256_over_the_canonical_form() -> None:
    """The canonical form, as the docs define it: the document without its signature, as JSON with
    sorted keys, no spaces and every character past ASCII escaped."""
    text = dumps(
        ChatResponse(messages=(ChatMessage.assistant("café \ud800"),), response_id="r1"), secret=SECRET
    )
    document = json.loads(text)
    signature = document.pop("signature")
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert signature == hmac.new(SECRET.encode(), canonical.encode("ascii"), hashlib.sha256).hexdigest()


async def test_with_a_secret_an_unsigned_changed_or_foreign_state_does_not_load() -> None:
    state, _ = await paused(("p1", "pay", FIVE))
    signed = dumps(state, secret=SECRET)
    assert loads(signed, secret=SECRET) == state

    def refusal(text: str, secret: str = SECRET) -> str:
        with pytest.raises(DocumentError) as refused:
            loads(text, secret=secret)
        assert refused.value.path == "signature"
        assert SECRET not in str(refused.value)
        return refused.value.problem

    assert "missing" in refusal(dumps(state))
    assert "does not match" in refusal(signed, secret="another-secret")
    # The attacker's edit made whole: held call and pending both say 5000; only the signature tells.
    document = json.loads(signed)
    for held in held_calls(document):
        held["raw_arguments"] = '{"amount": 5000}'
    document["value"]["pending"][0].update(arguments={"amount": 5000}, raw_arguments='{"amount": 5000}')
    forged = json.dumps(document)
    assert "does not match" in refusal(forged)
    assert loads(forged).pending[0].arguments == {"amount": 5000}  # unsigned, nothing tells it apart
    document["signature"] = 7
    with pytest.raises(DocumentError, match="signature: expected a string"):
        loads(json.dumps(document))


def test_an_empty_secret_signs_nothing() -> None:
    with pytest.raises(ValueError, match="secret: empty"):
        dumps(ChatResponse(), secret="")
    with pytest.raises(ValueError, match="secret: empty"):
        loads(dumps(ChatResponse()), secret=b"")


# ---------------------------------------------------------------- bounded documents


def test_a_document_larger_than_max_bytes_is_refused_before_it_is_read() -> None:
    text = dumps(ChatResponse(messages=(ChatMessage.assistant("é" * 100),)))
    size = len(text.encode("utf-8"))
    assert loads(text, max_bytes=size) == loads(text)
    for too_big in (text, text.encode("utf-8")):
        with pytest.raises(DocumentError, match=f"larger than the {size - 1:,} bytes"):
            loads(too_big, max_bytes=size - 1)
    # Counted in bytes, not characters: 150 characters of two bytes each.
    with pytest.raises(DocumentError, match="larger than the 200 bytes"):
        loads("é" * 150, max_bytes=200)
    # Refused as too large, not as what it would have been found to be once read.
    with pytest.raises(DocumentError, match="larger than the 50 bytes"):
        loads("[" * 51, max_bytes=50)


def test_the_default_limit_is_the_command_lines() -> None:
    assert AgentSettings().max_transcript_bytes == MAX_DOCUMENT_BYTES
    with pytest.raises(DocumentError, match="larger than"):
        loads(" " * (MAX_DOCUMENT_BYTES + 1))


# ---------------------------------------------------------------- every loadable state resumes or is refused


class Ledger(Till):
    """The till, with refunds kept apart: only ``pay`` always waits, so every payment was shown first."""

    def __init__(self) -> None:
        super().__init__()
        self.refunded: list[int] = []
        self.registry = self._tools(refund=self._refund)

    def _refund(self, params: Payment) -> dict[str, object]:
        self.refunded.append(params.amount)
        return {"refunded": params.amount}


RELEASE = Workflow("release", (WorkflowStep("s1", "Build", "task"), WorkflowStep("s3", "Deploy", "deploy")))


async def _paused_documents() -> list[dict[str, Any]]:
    """Paused runs of every shape: malformed and repeated calls held, two rounds, a budget stop, an edit."""
    tools = Ledger().registry
    options = ChatOptions(tools=tools.specs)
    answers = [
        ScriptedChat(
            ScriptedTurn(
                calls=(
                    ("l1", "look_up", "{}"),
                    ("p1", "pay", FIVE),
                    ("m1", "pay", '{"amount": 5'),
                    ("r1", "refund", '{"amount": 50}'),
                    ("l1", "look_up", "{}"),
                )
            )
        ),
        ScriptedChat(
            ScriptedTurn(calls=(("l1", "look_up", "{}"),)),
            ScriptedTurn(calls=(("p2", "pay", '{"amount": 7}'),)),
        ),
    ]
    states: list[object] = []
    for answer in answers:
        states.append((await ToolLoop(answer).run(USER, options, tools)).state)
    budget = LoopSettings(run_budget=RunBudget(tool_calls=1))
    two = ScriptedChat(ScriptedTurn(calls=(("p3", "pay", FIVE), ("l3", "look_up", "{}"))))
    states.append((await ToolLoop(two, budget).run(USER, options, tools)).state)
    removal = ScriptedChat(ScriptedTurn(calls=(("d1", "remove_step", '{"step_id": "s3"}'),)))
    states.append((await WorkflowEditorAgent(removal).edit(RELEASE, "remove Deploy")).state)
    assert all(isinstance(state, RunState) for state in states)
    return [json.loads(dumps(state)) for state in states]


# Built once, before any test's event loop runs: the runs are scripted and take milliseconds.
PAUSED: Final = asyncio.run(_paused_documents())


@settings(
    max_examples=examples(300),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    deadline=None,
)
@given(text=mutated_documents(PAUSED), approve=st.booleans())
async def test_every_loadable_state_either_resumes_or_is_refused_and_no_payment_goes_unshown(
    text: str, approve: bool
) -> None:
    try:
        state = loads(text)
    except DocumentError:
        return
    assert isinstance(state, RunState)
    decision: ApprovalDecision = Approve() if approve else Deny(reason="no")
    decisions = {request.call_id: decision for request in state.pending}
    closing = ScriptedChat(ScriptedTurn(text="Done."))
    ledger = Ledger()
    try:
        if state.pipeline == "workflow_editor":
            edit = await WorkflowEditorAgent(closing).resume(state, decisions)
            assert edit.status == "done"
        else:
            run = await ToolLoop(closing).resume(state, decisions, ledger.registry)
            assert run.status == "done"
    except ValueError:
        assert ledger.paid == []
        return
    shown = [r.arguments.get("amount") for r in state.pending if r.name == "pay"]
    assert sorted(ledger.paid) == (sorted(a for a in shown if isinstance(a, int)) if approve else [])


@pytest.mark.parametrize(
    ("where", "field", "bad", "problem"),
    [
        (("messages", 3), "text", 7, "expected a string"),
        (("produced", 0), "call_id", None, "expected a string"),
        (("produced", -1), "is_error", "no", "expected a boolean"),
    ],
)
async def test_a_bad_field_deep_in_a_long_run_is_named_by_its_path(
    where: tuple[str, int], field: str, bad: object, problem: str
) -> None:
    """Messages of a common shape are built without the generated hooks; a bad one is still named."""
    history = tuple(ChatMessage.user(f"line {i}") for i in range(6))
    tools = Till().registry
    chat = ScriptedChat(
        ScriptedTurn(calls=(("l1", "look_up", "{}"),)), ScriptedTurn(calls=(("p1", "pay", FIVE),))
    )
    run = await ToolLoop(chat).run(history, ChatOptions(tools=tools.specs), tools)
    document = json.loads(dumps(run.state))
    messages = document["value"][where[0]]
    index = where[1] % len(messages)
    if where == ("produced", -1):
        index = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    messages[index]["contents"][0][field] = bad
    with pytest.raises(DocumentError) as refused:
        loads(json.dumps(document))
    assert refused.value.path == f"value.{where[0]}[{index}].contents[0].{field}"
    assert problem in refused.value.problem
