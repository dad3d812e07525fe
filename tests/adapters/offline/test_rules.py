"""The offline model's reading rules: transcripts to items, instructions to workflow edits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.offline.rules import (
    ActionItem,
    Call,
    Decision,
    Meeting,
    describe_edit,
    numbered_lines,
    plan_edits,
    read_meeting,
    summary_text,
    tagged,
)
from application.meetings.grounding import transcript_lines
from application.meetings.summary import transcript_message
from application.workflows.editor import instruction_message
from domain import Workflow, WorkflowStep
from tests.application.strategies import hostile_texts
from tests.integration.offline.support import DECISIONS, EXAMPLES, STANDUP_ACTION_ITEMS
from tests.strategies import (
    offline_kinds,
    offline_new_names,
    offline_separators,
    offline_step_names,
    offline_utterances,
)


def release_workflow() -> Workflow:
    data = json.loads((EXAMPLES / "release-workflow.json").read_text())
    return Workflow(data["name"], tuple(WorkflowStep(**step) for step in data["steps"]))


# ---------------------------------------------------------------- the example transcript


def test_example_transcript_yields_every_participant_item_and_decision() -> None:
    meeting = read_meeting((EXAMPLES / "standup-transcript.txt").read_text())

    # Their order is the summary's, checked below.
    assert meeting.participants == ("Priya", "Tom", "Maya", "Alex", "Dev")
    assert set(meeting.action_items) == {
        ActionItem(i.owner, i.task, i.due, i.lines) for i in STANDUP_ACTION_ITEMS
    }
    assert meeting.decisions == tuple(Decision(d.text, d.lines) for d in DECISIONS)


def test_example_summary_names_everyone_and_every_item_with_owner_and_due() -> None:
    text = summary_text(read_meeting((EXAMPLES / "standup-transcript.txt").read_text()))

    assert text == (
        "Meeting with Priya, Tom, Maya, Alex and Dev (6 action items, 3 decisions).\n\n"
        "Decided: Ship 2.4 on Thursday without the new onboarding flow. "
        "Move the stand-up to 9:45 starting next week. "
        "Feature flags stay on in staging until the load test passes.\n\n"
        "Next steps: Tom will fix the flaky checkout test by Wednesday. "
        "Maya will update the release notes by Thursday noon. "
        "Dev will pair with Alex on the Android crash by end of day. "
        "Alex will ping the design team about the empty-state icons. "
        "Dev will rotate the staging database credentials by Friday. "
        "Priya will book the retro room for next Tuesday."
    )


# ---------------------------------------------------------------- single rules


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Ana: Ben will draft the budget by Friday.", ActionItem("Ben", "draft the budget", "Friday")),
        ("Ana: Ben will draft the budget.", ActionItem("Ben", "draft the budget", None)),
        ("Ana: action: Ben to send the invite", ActionItem("Ben", "send the invite", None)),
        ("Ana: Action item: Ben Ode to file it by 3 May", ActionItem("Ben Ode", "file it", "3 May")),
        ("Ana: I'll call the vendor by tomorrow.", ActionItem("Ana", "call the vendor", "tomorrow")),
        ("[12:05] Ana: I will test it by end of week.", ActionItem("Ana", "test it", "end of week")),
        ("Ana: Then Ben will ship it by EOD", ActionItem("Ben", "ship it", "EOD")),
        (
            "Ana: Ben will review the PR opened by Cleo",
            ActionItem("Ben", "review the PR opened by Cleo", None),
        ),
        ("Ana: Ben will fix it by Monday, unless it rains", ActionItem("Ben", "fix it", "Monday")),
    ],
)
def test_each_action_item_pattern(line: str, expected: ActionItem) -> None:
    assert read_meeting(line).action_items == (expected._replace(lines=(1,)),)


@pytest.mark.parametrize(
    "line",
    [
        "Ana: It will rain all week.",
        "Ana: I'll be honest, no idea.",
        "Ana: I'll admit the coffee is better.",
        "Ana: the printer will outlive us all.",
        "Ana: Ben will you take this one?",
        "Ana: I'll do it?",
        "Ana: We should decide on the logo someday.",
        "Ana: Maybe we'll decide next week.",
    ],
)
def test_chit_chat_and_questions_are_not_items(line: str) -> None:
    assert read_meeting(line) == Meeting(participants=("Ana",))


@pytest.mark.parametrize(
    ("line", "decision"),
    [
        ("Ana: So we decided to keep the old API.", "Keep the old API"),
        ("Ana: We agreed that the demo moves to May.", "The demo moves to May"),
        ("Ana: we've agreed on blue", "Blue"),
        ("Ana: Decision: no deploys on Friday!", "No deploys on Friday"),
    ],
)
def test_each_decision_pattern(line: str, decision: str) -> None:
    assert read_meeting(line).decisions == (Decision(decision, (1,)),)


@pytest.mark.parametrize(
    ("line", "speaker"),
    [
        ("Zoë Ólafsdóttir: I'll check.", "Zoë Ólafsdóttir"),
        ("(00:01:02) Anne-Marie O'Neil: I'll check.", "Anne-Marie O'Neil"),
        ("00:01 Speaker 2: I'll check.", "Speaker 2"),
        ("[1:02:03] Dee: I'll check.", "Dee"),
    ],
)
def test_speaker_lines_in_common_transcript_formats(line: str, speaker: str) -> None:
    assert read_meeting(line) == Meeting((speaker,), (ActionItem(speaker, "check", None, (1,)),))


def test_a_line_without_a_speaker_still_yields_items_but_not_participants() -> None:
    meeting = read_meeting(
        "Notes from today\nAction: Ben to book the room\nI'll ignore this without a speaker"
    )

    assert meeting == Meeting(participants=(), action_items=(ActionItem("Ben", "book the room", None, (2,)),))


def test_summary_of_an_empty_meeting_still_reads_well() -> None:
    assert summary_text(Meeting()) == "Meeting (0 action items, 0 decisions)."
    assert summary_text(Meeting(("Ana",), (ActionItem("Ana", "x"),))) == (
        "Meeting with Ana (1 action item, 0 decisions).\n\nNext steps: Ana will x."
    )


def test_tagged_input_is_read_from_inside_its_tags() -> None:
    assert tagged("Summarize this.\n\n<transcript>\nAna: hi\n</transcript>", "transcript") == "Ana: hi"
    # Tags not written the way the pipelines frame text are just text.
    assert tagged("<transcript>Ana: hi</transcript>", "transcript") == "<transcript>Ana: hi</transcript>"
    assert tagged("Ana: hi", "transcript") == "Ana: hi"


def test_framed_entities_read_as_the_characters_they_stand_for() -> None:
    framed = "<transcript>\nAna: R&amp;D &lt;3 &amp;lt; &gt;\n</transcript>"
    assert tagged(framed, "transcript") == "Ana: R&D <3 &lt; >"


@given(hostile_texts)
def test_the_offline_model_reads_back_exactly_the_transcript_the_pipeline_framed(transcript: str) -> None:
    expected = tuple(enumerate(transcript_lines(transcript), 1))
    assert numbered_lines(transcript_message(transcript), "transcript") == expected


def test_a_later_decision_that_says_instead_replaces_the_one_it_reverses() -> None:
    meeting = read_meeting(
        "Ana: We decided to ship the release on Friday.\nBen: Friday is risky.\n"
        "Ana: We decided to ship the release on Monday instead.\nAna: Decision: no demo this week."
    )
    assert meeting.decisions == (
        Decision("Ship the release on Monday instead", (3,)),
        Decision("No demo this week", (4,)),
    )


@given(instruction=hostile_texts, name=hostile_texts)
def test_the_offline_model_reads_back_exactly_the_instruction_the_pipeline_framed(
    instruction: str, name: str
) -> None:
    workflow = Workflow(name, (WorkflowStep("s1", name, name),))
    assert tagged(instruction_message(workflow, instruction), "instruction") == instruction


# ---------------------------------------------------------------- workflow edits


def test_several_clauses_become_edits_in_order_against_the_evolving_workflow() -> None:
    instruction = (
        'add a step "Smoke test" of kind test after Build release candidate and remove manual QA sign-off, '
        "rename Announce in #releases to Announce on Slack; move the smoke test step to position 2"
    )
    edits, skipped = plan_edits(instruction, release_workflow())

    assert edits == (
        Call("add_step", {"name": "Smoke test", "kind": "test", "after": "step-2"}),
        Call("remove_step", {"step_id": "step-4"}),
        Call("rename_step", {"step_id": "step-6", "name": "Announce on Slack"}),
        Call("move_step", {"step_id": "step-7", "position": 2}),
    )
    assert skipped == ()


@pytest.mark.parametrize(
    ("instruction", "edit"),
    [
        (
            "Add a step called Staged rollout",
            Call("add_step", {"name": "Staged rollout", "kind": "task", "after": None}),
        ),
        (
            "insert a new step Staged rollout before Publish to app stores",
            Call("add_step", {"name": "Staged rollout", "kind": "task", "after": "step-4"}),
        ),
        (
            "append step Tag it at the end",
            Call("add_step", {"name": "Tag it", "kind": "task", "after": None}),
        ),
        ("delete step-3", Call("remove_step", {"step_id": "step-3"})),
        ("move announce to the top", Call("move_step", {"step_id": "step-6", "position": 1})),
        ("Move the freeze step to the end.", Call("move_step", {"step_id": "step-1", "position": 6})),
        (
            "then move Publish to app stores to position #3",
            Call("move_step", {"step_id": "step-5", "position": 3}),
        ),
    ],
)
def test_each_edit_form(instruction: str, edit: Call) -> None:
    assert plan_edits(instruction, release_workflow()) == ((edit,), ())


@pytest.mark.parametrize(
    "instruction",
    [
        "remove the deploy-to-mars step",
        "rename Nothing Here to Something",
        "move Ghost to position 2",
        "add a step X after Ghost",
        "add a step X before Freeze the release branch",
        "remove step",
    ],
)
def test_edits_naming_unknown_steps_are_reported_not_guessed(instruction: str) -> None:
    assert plan_edits(instruction, release_workflow()) == ((), (instruction,))


def test_an_ambiguous_partial_name_is_not_guessed() -> None:
    workflow = Workflow(
        "w", (WorkflowStep("a", "Deploy web", "deploy"), WorkflowStep("b", "Deploy app", "deploy"))
    )

    assert plan_edits("remove deploy", workflow) == ((), ("remove deploy",))
    assert plan_edits("remove deploy app", workflow) == ((Call("remove_step", {"step_id": "b"}),), ())


def test_text_without_any_edit_verb_is_neither_an_edit_nor_reported() -> None:
    assert plan_edits("Please be careful with the release workflow.", release_workflow()) == ((), ())


def test_step_names_containing_and_are_not_split() -> None:
    workflow = Workflow("w", (WorkflowStep("s1", "Build and test", "build"),))

    assert plan_edits("rename Build and test to Build", workflow) == (
        (Call("rename_step", {"step_id": "s1", "name": "Build"}),),
        (),
    )


def test_describe_names_steps_by_their_old_names() -> None:
    names = {"step-2": "Build release candidate", "step-4": "Manual QA sign-off"}

    assert describe_edit(Call("add_step", {"name": "S", "kind": "test", "after": "step-2"}), names) == (
        "added 'S' (test) after 'Build release candidate'"
    )
    assert describe_edit(Call("add_step", {"name": "S", "kind": "task", "after": None}), names) == (
        "added 'S' (task) at the end"
    )
    assert describe_edit(Call("remove_step", {"step_id": "step-4"}), names) == "removed 'Manual QA sign-off'"
    assert describe_edit(Call("rename_step", {"step_id": "step-9", "name": "N"}), names) == (
        "renamed 'step-9' to 'N'"
    )
    assert describe_edit(Call("move_step", {"step_id": "step-2", "position": 1}), names) == (
        "moved 'Build release candidate' to position 1"
    )
    assert describe_edit(Call("remove_step", {"step_id": "step-4"}), names, done=False) == (
        "remove 'Manual QA sign-off'"
    )
    assert describe_edit(
        Call("add_step", {"name": "S", "kind": "task", "after": None}), names, done=False
    ) == ("add 'S' (task) at the end")


# ---------------------------------------------------------------- properties


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
        ActionItem(planted[0], planted[1], planted[2], (n,))
        for n, (_, _, planted) in enumerate(utterances, 1)
        if isinstance(planted, tuple)
    )
    assert meeting.decisions == tuple(
        Decision(planted, (n,)) for n, (_, _, planted) in enumerate(utterances, 1) if isinstance(planted, str)
    )


@given(st.lists(offline_utterances(), max_size=12))
def test_the_summary_states_every_action_item_so_it_reads_back_the_same(
    utterances: list[tuple[str, str, Any]],
) -> None:
    meeting = read_meeting("\n".join(f"{speaker}: {sentence}" for speaker, sentence, _ in utterances))

    again = read_meeting(summary_text(meeting)).action_items
    assert [item[:3] for item in again] == [item[:3] for item in meeting.action_items]


@given(st.text())
def test_reading_any_text_never_raises(text: str) -> None:
    assert isinstance(read_meeting(text), Meeting)
    workflow = Workflow("w", (WorkflowStep("s1", "Build app", "build"),))
    edits, _ = plan_edits(text, workflow)
    assert all(isinstance(edit, Call) for edit in edits)


def apply(workflow: Workflow, edit: Call) -> Workflow:
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
