"""Properties of the offline model's rules on generated transcripts, instructions and arbitrary text."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.offline.rules import ActionItem, Edit, Meeting, plan_edits, read_meeting, summary_text
from adapters.offline.turns import ModelRequest, respond
from domain import Workflow, WorkflowStep
from tests.strategies import (
    offline_kinds,
    offline_new_names,
    offline_separators,
    offline_step_names,
    offline_utterances,
)


@given(st.lists(offline_utterances(), max_size=12), st.booleans())
def test_generated_transcripts_yield_exactly_the_planted_items(
    utterances: list[tuple[str, str, Any]], stamped: bool
) -> None:
    lines = [
        (f"[{index // 60:02d}:{index % 60:02d}] " if stamped else "") + f"{speaker}: {sentence}"
        for index, (speaker, sentence, _) in enumerate(utterances)
    ]

    meeting = read_meeting("\n".join(lines))

    assert meeting.participants == tuple(dict.fromkeys(speaker for speaker, _, _ in utterances))
    assert meeting.action_items == tuple(
        ActionItem(*planted) for _, _, planted in utterances if isinstance(planted, tuple)
    )
    assert meeting.decisions == tuple(planted for _, _, planted in utterances if isinstance(planted, str))


@given(st.lists(offline_utterances(), max_size=12))
def test_the_summary_states_every_action_item_so_it_reads_back_the_same(
    utterances: list[tuple[str, str, Any]],
) -> None:
    meeting = read_meeting("\n".join(f"{speaker}: {sentence}" for speaker, sentence, _ in utterances))

    assert read_meeting(summary_text(meeting)).action_items == meeting.action_items


@given(st.text())
def test_reading_any_text_never_raises(text: str) -> None:
    assert isinstance(read_meeting(text), Meeting)
    workflow = Workflow("w", (WorkflowStep("s1", "Build app", "build"),))
    edits, _ = plan_edits(text, workflow)
    assert all(isinstance(edit, Edit) for edit in edits)


@given(st.text(), st.sampled_from([(), ("record_decision",), ("list_steps", "remove_step")]))
def test_the_model_answers_any_text_with_a_turn(text: str, tools: tuple[str, ...]) -> None:
    body = {
        "model": "offline",
        "input": [{"role": "user", "content": text}],
        "tools": [{"type": "function", "name": name} for name in tools],
    }

    turn = respond(ModelRequest.from_body(body), malformed=True)

    assert turn.items
    assert turn.usage.total_tokens >= turn.usage.output_tokens > 0


def apply(workflow: Workflow, edit: Edit) -> Workflow:
    args: dict[str, Any] = dict(edit.arguments)
    if edit.name == "add_step":
        return workflow.add_step(args["name"], args["kind"], args["after"])[0]
    if edit.name == "remove_step":
        return workflow.remove_step(args["step_id"])
    if edit.name == "rename_step":
        return workflow.rename_step(args["step_id"], args["name"])
    return workflow.move_step(args["step_id"], args["position"])


@st.composite
def edit_scripts(draw: st.DrawFn) -> tuple[Workflow, str, Workflow]:
    """A workflow, an instruction of several clauses, and the workflow those clauses describe."""
    names = draw(st.lists(offline_step_names, min_size=1, max_size=6, unique=True))
    workflow = Workflow(
        "w", tuple(WorkflowStep(f"step-{n}", name, "task") for n, name in enumerate(names, 1))
    )
    fresh = iter(draw(st.permutations(["Smoke test", "Canary", "Backup db", "Sign binaries", "Warm cache"])))
    expected = workflow
    clauses: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(["add", "remove", "rename", "move"] if expected.steps else ["add"]))
        target = draw(st.sampled_from(expected.steps)) if expected.steps else None
        if kind == "add" or target is None:
            name = next(fresh, None) or draw(offline_new_names.filter(lambda n: n not in names))
            if any(step.name == name for step in expected.steps):
                continue
            step_kind = draw(offline_kinds)
            if target is not None and draw(st.booleans()):
                clauses.append(f"add a step {name} of kind {step_kind} after {target.name}")
                expected = expected.add_step(name, step_kind, target.id)[0]
            else:
                clauses.append(f'add a new step called "{name}" of kind {step_kind}')
                expected = expected.add_step(name, step_kind)[0]
        elif kind == "remove":
            clauses.append(draw(st.sampled_from([f"remove {target.name}", f"delete the {target.name} step"])))
            expected = expected.remove_step(target.id)
        elif kind == "rename":
            new = next(fresh, None)
            if new is None or any(step.name == new for step in expected.steps):
                continue
            clauses.append(f"rename {target.name} to {new}")
            expected = expected.rename_step(target.id, new)
        else:
            position = draw(st.integers(min_value=1, max_value=len(expected.steps)))
            clauses.append(f"move {target.name} to position {position}")
            expected = expected.move_step(target.id, position)
    instruction = ""
    for index, clause in enumerate(clauses):
        instruction += (draw(offline_separators) if index else "") + clause
    return workflow, instruction, expected


@given(edit_scripts())
def test_instructions_become_the_edits_they_describe(script: tuple[Workflow, str, Workflow]) -> None:
    workflow, instruction, expected = script

    edits, skipped = plan_edits(instruction, workflow)
    for edit in edits:
        workflow = apply(workflow, edit)

    assert skipped == ()
    assert workflow == expected
    assert all(json.dumps(dict(edit.arguments)) for edit in edits)
