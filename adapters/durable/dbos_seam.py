"""Every use the durable adapter makes of DBOS's private parts, each named with what it relies on.

The rest of ``adapters.durable`` talks to DBOS through its public API (``DBOS``, ``DBOSClient``,
``DBOSConfig``, ``Queue``, ``Serializer``, ``SetWorkflowID``, the workflow and step decorators).
``tests/canary/test_dbos_seam.py`` holds one canary per name below, which fails, naming the
reliance, when a release changes it (``make canary`` runs them against the newest DBOS;
``docs/sdk-seams.md`` says how to read a failure).

==============================  ==================================================================
name                            relies on
==============================  ==================================================================
recover_pending_workflows       ``DBOS._recover_pending_workflows(executor_ids)``: re-enqueues the
                                PENDING workflows of those executors, each only while it is still
                                PENDING under that id, and returns their handles
console_to_current_stderr       DBOS logs to the console through a ``StreamHandler`` on the
                                ``dbos`` logger named ``__dbos_console_log_handler__``
NO_LOGGER_PROVIDER_WARNING      the start of DBOS's warning that its OpenTelemetry is on while no
                                global logger provider is set
WITH_ARGUMENTS                  the start of DBOS's log records that print a workflow's or a step's
                                function with its arguments (``functools.partial(...)``) or a value
                                it could not serialize: what ``quiet_arguments`` rewrites
==============================  ==================================================================
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, Final

from dbos import DBOS

__all__ = [
    "CONSOLE_HANDLER",
    "NO_LOGGER_PROVIDER_WARNING",
    "WITH_ARGUMENTS",
    "console_to_current_stderr",
    "quiet_arguments",
    "recover_pending_workflows",
]

CONSOLE_HANDLER: Final = "__dbos_console_log_handler__"
NO_LOGGER_PROVIDER_WARNING: Final = "OTLP is enabled but logger provider not set"
WITH_ARGUMENTS: Final = ("Asyncio task cancelled for workflow or step", "Error serializing object")
# How a function's repr shows its arguments: a transcript, a system prompt, a model's answer.
_PARTIAL: Final = "functools.partial("


class _ArgumentsFilter(logging.Filter):
    """Rewrites DBOS's records that would print a workflow's arguments (the transcript, the messages
    with the system prompt) into their first words: ``-v`` shows that they happened, not what ran."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        start = next((start for start in WITH_ARGUMENTS if message.startswith(start)), None)
        if start is None and _PARTIAL in message:
            start = message.split(_PARTIAL, 1)[0].rstrip()
        if start is not None:
            record.msg = f"{start} (its arguments not shown)"
            record.args = ()
        return True


_ARGUMENTS_FILTER: Final = _ArgumentsFilter()


def quiet_arguments() -> None:
    """DBOS's logger never prints what a workflow or a step was called with (idempotent)."""
    logger = logging.getLogger("dbos")
    if _ARGUMENTS_FILTER not in logger.filters:
        logger.addFilter(_ARGUMENTS_FILTER)


def recover_pending_workflows(executor_ids: list[str]) -> list[Any]:
    """DBOS's own recovery of the PENDING workflows of ``executor_ids`` (what a process started again
    with one of those ids runs at launch); the handles of those it re-enqueued.

    DBOS has no public call that does this. ``DBOS.resume_workflow(id, queue_name=...)`` (listed by
    ``DBOS.list_workflows(status="PENDING", executor_id=...)``) would put a workflow back on its queue,
    but it re-enqueues whatever runs the workflow (no check that it is still PENDING under the dead
    id) and sets its recovery attempts to 0, so a transcript that kills every process that takes it
    would be taken over for ever instead of ending ``MAX_RECOVERY_ATTEMPTS_EXCEEDED`` (a ``failed``
    meeting). ``DBOS.fork_workflow`` gives it a new id (our key is its id) and
    ``DBOS.rewind_workflow`` takes only a workflow that ended."""
    handles: list[Any] = DBOS._recover_pending_workflows(executor_ids)
    return handles


def console_to_current_stderr() -> bool:
    """DBOS's console handler writes to this process's ``sys.stderr`` as it is now; whether it found
    the handler.

    DBOS makes that handler once per process, on the ``sys.stderr`` of the moment, and flushes it at
    every later launch: a launch after that stream was replaced and closed (a host or a test that
    captured stderr around the first run) would fail on the closed stream.
    """
    found = False
    for handler in logging.getLogger("dbos").handlers:
        if handler.name == CONSOLE_HANDLER and isinstance(handler, logging.StreamHandler):
            with handler.lock or contextlib.nullcontext():
                # Not setStream: it flushes the old stream first, which is what fails when it is closed.
                handler.stream = sys.stderr
            found = True
    return found
