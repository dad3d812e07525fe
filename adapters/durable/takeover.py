"""Work an earlier application version left unfinished, taken over by the running one (DBOS's public API)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbos import DBOS, WorkflowStatus

__all__ = ["UNFINISHED", "older_unfinished", "take_over"]

UNFINISHED: Final = ["PENDING", "ENQUEUED", "CANCELLED"]
"""The statuses of a workflow that can be taken over: running or left running, queued, or cancelled by
a take-over cut short before its rewind."""


def older_unfinished(statuses: Iterable[WorkflowStatus], current: str) -> list[WorkflowStatus]:
    """Of ``statuses`` (listed with :data:`UNFINISHED`), those of another application version than
    ``current``: DBOS runs, recovers and dequeues a workflow only under the version that started it."""
    return [status for status in statuses if status.status in UNFINISHED and status.app_version != current]


def take_over(statuses: Iterable[WorkflowStatus], current: str, queue: str) -> dict[str, list[str]]:
    """Each of ``statuses`` put back on ``queue`` under the version ``current``, from the step after
    its last recorded one; the ids taken over, by the version that left them.

    A workflow is cancelled (a process of its version still running it stops at its next step) and
    rewound (``DBOS.rewind_workflow``, which takes only a workflow that ended) under ``current``: every
    recorded step is kept, so no completed request is sent again. Cut short between the two, the
    workflow stays cancelled under the old version, which the next take-over finds again."""
    taken: dict[str, list[str]] = {}
    for status in statuses:
        steps = DBOS.list_workflow_steps(status.workflow_id)
        start = max((int(step["function_id"]) for step in steps), default=0) + 1
        if status.status != "CANCELLED":
            DBOS.cancel_workflow(status.workflow_id)
        DBOS.rewind_workflow(
            status.workflow_id, start_step=start, application_version=current, queue_name=queue
        )
        taken.setdefault(status.app_version or "unknown", []).append(status.workflow_id)
    return taken
