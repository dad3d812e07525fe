"""Was a workflow instruction carried out (adapters/cli/workflows/instruction.py), and why not."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.cli.display.report import edit_text
from adapters.cli.workflows.instruction import why_not_carried_out
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import WorkflowEdit, WorkflowEditorAgent, workflow_from_json

RELEASE = workflow_from_json(
    (Path(__file__).parents[3] / "examples" / "release-workflow.json").read_text(encoding="utf-8")
)


async def edit_with(*turns: ScriptedTurn, instruction: str) -> WorkflowEdit:
    agent = WorkflowEditorAgent(ScriptedChat(*turns), approval_required_tools=())
    return await agent.edit(RELEASE, instruction)


async def test_a_changed_workflow_was_carried_out() -> None:
    edit = await edit_with(
        ScriptedTurn(calls=(("c1", "remove_step", '{"step_id": "step-4"}'),)),
        ScriptedTurn(text="Removed it."),
        instruction="remove Manual QA sign-off",
    )
    assert why_not_carried_out(RELEASE, edit, "remove Manual QA sign-off") is None


async def test_an_edit_that_changes_nothing_still_did_what_was_asked() -> None:
    edit = await edit_with(
        ScriptedTurn(calls=(("c1", "move_step", '{"step_id": "step-2", "position": 2}'),)),
        ScriptedTurn(text="It is already second."),
        instruction="move Build release candidate to position 2",
    )
    assert edit.workflow == RELEASE
    assert why_not_carried_out(RELEASE, edit, "move Build release candidate to position 2") is None


async def test_edits_that_all_failed_are_named_with_their_codes() -> None:
    instruction = "rename Build release candidate to Build RC"
    edit = await edit_with(
        ScriptedTurn(calls=(("c1", "rename_step", '{"step_id": "step-9", "name": "Build RC"}'),)),
        ScriptedTurn(text="I could not."),
        instruction=instruction,
    )
    assert why_not_carried_out(RELEASE, edit, instruction) == (
        "every edit the model tried failed (rename_step -> unknown_step)"
    )
    assert '  error   rename_step(step_id="step-9", name="Build RC") -> unknown_step' in edit_text(
        RELEASE, edit
    )


@pytest.mark.parametrize(
    ("instruction", "why"),
    [
        (
            "rename 'release' to 'Ship'",
            "several steps match 'release': 'Freeze the release branch', 'Build release candidate', "
            "'Announce in #releases'",
        ),
        ("move the step Smoke test to the top", "no such step: 'Smoke test' matches none of the 6 steps"),
        ('add a step "Notes" after the "Deploy" step', "no such step: 'Deploy' matches none"),
        ("Add X before release and remove step-4", "several steps match 'release'"),
        ("remove step-4; delete ''", "nothing understood: the model made no edit"),
    ],
)
async def test_the_step_an_instruction_names_explains_an_unchanged_workflow(
    instruction: str, why: str
) -> None:
    edit = await edit_with(ScriptedTurn(text=""), instruction=instruction)
    reason = why_not_carried_out(RELEASE, edit, instruction)
    assert reason is not None
    assert reason.startswith(why)
