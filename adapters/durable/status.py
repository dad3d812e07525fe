"""What a run database holds: each meeting's state and their totals, read without running anything."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs
from dbos import DBOSClient, WorkflowStatus

from adapters.durable.engine import SUMMARIZE_WORKFLOW, DatabaseError, Outcome, serializer, shown_url
from adapters.redaction import Redactor

__all__ = ["STATES", "MeetingState", "batch_status"]

STATES: Final = ("done", "incomplete", "failed", "pending", "running")
"""A meeting's state, in the order they are listed."""
_FAILED_IN_DBOS: Final = ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@attrs.frozen
class MeetingState:
    """One meeting of a run database: its key (its workflow's id), its state (:data:`STATES`:
    ``pending`` queued and not taken yet, ``running`` taken by a process, alive or killed), the
    failure in one line, and the application version and process that hold it."""

    key: str
    state: str
    error: str | None = None
    version: str | None = None
    executor: str | None = None


def _state(status: WorkflowStatus) -> MeetingState:
    common = {"version": status.app_version, "executor": status.executor_id}
    if status.status == "SUCCESS":
        outcome = status.output
        if isinstance(outcome, Outcome) and outcome.status in ("done", "incomplete"):
            return MeetingState(status.workflow_id, outcome.status, **common)
        error = outcome.error if isinstance(outcome, Outcome) else None
        return MeetingState(status.workflow_id, "failed", _one_line(error or "no outcome"), **common)
    if status.status in _FAILED_IN_DBOS:
        error = str(status.error) if status.error is not None else status.status.lower()
        return MeetingState(status.workflow_id, "failed", _one_line(error), **common)
    state = "pending" if status.status == "ENQUEUED" else "running"
    return MeetingState(status.workflow_id, state, **common)


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else text


def batch_status(database_url: str) -> list[MeetingState]:
    """Every meeting the run database ``database_url`` holds (as :func:`check_database_url` returns
    it), failed first, then pending, running, incomplete and done, each oldest first; a
    :class:`DatabaseError` when it cannot be read (no such database, or no batch ever ran on it).

    Through DBOS's client, which reads the database without running or recovering anything."""
    if database_url.startswith("sqlite:///") and not Path(database_url.removeprefix("sqlite:///")).is_file():
        raise DatabaseError(f"--db {database_url!r}: no run database there (no batch ran on it)")
    try:
        client = DBOSClient(system_database_url=database_url, serializer=serializer(Redactor()))
    except Exception as exc:
        raise DatabaseError(
            f"--db {shown_url(database_url)!r}: cannot be read ({type(exc).__name__})"
        ) from None
    try:
        statuses: Sequence[WorkflowStatus] = client.list_workflows(name=SUMMARIZE_WORKFLOW, load_input=False)
    except Exception as exc:
        raise DatabaseError(
            f"--db {shown_url(database_url)!r}: holds no batch runs ({type(exc).__name__})"
        ) from None
    finally:
        client.destroy()
    order = {"failed": 0, "pending": 1, "running": 2, "incomplete": 3, "done": 4}
    states = [_state(status) for status in statuses]
    return sorted(states, key=lambda state: order[state.state])
