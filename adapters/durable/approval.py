"""The workflow editor's pause for approval as a durable wait: a DBOS workflow waits for the decisions.

:func:`start_edit` runs an edit as the DBOS workflow ``edit_id`` in a process that launched the
:class:`~adapters.durable.engine.Engine` (with ``Runtime.workflow_editor``). Each model request and
tool call is a step, as in a batch; when the edit stops for approval, the workflow publishes the
pending calls (the event ``pending``) and waits with ``DBOS.recv`` for one message of decisions, at
most ``approval_timeout_seconds``. The wait is durable: the process may stop, and the workflow,
recovered by the next launch with the same executor id (on Postgres, by any live process: see
:mod:`adapters.durable.liveness`), goes on waiting for what is left of it.
:class:`Approvals` reads the pending calls and sends the decisions from any process that reaches the
run database (without launching DBOS there); the workflow then resumes the edit and goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Final, Self

from dbos import DBOS, DBOSClient, SetWorkflowID, WorkflowHandleAsync

from adapters.durable.engine import Engine, serializer, workflow_runtime
from adapters.redaction import Redactor
from application import ApprovalRequest, Decisions, WorkflowEdit
from application.tools.approval import checked_decisions
from domain import Workflow

__all__ = [
    "DECISIONS_TOPIC",
    "DEFAULT_APPROVAL_TIMEOUT_SECONDS",
    "EDIT_WORKFLOW",
    "PENDING_EVENT",
    "Approvals",
    "edit_result",
    "start_edit",
]

EDIT_WORKFLOW: Final = "meeting_agents.edit_workflow"
PENDING_EVENT: Final = "pending"
"""The workflow's event holding the calls it waits on (``()`` when it waits on none)."""
DECISIONS_TOPIC: Final = "approval_decisions"
DEFAULT_APPROVAL_TIMEOUT_SECONDS: Final = 7 * 24 * 3600.0


@DBOS.workflow(name=EDIT_WORKFLOW)
async def edit_workflow(
    workflow: Workflow, instruction: str, approval_timeout_seconds: float
) -> WorkflowEdit:
    """The edit, each pause a durable wait for the decisions; a wait that times out returns the edit
    still ``awaiting_approval``, its ``state`` resumable out of DBOS as any paused edit."""
    runtime = workflow_runtime()
    if runtime.workflow_editor is None:
        raise RuntimeError("this process's durable runtime has no workflow editor (Runtime.workflow_editor)")
    editor = runtime.workflow_editor()
    edit = await editor.edit(workflow, instruction)
    while edit.status == "awaiting_approval":
        assert edit.state is not None  # a paused edit carries its state
        await DBOS.set_event_async(PENDING_EVENT, tuple(edit.pending))
        decisions = await DBOS.recv_async(DECISIONS_TOPIC, timeout_seconds=approval_timeout_seconds)
        if decisions is None:
            return edit
        await DBOS.set_event_async(PENDING_EVENT, ())
        try:
            edit = await editor.resume(edit.state, decisions)
        except (TypeError, ValueError):
            # Decisions that do not fit these calls (a stale or foreign message): nothing ran; wait again.
            continue
    return edit


async def start_edit(
    engine: Engine,
    edit_id: str,
    workflow: Workflow,
    instruction: str,
    *,
    approval_timeout_seconds: float = DEFAULT_APPROVAL_TIMEOUT_SECONDS,
) -> None:
    """Start the edit as the workflow ``edit_id`` in this process (``engine`` launched here). An edit of
    that id already there (running, waiting, done, or recovered at launch) is left as it is.

    ``approval_timeout_seconds`` bounds each wait for decisions (default a week)."""
    if not approval_timeout_seconds > 0 or approval_timeout_seconds == float("inf"):
        raise ValueError(
            f"approval_timeout_seconds: expected a finite positive number, got {approval_timeout_seconds!r}"
        )
    del engine  # launched: what start_edit needs is DBOS running in this process
    with SetWorkflowID(edit_id):
        await DBOS.start_workflow_async(edit_workflow, workflow, instruction, approval_timeout_seconds)


async def edit_result(engine: Engine, edit_id: str) -> WorkflowEdit:
    """The edit ``edit_id`` once it ends (approved and finished, or its wait timed out)."""
    del engine
    handle: WorkflowHandleAsync[WorkflowEdit] = await DBOS.retrieve_workflow_async(edit_id)
    result: WorkflowEdit = await handle.get_result()
    return result


class Approvals:
    """Decisions for durable edits, from any process that reaches the run database (DBOS not launched).

    ``database_url`` as checked by :func:`~adapters.durable.engine.check_database_url`. Close it (or
    use it as a context manager) when done.
    """

    def __init__(self, database_url: str) -> None:
        self._client = DBOSClient(system_database_url=database_url, serializer=serializer(Redactor()))

    async def pending(
        self, edit_id: str, *, timeout_seconds: float = 60.0
    ) -> tuple[ApprovalRequest, ...] | None:
        """The calls the edit ``edit_id`` waits on (``()``: none now); None when it published nothing
        within ``timeout_seconds`` (no such edit, or not yet paused)."""
        found: Sequence[ApprovalRequest] | None = await self._client.get_event_async(
            edit_id, PENDING_EVENT, timeout_seconds
        )
        return None if found is None else tuple(found)

    async def decide(self, edit_id: str, decisions: Decisions, *, timeout_seconds: float = 60.0) -> None:
        """Send one decision per pending call of ``edit_id``; the waiting edit resumes with them.

        Raises ``ValueError`` before sending when the edit waits on nothing or the decisions do not
        name exactly its pending calls (as ``WorkflowEditorAgent.resume`` would).
        """
        waiting = await self.pending(edit_id, timeout_seconds=timeout_seconds)
        if not waiting:
            raise ValueError(f"the edit {edit_id!r} waits on no decision")
        checked = checked_decisions((request.call_id for request in waiting), decisions)
        await self._client.send_async(edit_id, checked, DECISIONS_TOPIC)

    def close(self) -> None:
        self._client.destroy()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
