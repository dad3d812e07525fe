"""Deciding the workflow edits that wait for approval: a question on the terminal, or --approve all|none."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Final, TextIO

from adapters.cli.console import Console
from adapters.cli.progress import LiveRun
from application import ApprovalDecision, ApprovalRequest, Approve, Approver, Deny
from domain import Workflow

__all__ = ["TerminalApprover", "describe_request", "fixed_approver", "question"]

_YES: Final = frozenset({"y", "yes"})


def _step(workflow: Workflow | None, step_id: object) -> str:
    """``s3 "Deploy"`` for a step of ``workflow``; the id alone for a step it does not have."""
    shown = str(step_id)
    if workflow is not None:
        for step in workflow.steps:
            if step.id == shown:
                return f'{shown} "{step.name}"'
    return shown


def describe_request(request: ApprovalRequest, workflow: Workflow | None) -> str:
    """What a held workflow call would do, in words: ``Remove step s3 "Deploy"``.

    Steps are named as ``workflow`` has them (the workflow as it was when the call was held).
    """
    arguments: Mapping[str, object] = request.arguments
    step = _step(workflow, arguments.get("step_id"))
    if request.name == "remove_step":
        return f"Remove step {step}"
    if request.name == "rename_step":
        return f'Rename step {step} to "{arguments.get("name")}"'
    if request.name == "move_step":
        return f"Move step {step} to position {arguments.get('position')}"
    if request.name == "add_step":
        after = arguments.get("after")
        where = "at the end" if after is None else f"after {_step(workflow, after)}"
        return f'Add step "{arguments.get("name")}" ({arguments.get("kind")}) {where}'
    if request.name == "list_steps":
        return "List the steps"
    return f"Call {request.name}"


def question(request: ApprovalRequest, workflow: Workflow | None) -> str:
    """The prompt for one held call: ``Remove step s3 "Deploy"? [y/N] ``."""
    return f"{describe_request(request, workflow)}? [y/N] "


def fixed_approver(choice: str) -> Approver:
    """The approver of ``--approve all`` (every held call runs) or ``--approve none`` (none does)."""
    decision: ApprovalDecision = Approve() if choice == "all" else Deny(reason="--approve none was given")

    async def decide(request: ApprovalRequest) -> ApprovalDecision:
        return decision

    return decide


class TerminalApprover:
    """Asks on the terminal, one question per held call; only ``y`` or ``yes`` approves (default No).

    The question goes to stderr (stdout carries only the result), with the live line held off
    meanwhile, and the answer is read from ``stdin``; an end of input is a No. ``workflow`` names
    the steps in the questions.
    """

    def __init__(self, console: Console, live: LiveRun, stdin: TextIO, workflow: Workflow | None) -> None:
        self._console = console
        self._live = live
        self._stdin = stdin
        self._workflow = workflow

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        with self._live.paused():
            self._console.ask(question(request, self._workflow))
            # Read in a thread, so the event loop goes on serving what else it has to.
            answer = await asyncio.to_thread(self._stdin.readline)
        if answer.strip().lower() in _YES:
            return Approve()
        return Deny(reason="the person at the terminal said no")
