"""The workflow-editor pipeline over the scripted model: guarded step tools editing a copy."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import LoopSettings, ToolRunError, WorkflowEditorAgent, workflow_to_json
from application.framing import unframe
from domain import (
    ChatMessage,
    ChatResponse,
    FunctionResultContent,
    ResponseFailedError,
    UnknownStepError,
    Workflow,
    WorkflowStep,
)
from tests.strategies import PlannedCall, call_turns, planned_chat, workflow_calls, workflows

RELEASE = Workflow(
    "release",
    (
        WorkflowStep("freeze", "Code freeze", "gate"),
        WorkflowStep("build", "Build", "task"),
        WorkflowStep("publish", "Publish", "deploy"),
    ),
)


def reference_edit(workflow: Workflow, name: str, arguments: Mapping[str, Any]) -> tuple[Workflow, bool]:
    """The domain operation a valid call stands for; the bool says whether the step id was known."""
    try:
        if name == "add_step":
            return workflow.add_step(arguments["name"], arguments["kind"], arguments["after"])[0], True
        if name == "remove_step":
            return workflow.remove_step(arguments["step_id"]), True
        if name == "rename_step":
            return workflow.rename_step(arguments["step_id"], arguments["name"]), True
        if name == "move_step":
            return workflow.move_step(arguments["step_id"], arguments["position"]), True
    except UnknownStepError:
        return workflow, False
    return workflow, True


def steps_json(workflow: Workflow) -> list[dict[str, str]]:
    return [{"id": s.id, "name": s.name, "kind": s.kind} for s in workflow.steps]


@given(workflow=workflows, turns=call_turns(workflow_calls), concurrent=st.booleans())
async def test_edits_apply_exactly_the_well_formed_calls_and_every_call_is_answered_once(
    workflow: Workflow, turns: list[list[PlannedCall]], concurrent: bool
) -> None:
    chat, ids = planned_chat(turns)
    settings = LoopSettings(max_consecutive_tool_errors=len(turns) + 1, concurrent_tool_calls=concurrent)

    edit = await WorkflowEditorAgent(chat, settings, approval_required_tools=()).edit(workflow, "edit it")

    expected = workflow
    planned = [call for turn in turns for call in turn]
    assert [r.call.call_id for r in edit.tool_calls] == ids
    for call, record in zip(planned, edit.tool_calls, strict=True):
        assert record.guarded == (call.kind == "malformed")
        if call.kind != "valid":
            assert record.result.is_error
            assert isinstance(record.result.result, dict)
            assert record.result.result["error"] == "invalid_tool_arguments"
            continue
        if call.name == "list_steps":
            assert record.result.result == {"name": expected.name, "steps": steps_json(expected)}
            continue
        expected, known = reference_edit(expected, call.name, call.arguments or {})
        assert record.result.is_error == (not known)
        if not known:
            assert isinstance(record.result.result, dict)
            assert record.result.result["error"] == "unknown_step"
    assert edit.workflow == expected
    answered = [
        r.call_id for m in edit.run.messages for r in m.contents if isinstance(r, FunctionResultContent)
    ]
    assert answered == ids
    for t in range(len(turns)):
        sent = [c.raw_arguments for m in chat.requests[t + 1].messages for c in m.function_calls]
        assert sent == [c.raw for turn in turns[: t + 1] for c in turn]
    assert edit.text == "Done."


async def test_an_edit_session_changes_a_copy_and_reports_each_step() -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_steps", "{}"),)),
        ScriptedTurn(
            calls=(
                ("c2", "add_step", '{"name": "Staged rollout", "kind": "deploy", "after": "build"}'),
                ("c3", "rename_step", '{"step_id": "publish", "name": "Publish to stores"}'),
                ("c4", "move_step", '{"step_id": "freeze", "position": 99}'),
                ("c5", "remove_step", '{"step_id": "build"}'),
            )
        ),
        ScriptedTurn(text="Added a staged rollout, renamed publishing, moved the freeze last."),
    )

    edit = await WorkflowEditorAgent(chat, LoopSettings(), approval_required_tools=()).edit(
        RELEASE, "Add a staged rollout after build"
    )

    assert edit.workflow == Workflow(
        "release",
        (
            WorkflowStep("step-4", "Staged rollout", "deploy"),
            WorkflowStep("publish", "Publish to stores", "deploy"),
            WorkflowStep("freeze", "Code freeze", "gate"),
        ),
    )
    assert RELEASE.steps[0] == WorkflowStep("freeze", "Code freeze", "gate")
    assert edit.text == "Added a staged rollout, renamed publishing, moved the freeze last."
    assert [r.result.result for r in edit.tool_calls] == [
        {
            "name": "release",
            "steps": [
                {"id": "freeze", "name": "Code freeze", "kind": "gate"},
                {"id": "build", "name": "Build", "kind": "task"},
                {"id": "publish", "name": "Publish", "kind": "deploy"},
            ],
        },
        {"added": {"id": "step-4", "name": "Staged rollout", "kind": "deploy"}, "position": 3},
        {"renamed": {"id": "publish", "name": "Publish to stores", "kind": "deploy"}},
        {
            "moved": "freeze",
            "steps": [
                {"id": "build", "name": "Build", "kind": "task"},
                {"id": "step-4", "name": "Staged rollout", "kind": "deploy"},
                {"id": "publish", "name": "Publish to stores", "kind": "deploy"},
                {"id": "freeze", "name": "Code freeze", "kind": "gate"},
            ],
        },
        {
            "removed": "build",
            "steps": [
                {"id": "step-4", "name": "Staged rollout", "kind": "deploy"},
                {"id": "publish", "name": "Publish to stores", "kind": "deploy"},
                {"id": "freeze", "name": "Code freeze", "kind": "gate"},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("add_step", {"name": "X", "kind": "task", "after": "nope"}),
        ("remove_step", {"step_id": "nope"}),
        ("rename_step", {"step_id": "nope", "name": "X"}),
        ("move_step", {"step_id": "nope", "position": 1}),
    ],
)
async def test_an_unknown_step_is_an_error_result_not_an_exception(
    name: str, arguments: dict[str, Any]
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", name, json.dumps(arguments)),)), ScriptedTurn(text="sorry")
    )

    edit = await WorkflowEditorAgent(chat, LoopSettings(), approval_required_tools=()).edit(RELEASE, "do it")

    (record,) = edit.tool_calls
    assert record.result == FunctionResultContent(
        "c1",
        {"error": "unknown_step", "message": "No step has that id. Call list_steps to see the step ids."},
        is_error=True,
    )
    assert edit.workflow == RELEASE


async def test_the_request_carries_the_workflow_the_instruction_and_the_five_tools() -> None:
    chat = ScriptedChat(ScriptedTurn(text="Nothing to do."))

    edit = await WorkflowEditorAgent(chat, LoopSettings(), approval_required_tools=()).edit(
        RELEASE, "Rename Build to Compile"
    )

    (request,) = chat.requests
    assert request.options is not None
    assert [spec.name for spec in request.options.tools] == [
        "list_steps",
        "add_step",
        "remove_step",
        "rename_step",
        "move_step",
    ]
    schemas = {spec.name: dict(spec.parameters) for spec in request.options.tools}
    assert schemas["list_steps"]["properties"] == {}
    assert schemas["add_step"]["required"] == ["name", "kind", "after"]
    assert schemas["move_step"]["properties"]["position"]["type"] == "integer"  # type: ignore[index]  # a schema mapping
    assert request.options.instructions is not None
    assert "list_steps" in request.options.instructions
    prompt = request.messages[0].text
    assert unframe(prompt, "workflow") == workflow_to_json(RELEASE)
    assert unframe(prompt, "instruction") == "Rename Build to Compile"
    assert edit.workflow is RELEASE
    assert edit.tool_calls == ()


async def test_a_failed_request_raises_with_the_run_so_far() -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "remove_step", '{"step_id": "build"}'),)),
        ResponseFailedError("overloaded", code="server_error"),
    )
    with pytest.raises(ResponseFailedError) as caught:
        await WorkflowEditorAgent(chat, LoopSettings(), approval_required_tools=()).edit(
            RELEASE, "remove build"
        )
    assert isinstance(caught.value, ToolRunError)
    assert caught.value.run.responses[0].function_calls[0].call_id == "c1"


@given(status=st.sampled_from(["completed", "incomplete", "in_progress", None]) | st.text(max_size=12))
async def test_an_edit_is_complete_unless_the_final_answer_is_incomplete(status: str | None) -> None:
    final = ChatResponse(
        messages=(ChatMessage.assistant("Removed the bu"),),
        status=status,
        finish_reason="length" if status == "incomplete" else "stop",
    )
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "remove_step", '{"step_id": "build"}'),)), final)

    edit = await WorkflowEditorAgent(chat, LoopSettings(), approval_required_tools=()).edit(
        RELEASE, "remove build"
    )

    assert edit.complete is (status != "incomplete")
    assert edit.text == "Removed the bu"
    assert [step.id for step in edit.workflow.steps] == ["freeze", "publish"]


async def test_scripted_edits_are_complete() -> None:
    edit = await WorkflowEditorAgent(ScriptedChat(ScriptedTurn(text="ok")), LoopSettings()).edit(RELEASE, "x")
    assert edit.complete is True
