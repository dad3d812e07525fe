"""A host's durable edit, in processes of its own (DBOS is a process-global), for the approval tests.

``python -m tests.integration.durable.editing edit DB_URL EDIT_ID EXECUTOR_ID TIMEOUT``: launches the
engine (``AGENT_*`` from the environment), starts the edit ``EDIT_ID`` of :data:`WORKFLOW` (or finds it
there, recovered) and prints its result as one JSON line once it ends.
``python -m tests.integration.durable.editing decide DB_URL EDIT_ID approve|deny|none``: waits until the
edit is paused, decides every pending call (``none``: decides nothing) and prints the pending calls as
one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Final

from adapters.durable import Approvals, edit_result, start_edit
from adapters.durable_composition import durable_engine
from adapters.settings import resolve_settings
from application import ApprovalDecision, Approve, Deny, workflow_from_json, workflow_to_json

WORKFLOW: Final = workflow_from_json(
    """{"name": "Release", "steps": [
        {"id": "s1", "name": "Build", "kind": "build"},
        {"id": "s2", "name": "Manual QA sign-off", "kind": "approval"},
        {"id": "s3", "name": "Publish", "kind": "deploy"}]}"""
)
INSTRUCTION: Final = "remove Manual QA sign-off"


async def edit(database_url: str, edit_id: str, executor_id: str, approval_timeout: float) -> None:
    settings = resolve_settings(environ=os.environ)
    async with durable_engine(settings, database_url, executor_id) as engine:
        await start_edit(engine, edit_id, WORKFLOW, INSTRUCTION, approval_timeout_seconds=approval_timeout)
        print("started", flush=True)
        result = await edit_result(engine, edit_id)
    print(
        json.dumps(
            {
                "status": result.status,
                "pending": [request.call_id for request in result.pending],
                "has_state": result.state is not None,
                "workflow": json.loads(workflow_to_json(result.workflow)),
                "text": result.text,
            }
        ),
        flush=True,
    )


async def decide(database_url: str, edit_id: str, choice: str) -> None:
    with Approvals(database_url) as approvals:
        pending = None
        while not pending:  # bounded by the test's process timeout
            pending = await approvals.pending(edit_id, timeout_seconds=5)
        if choice != "none":
            decision: ApprovalDecision = Approve() if choice == "approve" else Deny(reason="QA stays")
            await approvals.decide(edit_id, {request.call_id: decision for request in pending})
    print(
        json.dumps([{"call_id": r.call_id, "name": r.name, **dict(r.arguments)} for r in pending]), flush=True
    )


def main(argv: list[str]) -> None:
    if argv[0] == "edit":
        asyncio.run(edit(argv[1], argv[2], argv[3], float(argv[4])))
    else:
        asyncio.run(decide(argv[1], argv[2], argv[3]))


if __name__ == "__main__":
    main(sys.argv[1:])
