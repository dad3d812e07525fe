"""Durable runs on DBOS (the ``durable`` extra): a transcript is a workflow, a request or tool call a step."""

from adapters.durable.engine import (
    DatabaseError,
    Engine,
    EngineSettings,
    Outcome,
    Runtime,
    check_database_url,
    requester,
    shown_database_url,
)
from adapters.durable.steps import DurableChat, DurableToolInvoker, scrubbed

__all__ = [
    "DatabaseError",
    "DurableChat",
    "DurableToolInvoker",
    "Engine",
    "EngineSettings",
    "Outcome",
    "Runtime",
    "check_database_url",
    "requester",
    "scrubbed",
    "shown_database_url",
]
