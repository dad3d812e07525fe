"""Durable runs on DBOS (the ``durable`` extra): a transcript is a workflow, a request or tool call a step."""

# Imported for its workflow too: DBOS must know every workflow before launch, to recover it.
from adapters.durable.approval import Approvals, edit_result, start_edit
from adapters.durable.engine import (
    DatabaseError,
    Engine,
    EngineSettings,
    LivenessLostError,
    Outcome,
    Runtime,
    check_database_url,
    requester,
)
from adapters.durable.status import STATES, MeetingState, batch_status
from adapters.durable.steps import DurableChat, DurableToolInvoker, scrubbed

__all__ = [
    "STATES",
    "Approvals",
    "DatabaseError",
    "DurableChat",
    "DurableToolInvoker",
    "Engine",
    "EngineSettings",
    "LivenessLostError",
    "MeetingState",
    "Outcome",
    "Runtime",
    "batch_status",
    "check_database_url",
    "edit_result",
    "requester",
    "scrubbed",
    "start_edit",
]
