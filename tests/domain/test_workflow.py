"""Workflows (domain/workflow.py): edits return copies, ids are known and unique."""

from __future__ import annotations

import pytest

from domain import UnknownStepError, Workflow, WorkflowStep


def workflow() -> Workflow:
    return Workflow(
        "release",
        (
            WorkflowStep("s1", "Build", "task"),
            WorkflowStep("s2", "Test", "task"),
            WorkflowStep("s3", "Ship", "task"),
        ),
    )


def test_workflow_edits_return_copies() -> None:
    original = workflow()
    added, step = original.add_step("Review", "approval", after="s1")
    assert [s.id for s in added.steps] == ["s1", step.id, "s2", "s3"]
    assert step.id not in {s.id for s in original.steps}
    assert [s.id for s in original.steps] == ["s1", "s2", "s3"]
    assert [s.id for s in original.remove_step("s2").steps] == ["s1", "s3"]
    assert original.rename_step("s3", "Release").step("s3").name == "Release"
    assert [s.id for s in original.move_step("s3", 1).steps] == ["s3", "s1", "s2"]
    assert [s.id for s in original.move_step("s1", 99).steps] == ["s2", "s3", "s1"]
    assert [s.id for s in original.add_step("End", "task")[0].steps][-1] == "step-4"


def test_workflow_rejects_unknown_and_duplicate_ids() -> None:
    with pytest.raises(UnknownStepError) as info:
        workflow().remove_step("nope")
    assert info.value.step_id == "nope"
    with pytest.raises(ValueError, match="unique"):
        Workflow("w", (WorkflowStep("a", "A", "t"), WorkflowStep("a", "B", "t")))
