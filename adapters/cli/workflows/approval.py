"""Deciding the workflow edits that wait for approval: a question on the terminal, or --approve all|none."""

from __future__ import annotations

import asyncio
from typing import Final, TextIO

from adapters.cli.display.console import Console
from adapters.cli.display.progress import LiveRun
from adapters.cli.display.report import describe_request
from application import ApprovalDecision, ApprovalRequest, Approve, Approver, Deny
from domain import Workflow

__all__ = ["TerminalApprover", "fixed_approver", "question"]

_YES: Final = frozenset({"y", "yes"})


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
