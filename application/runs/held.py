"""The answer a paused run holds: the calls that wait, derived from it and checked against its state."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from application.runs.run import RunState, ToolCallRecord
from application.tools.approval import ApprovalPolicy, ApprovalRequest
from application.tools.guard import parsed
from domain import ChatResponse, FunctionCallContent

__all__ = ["HeldAnswer", "StateError", "held_answer", "needs_approval", "waiting"]


class StateError(ValueError):
    """A :class:`RunState` whose parts do not hold together, so it is not resumed.

    ``path`` names the field of the state at fault (``pending[0].raw_arguments``), ``problem`` says
    what is wrong with it; neither quotes the value.
    """

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"the paused run cannot go on: {path}: {problem}; nothing was run")
        self.path = path
        self.problem = problem


@attrs.frozen
class HeldAnswer:
    """The held answer of a state: the model's ``response``, the ``calls`` the run admitted (in call
    order), the records of those answered before the pause (by position), and the calls ``left``."""

    response: ChatResponse
    calls: tuple[FunctionCallContent, ...]
    answered: Mapping[int, ToolCallRecord]
    left: Mapping[int, FunctionCallContent]


def needs_approval(policy: ApprovalPolicy | None, call: FunctionCallContent) -> bool:
    """Whether ``policy`` holds ``call`` back: never a call whose arguments did not parse (the guard
    answers it, it never runs), and always one whose policy raises (nothing runs unasked)."""
    if policy is None:
        return False
    call = parsed(call)
    if not call.is_valid:
        return False
    try:
        return policy.needs_approval(call)
    except Exception:
        return True


def held_answer(state: RunState) -> HeldAnswer:
    """The answer ``state`` holds, once its parts are checked against one another.

    The calls that run on resume are the last response's own; everything else the state says of them
    (``held``, ``answered``, ``pending``, the end of ``produced``) must agree with that answer, as the
    run that paused wrote it. Raises :class:`StateError` naming the first part that does not.
    """
    if not state.responses:
        raise StateError("responses", "empty; a paused run holds the answer it stopped on")
    response = state.responses[-1]
    calls = response.function_calls
    if not state.held or len(state.held) > len(calls):
        raise StateError("held", f"expected one entry per call of the held answer ({len(calls)})")
    if len(state.held) < len(calls) and state.stop_reason is None:
        raise StateError("held", "fewer entries than the held answer has calls, with no stop_reason")
    tail = response.messages
    if tail and tuple(state.produced[-len(tail) :]) != tail:
        raise StateError("produced", "does not end with the held answer's messages")
    earlier = {record.call.call_id for record in state.tool_calls}
    seen: set[str] = set()
    answered: dict[int, ToolCallRecord] = {}
    left: dict[int, FunctionCallContent] = {}
    for position, (call, record) in enumerate(zip(calls, state.held, strict=False)):
        # Answered before the pause: a repeated call id (the loop's answer) or arguments that did not
        # parse (the guard's). Every other call of the answer is still to be answered.
        answered_first = call.call_id in earlier or call.call_id in seen or not parsed(call).is_valid
        seen.add(call.call_id)
        if record is None:
            if answered_first:
                raise StateError(f"held[{position}]", "missing the answer this call had before the pause")
            left[position] = call
            continue
        if not answered_first:
            raise StateError(f"held[{position}]", "an answer for a call that was still to be answered")
        if record.call != call or record.result.call_id != call.call_id:
            raise StateError(f"held[{position}]", "the record of another call than the held answer's")
        answered[position] = record
    if set(state.answered) != earlier | seen or len(state.answered) != len(set(state.answered)):
        raise StateError("answered", "not the call ids the run had answered or held")
    _check_pending(state, left)
    return HeldAnswer(response, calls[: len(state.held)], answered, left)


def _check_pending(state: RunState, left: Mapping[int, FunctionCallContent]) -> None:
    """Each pending request is a call still to be answered, as that call is, in call order."""
    if not state.pending:
        raise StateError("pending", "empty; a paused run waits for a decision on at least one call")
    positions = {call.call_id: position for position, call in left.items()}
    last = -1
    for index, request in enumerate(state.pending):
        position = positions.get(request.call_id)
        if position is None:
            raise StateError(f"pending[{index}].call_id", "names no call of the held answer that waits")
        if position <= last:
            raise StateError(f"pending[{index}]", "repeated or out of the held answer's call order")
        last = position
        call = parsed(left[position])
        if request.name != call.name:
            raise StateError(f"pending[{index}].name", "not the tool the held call names")
        if request.raw_arguments != call.raw_arguments:
            raise StateError(f"pending[{index}].raw_arguments", "not the held call's arguments")
        if request.arguments != call.arguments:
            raise StateError(f"pending[{index}].arguments", "not the held call's arguments")


def waiting(state: RunState, policy: ApprovalPolicy | None) -> tuple[HeldAnswer, tuple[ApprovalRequest, ...]]:
    """The held answer of ``state`` and its calls that ``policy`` holds back, asked again call by call.

    Raises :class:`StateError` when the state does not hold together (see :func:`held_answer`) or
    its ``pending`` is not exactly those calls: a call the policy lets run, or one it holds back that
    ``pending`` leaves out.
    """
    held = held_answer(state)
    derived = tuple(
        ApprovalRequest.of(parsed(call)) for call in held.left.values() if needs_approval(policy, call)
    )
    if derived != state.pending:
        expected = {request.call_id for request in derived}
        for index, request in enumerate(state.pending):
            if request.call_id not in expected:
                raise StateError(f"pending[{index}]", "a call the approval policy does not hold back")
        shown = {request.call_id for request in state.pending}
        missing = next((request.call_id for request in derived if request.call_id not in shown), None)
        raise StateError("pending", f"leaves out {missing!r}, which the approval policy holds back")
    return held, derived
