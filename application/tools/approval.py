"""Approval before a tool runs: the requests a paused run holds, the decisions on them, and denials."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Final, Protocol, TypeAlias, runtime_checkable

import attrs

from application.tools.registry import error_result
from domain import FunctionCallContent, FunctionResultContent, ToolInvokerPort

__all__ = [
    "APPROVAL_DENIED",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approve",
    "Approver",
    "Decisions",
    "Deny",
    "checked_decisions",
]

APPROVAL_DENIED: Final = "approval_denied"


@attrs.frozen
class ApprovalRequest:
    """A call that waits for a person's decision: its id, the tool's name, the parsed arguments and
    the model's own argument string (``raw_arguments``), exactly what runs once approved.

    The loop builds each one from the call itself (:meth:`of`), and a resumed run builds them again
    from the held answer and checks a state's ``pending`` against them, so what a person is shown
    is what runs. ``raw_arguments`` is None only in a request built by hand without it.
    """

    call_id: str
    name: str
    arguments: Mapping[str, object] = attrs.field(hash=False)
    raw_arguments: str | None = None

    @classmethod
    def of(cls, call: FunctionCallContent) -> ApprovalRequest:
        """The request for ``call``, a call whose arguments parsed."""
        return cls(call.call_id, call.name, call.arguments or {}, call.raw_arguments)


@attrs.frozen
class Approve:
    """The decision to run a held call."""


@attrs.frozen
class Deny:
    """The decision not to run a held call; ``reason`` (when given) is told to the model."""

    reason: str = ""


ApprovalDecision: TypeAlias = Approve | Deny
Decisions: TypeAlias = Mapping[str, ApprovalDecision] | Iterable[tuple[str, ApprovalDecision]]
"""One decision per pending call id: a mapping, or ``(call_id, decision)`` pairs (no id twice)."""

Approver: TypeAlias = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
"""Decides a held call at once (a prompt, a policy): with one, a run asks it and never pauses."""


@runtime_checkable
class ApprovalPolicy(Protocol):
    """What a tool invoker implements to have some of its calls approved first (``ToolRegistry`` does).

    ``needs_approval`` is asked once per call whose arguments parsed, before any call of the answer
    runs; it must not raise (the loop holds a call whose policy raises, to be safe).
    """

    def needs_approval(self, call: FunctionCallContent) -> bool: ...


def checked_decisions(pending: Iterable[str], decisions: Decisions) -> dict[str, ApprovalDecision]:
    """``decisions`` as a mapping with exactly one decision per id of ``pending``.

    Raises ``ValueError`` naming the ids decided twice, not pending, or left undecided, and
    ``TypeError`` for a decision that is neither :class:`Approve` nor :class:`Deny`.
    """
    pairs = decisions.items() if isinstance(decisions, Mapping) else decisions
    decided: dict[str, ApprovalDecision] = {}
    repeated: list[str] = []
    for call_id, decision in pairs:
        if not isinstance(decision, Approve | Deny):
            kind = type(decision).__name__
            raise TypeError(f"the decision for call id {call_id!r} is a {kind}, not Approve() or Deny()")
        if call_id in decided:
            repeated.append(call_id)
        decided[call_id] = decision
    waiting = tuple(pending)
    unknown = [call_id for call_id in decided if call_id not in waiting]
    missing = [call_id for call_id in waiting if call_id not in decided]
    problems = []
    if repeated:
        problems.append("decided more than once: " + ", ".join(map(repr, dict.fromkeys(repeated))))
    if unknown:
        problems.append("not waiting for approval: " + ", ".join(map(repr, unknown)))
    if missing:
        problems.append("no decision given: " + ", ".join(map(repr, missing)))
    if problems:
        raise ValueError("nothing was run; call ids " + "; ".join(problems))
    return decided


def denial(call_id: str, reason: str) -> FunctionResultContent:
    """The answer to a denied call: ``approval_denied``, with the person's reason when one was given."""
    message = "The tool was not run: the call was not approved."
    if reason.strip():
        message += f" Reason: {reason.strip()}"
    return error_result(call_id, APPROVAL_DENIED, message)


class DecidedCalls:
    """The innermost link of a run's chain: answers the calls a person denied, runs the rest.

    Sitting under the guard and every decorator, a denial passes through the whole chain (a
    telemetry decorator gives it a span with ``error.type = approval_denied``) and never reaches
    the tools.
    """

    def __init__(self, inner: ToolInvokerPort) -> None:
        self._inner = inner
        self._denied: dict[str, str] = {}

    def deny(self, call_id: str, reason: str) -> None:
        self._denied[call_id] = reason

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        reason = self._denied.get(call.call_id)
        if reason is not None:
            return denial(call.call_id, reason)
        return await self._inner.invoke(call)
