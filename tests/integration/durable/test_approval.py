"""The workflow editor's pause as a durable wait on SQLite: decisions sent from another process resume
the same DBOS workflow, live or after the process that waited was killed; a wait that times out hands
the paused edit back. On Postgres, another host takes over the edit of one that died while it waited.
Each host is a process of its own (:mod:`tests.integration.durable.editing`)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from adapters.durable import Approvals
from application import ApprovalRequest, Approve
from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import CountingGateway, gateway_environment, selected, until_selected
from tests.support.doc_blocks import environment, run_python, section_block
from tests.support.processes import python_module, start

pytestmark = pytest.mark.slow

EDIT_ID = "release-edit-1"
STEPS_BEFORE = ["s1", "s2", "s3"]


def _host(*argv: str, environ: dict[str, str]) -> subprocess.Popen[bytes]:
    return start(python_module("tests.integration.durable.editing", *argv), environ=environ)


def _json_line(process: subprocess.Popen[bytes]) -> Any:
    out, err = process.communicate(timeout=PROCESS_TIMEOUT)
    assert process.returncode == 0, err.decode("utf-8")
    return json.loads(out.decode("utf-8").splitlines()[-1])


def _started(process: subprocess.Popen[bytes]) -> None:
    assert process.stdout is not None
    line = process.stdout.readline()  # bounded: the process ends (EOF) if it cannot start
    assert line == b"started\n", process.communicate(timeout=PROCESS_TIMEOUT)[1].decode("utf-8")


def _editing(database: str, host: str, environ: dict[str, str]) -> subprocess.Popen[bytes]:
    """The edit started on ``host`` (waiting up to 600 s for its approval), once it says it started."""
    process = _host("edit", database, EDIT_ID, host, "600", environ=environ)
    _started(process)
    return process


async def _approve_all(database: str) -> tuple[ApprovalRequest, ...]:
    """Every call the edit waits on approved, from this process (DBOS not launched here): those calls."""
    with Approvals(database) as approvals:
        pending = await approvals.pending(EDIT_ID, timeout_seconds=PROCESS_TIMEOUT)
        assert pending, "the edit waits on nothing"
        await approvals.decide(EDIT_ID, {request.call_id: Approve() for request in pending})
    return pending


def _assert_resumed_without_resending(completed: list[str], sent_before: list[str]) -> None:
    """The edit sent requests before its pause, and after it only new ones: none answered twice."""
    assert sent_before, "the edit sent no request before it paused"
    assert len(set(completed)) == len(completed), "a completed request was sent again"
    assert completed[: len(sent_before)] == sent_before
    assert len(completed) > len(sent_before), "the resumed edit sent nothing"


def _steps(edit: dict[str, Any]) -> list[str]:
    return [step["id"] for step in edit["workflow"]["steps"]]


@pytest.mark.parametrize(("choice", "steps_after"), [("approve", ["s1", "s3"]), ("deny", STEPS_BEFORE)])
def test_a_decision_sent_from_another_process_resumes_the_waiting_edit(
    tmp_path: Path, choice: str, steps_after: list[str]
) -> None:
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        editing = _editing(database, "host-a", environ)
        pending = _json_line(_host("decide", database, EDIT_ID, choice, environ=environ))
        edit = _json_line(editing)
    assert [(call["name"], call["step_id"]) for call in pending] == [("remove_step", "s2")]
    assert edit["status"] == "done"
    assert edit["pending"] == []
    assert not edit["has_state"]
    assert _steps(edit) == steps_after
    assert len(set(gateway.completed)) == len(gateway.completed)


def test_killed_while_waiting_a_later_decision_resumes_the_same_edit_when_its_host_starts_again(
    tmp_path: Path,
) -> None:
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        editing = _editing(database, "host-a", environ)
        # Paused: the pending call is published; then the host dies while it waits.
        waited = _json_line(_host("decide", database, EDIT_ID, "none", environ=environ))
        editing.send_signal(signal.SIGKILL)
        editing.communicate(timeout=PROCESS_TIMEOUT)
        sent_before = list(gateway.completed)
        decided = _json_line(_host("decide", database, EDIT_ID, "approve", environ=environ))
        # The same host again (the same executor id): DBOS recovers the edit, which finds the decision.
        edit = _json_line(_host("edit", database, EDIT_ID, "host-a", "600", environ=environ))
    assert waited == decided
    assert edit["status"] == "done"
    assert _steps(edit) == ["s1", "s3"]
    _assert_resumed_without_resending(gateway.completed, sent_before)


def test_killed_while_waiting_on_postgres_another_host_takes_the_edit_over_and_a_decision_resumes_it_once(
    database: str,
) -> None:
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url, AGENT_BATCH_RECOVERY_SECONDS="0.5")
        editing = _editing(database, "host-a", environ)
        # Paused: the pending call is published; then the host dies while it waits, never to start again.
        published = (
            f"SELECT 1 FROM dbos.workflow_events WHERE workflow_uuid = '{EDIT_ID}' AND key = 'pending'"  # noqa: S608
        )
        until_selected(database, published, bool)
        editing.send_signal(signal.SIGKILL)
        editing.communicate(timeout=PROCESS_TIMEOUT)
        sent_before = list(gateway.completed)
        # Another host, asking for the same edit: it finds it there, and recovers it from the dead host.
        other = _editing(database, "host-b", environ)
        decided = asyncio.run(_approve_all(database))
        edit = _json_line(other)
    assert [(call.name, dict(call.arguments)) for call in decided] == [("remove_step", {"step_id": "s2"})]
    assert edit["status"] == "done"
    assert _steps(edit) == ["s1", "s3"]
    _assert_resumed_without_resending(gateway.completed, sent_before)
    assert selected(database, "SELECT status, executor_id FROM dbos.workflow_status") == [
        ("SUCCESS", "host-b")
    ]
    # The one decision sent, consumed once, by one step of the edit.
    assert selected(database, "SELECT consumed FROM dbos.notifications") == [(True,)]


def test_a_wait_that_times_out_hands_back_the_paused_edit_with_its_state(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    with CountingGateway() as gateway:
        edit = _json_line(
            _host("edit", database, EDIT_ID, "host-a", "0.5", environ=gateway_environment(gateway.base_url))
        )
    assert edit["status"] == "awaiting_approval"
    assert len(edit["pending"]) == 1
    assert edit["has_state"]
    assert _steps(edit) == STEPS_BEFORE


def test_the_documented_durable_edit_runs_as_written(tmp_path: Path) -> None:
    done = run_python(
        section_block("docs/approval.md", "## Approval that waits for days"), environment(), tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "waiting for approval: remove_step {'step_id': 's2'}" in done.stdout
    assert done.stdout.splitlines()[1] == "done {"
    assert '"name": "Manual QA sign-off"' not in done.stdout
    assert '"name": "Publish"' in done.stdout
