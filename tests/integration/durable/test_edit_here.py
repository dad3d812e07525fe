"""A durable edit in this process (SQLite): a message that does not fit the pending calls is ignored and
the edit waits on; what start_edit, Approvals.decide and a runtime without an editor refuse."""

from __future__ import annotations

import asyncio
import math
import sqlite3
from pathlib import Path

import attrs
import pytest
from dbos import DBOSClient

from adapters.durable import Approvals, Engine, EngineSettings, edit_result, start_edit
from adapters.durable.approval import DECISIONS_TOPIC
from adapters.durable.engine import serializer
from adapters.redaction import Redactor
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import Approve
from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.editing import INSTRUCTION, WORKFLOW
from tests.integration.durable.support import runtime_over

EDIT_ID = "release-edit-here"


def _url(folder: Path) -> str:
    return f"sqlite:///{folder / 'runs.sqlite'}"


def _settings(folder: Path) -> EngineSettings:
    return EngineSettings(_url(folder), "edit-host", 1, traced=False)


async def test_a_message_that_fits_no_pending_call_is_ignored_and_the_next_decision_resumes_the_edit(
    tmp_path: Path,
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("d1", "remove_step", '{"step_id": "s2"}'),)), ScriptedTurn(text="Removed QA.")
    )
    engine = await Engine.launch(_settings(tmp_path), runtime_over(chat))
    try:
        await start_edit(engine, EDIT_ID, WORKFLOW, INSTRUCTION, approval_timeout_seconds=PROCESS_TIMEOUT)
        with Approvals(_url(tmp_path)) as approvals:
            pending = await approvals.pending(EDIT_ID, timeout_seconds=PROCESS_TIMEOUT)
            # A stale or foreign message, sent past decide's check: decisions for a call it does not wait on.
            client = DBOSClient(system_database_url=_url(tmp_path), serializer=serializer(Redactor()))
            try:
                await client.send_async(EDIT_ID, {"d0": Approve()}, DECISIONS_TOPIC)
            finally:
                client.destroy()
            await approvals.decide(EDIT_ID, {"d1": Approve()})
            edit = await asyncio.wait_for(edit_result(engine, EDIT_ID), PROCESS_TIMEOUT)
            # Done, the edit waits on nothing: a decision now is refused before anything is sent.
            with pytest.raises(ValueError, match=f"the edit '{EDIT_ID}' waits on no decision"):
                await approvals.decide(EDIT_ID, {"d1": Approve()}, timeout_seconds=PROCESS_TIMEOUT)
    finally:
        engine.shutdown()
    assert pending is not None
    assert [(request.call_id, request.name) for request in pending] == [("d1", "remove_step")]
    assert edit.status == "done"
    assert [step.id for step in edit.workflow.steps] == ["s1", "s3"]
    assert edit.text == "Removed QA."
    assert len(chat.requests) == 2  # the ignored message ran nothing


async def test_a_wait_for_decisions_must_be_finite_and_positive(tmp_path: Path) -> None:
    engine = await Engine.launch(_settings(tmp_path), runtime_over(ScriptedChat()))
    try:
        for seconds in (0.0, -1.0, math.inf, math.nan):
            with pytest.raises(
                ValueError, match="approval_timeout_seconds: expected a finite positive number"
            ):
                await start_edit(engine, EDIT_ID, WORKFLOW, INSTRUCTION, approval_timeout_seconds=seconds)
    finally:
        engine.shutdown()
    connection = sqlite3.connect(tmp_path / "runs.sqlite")
    try:
        assert connection.execute("SELECT count(*) FROM workflow_status").fetchone() == (0,)  # none started
    finally:
        connection.close()


async def test_an_edit_in_a_process_whose_runtime_has_no_editor_fails_naming_what_is_missing(
    tmp_path: Path,
) -> None:
    runtime = attrs.evolve(runtime_over(ScriptedChat()), workflow_editor=None)
    engine = await Engine.launch(_settings(tmp_path), runtime)
    try:
        await start_edit(engine, EDIT_ID, WORKFLOW, INSTRUCTION)
        with pytest.raises(RuntimeError, match=r"has no workflow editor \(Runtime.workflow_editor\)"):
            await asyncio.wait_for(edit_result(engine, EDIT_ID), PROCESS_TIMEOUT)
    finally:
        engine.shutdown()
