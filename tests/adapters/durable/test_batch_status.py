"""Each workflow status DBOS records is one meeting state of `batch-status`, failed first, done last."""

from __future__ import annotations

import types
from typing import Any

import pytest

import adapters.durable.status as status_module
from adapters.durable import Outcome, batch_status


def _status(workflow_id: str, status: str, output: Any = None, error: Exception | None = None) -> Any:
    return types.SimpleNamespace(
        workflow_id=workflow_id,
        status=status,
        output=output,
        error=error,
        app_version="meeting-agents-1",
        executor_id="batch@host",
    )


_RECORDED = [
    _status("a-done", "SUCCESS", Outcome("done", summary={})),
    _status("b-queued", "ENQUEUED"),
    _status("c-taken", "PENDING"),
    _status("d-cut", "SUCCESS", Outcome("incomplete", summary={})),
    _status("e-refused", "SUCCESS", Outcome("failed", error="the gateway answered 503\nmore")),
    _status("f-raised", "ERROR", error=RuntimeError("boom\ntraceback")),
    _status("g-cancelled", "CANCELLED"),
]


class _Client:
    def __init__(self, **_: Any) -> None:
        pass

    def list_workflows(self, **_: Any) -> list[Any]:
        return list(_RECORDED)

    def destroy(self) -> None:
        pass


def test_every_recorded_status_is_a_state_with_the_failure_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(status_module, "DBOSClient", _Client)
    states = batch_status("postgresql://u@127.0.0.1:9/db")
    assert [(state.key, state.state, state.error) for state in states] == [
        ("e-refused", "failed", "the gateway answered 503"),
        ("f-raised", "failed", "boom"),
        ("g-cancelled", "failed", "cancelled"),
        ("b-queued", "pending", None),
        ("c-taken", "running", None),
        ("d-cut", "incomplete", None),
        ("a-done", "done", None),
    ]
    assert {state.executor for state in states} == {"batch@host"}
