"""Records a durable run stored under an earlier layout of the application load into today's classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapters.durable.engine import serializer
from adapters.redaction import Redactor
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import Approve, Deny, ToolRunError, WorkflowEditorAgent
from domain import ResponseFailedError, Workflow, WorkflowStep

RECORDS = Path(__file__).with_name("stored_records.json")
"""What the serializer wrote for :func:`stored_values` when the application's modules stood at the top of
its package (``application.run``, ``application.approval``, ``application.workflow_editor``, ...)."""

RELEASE = Workflow(
    "release",
    (WorkflowStep("s1", "Build", "task"), WorkflowStep("s2", "Deploy", "deploy")),
)


async def stored_values() -> dict[str, Any]:
    """What the durable workflows store of the application's own classes: a paused edit (its state,
    run and approval requests), the event of the calls it waits on, the decisions sent to it, and a
    failed run's error."""
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(
                ("r1", "rename_step", '{"step_id": "s1", "name": "Compile"}'),
                ("d1", "remove_step", '{"step_id": "s2"}'),
            )
        )
    )
    edit = await WorkflowEditorAgent(chat).edit(RELEASE, "rename Build, remove Deploy")
    failure = ToolRunError.from_error(ResponseFailedError("the model failed", code="server_error"), edit.run)
    return {
        "edit": edit,
        "pending": tuple(edit.pending),
        "decisions": {"r1": Approve(), "d1": Deny(reason="keep it")},
        "failure": failure,
    }


def _same_error(found: object, expected: ToolRunError) -> bool:
    return (
        type(found) is type(expected)
        and isinstance(found, ToolRunError)
        and found.args == expected.args
        and found.run == expected.run
        and found.__dict__ == expected.__dict__
    )


async def test_records_stored_under_the_earlier_module_layout_load_equal_to_todays_values() -> None:
    stored = json.loads(RECORDS.read_text(encoding="utf-8"))
    values = await stored_values()
    loaded = {name: serializer(Redactor()).deserialize(record) for name, record in stored.items()}

    assert set(loaded) == set(values)
    assert loaded["edit"] == values["edit"]
    assert loaded["pending"] == values["pending"]
    assert loaded["decisions"] == values["decisions"]
    assert _same_error(loaded["failure"], values["failure"])


async def test_todays_records_load_back_equal() -> None:
    values = await stored_values()
    store = serializer(Redactor())
    loaded = {name: store.deserialize(store.serialize(value)) for name, value in values.items()}

    assert {name: value for name, value in loaded.items() if name != "failure"} == {
        name: value for name, value in values.items() if name != "failure"
    }
    assert _same_error(loaded["failure"], values["failure"])
