"""Evaluating summaries: labels matched by owner and task, refusals counted, and a judge's scores."""

from __future__ import annotations

import json

import pytest

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import ActionItem, Decision, LoopSettings, SummaryAgent, ToolLoop
from application.meetings.evaluation import (
    DatasetError,
    ExpectedItem,
    Judge,
    LabelledMeeting,
    Score,
    evaluate,
    labelled_meeting,
    same_task,
    score_action_items,
    score_decisions,
)
from domain import ChatTransportError, Usage

TRANSCRIPT = """\
Ann: Let's start with the release.
Bob Smith: The build is red again.
Chen: I will fix the build by Friday.
Ann: Agreed: we ship on Monday.
"""
CHEN_FIXES = '{"owner": "Chen", "task": "Fix the build", "due": "Friday", "lines": [3]}'
BOB_CHECKS = '{"owner": "Bob Smith", "task": "Check the build", "due": null, "lines": [2]}'
SHIP = '{"decision": "Ship on Monday.", "lines": [4]}'


def _summary_turns() -> tuple[ScriptedTurn, ...]:
    return (
        ScriptedTurn(
            calls=(
                ("c1", "record_action_item", CHEN_FIXES),
                ("c2", "record_decision", SHIP),
                ("c3", "record_action_item", BOB_CHECKS),
            ),
            usage=Usage(100, 10, 110),
        ),
        ScriptedTurn(text="Chen fixes the build; the team ships Monday.", usage=Usage(200, 20, 220)),
    )


MEETING = LabelledMeeting(
    name="standup",
    transcript=TRANSCRIPT,
    action_items=(ExpectedItem("chen", "fix the build"),),
    decisions=("ship on Monday",),
)


def test_a_found_item_matches_a_label_of_the_same_owner_and_task_once() -> None:
    expected = (ExpectedItem("Chen", "fix the build"), ExpectedItem("Ann", "write the notes"))
    found = (
        ActionItem("CHEN", "Fix the broken build", None, (3,)),
        ActionItem("Chen", "fix the build", None, (3,)),  # a second find of the same label
        ActionItem("Ann", "fix the build", None, (1,)),  # the right task, the wrong owner
    )
    assert score_action_items(expected, found) == Score(matched=1, found=3, labelled=2)


def test_decisions_match_by_what_they_say() -> None:
    score = score_decisions(("ship on Monday", "hire a designer"), (Decision("We ship on Monday.", (4,)),))
    assert (score.precision, score.recall) == (1.0, 0.5)
    assert not same_task("ship on Monday", "hire a designer in March")


def test_scores_of_nothing_found_or_labelled_are_not_divisions_by_zero() -> None:
    assert Score(0, 0, 3).precision == 1.0
    assert Score(0, 2, 0).recall == 1.0
    assert Score(1, 2, 4) + Score(1, 1, 1) == Score(2, 3, 5)


async def test_an_evaluation_scores_each_meeting_and_counts_refused_calls() -> None:
    agent = SummaryAgent(ScriptedChat(*_summary_turns()), LoopSettings())

    evaluation = await evaluate([MEETING], agent)

    (meeting,) = evaluation.meetings
    assert meeting.action_items == Score(1, 1, 1)
    assert meeting.decisions == Score(1, 1, 1)
    # Bob is named as the speaker of line 2 but takes nothing on: the model's third call is refused.
    assert (meeting.calls, meeting.ungrounded) == (3, 1)
    assert evaluation.ungrounded_share == pytest.approx(1 / 3)
    assert (meeting.requests, meeting.input_tokens, meeting.output_tokens) == (2, 300, 30)
    assert meeting.cost_usd is None
    assert evaluation.total("cost_usd") is None


async def test_a_labelled_item_no_one_said_lowers_recall_by_exactly_its_share() -> None:
    agent = SummaryAgent(ScriptedChat(*_summary_turns(), *_summary_turns()), LoopSettings())
    padded = LabelledMeeting(
        MEETING.name,
        TRANSCRIPT,
        (*MEETING.action_items, ExpectedItem("Ann", "order the cake")),
        MEETING.decisions,
    )

    honest, with_fake = (await evaluate([MEETING], agent)), (await evaluate([padded], agent))

    labelled = honest.action_items.labelled
    assert with_fake.action_items.recall == honest.action_items.recall * labelled / (labelled + 1)
    assert with_fake.action_items.precision == honest.action_items.precision


async def test_a_failed_run_scores_as_finding_nothing_unless_its_error_is_fatal() -> None:
    failure = ChatTransportError("the gateway is down", status_code=503, attempts=3)
    evaluation = await evaluate([MEETING], SummaryAgent(ScriptedChat(failure), LoopSettings()))
    (meeting,) = evaluation.meetings
    assert meeting.action_items == Score(0, 0, 1)
    assert meeting.error is not None
    assert "the gateway is down" in meeting.error
    assert not meeting.complete

    with pytest.raises(ChatTransportError):
        await evaluate(
            [MEETING], SummaryAgent(ScriptedChat(failure), LoopSettings()), fatal=(ChatTransportError,)
        )


async def test_a_judge_scores_through_the_guarded_loop() -> None:
    scores = json.dumps({"completeness": 4, "faithfulness": 5, "reason": "Both items are there."})
    judge_chat = ScriptedChat(
        ScriptedTurn(
            calls=(("j1", "record_scores", '{"completeness": 9, "faithfulness": 5, "reason": "x"}'),)
        ),
        ScriptedTurn(calls=(("j2", "record_scores", scores),)),
        ScriptedTurn(text="Scored."),
    )
    judge = Judge(ToolLoop(judge_chat, LoopSettings()), "judge-model")

    evaluation = await evaluate(
        [MEETING], SummaryAgent(ScriptedChat(*_summary_turns()), LoopSettings()), judge
    )

    judged = evaluation.meetings[0].judgement
    assert judged is not None
    assert (judged.completeness, judged.faithfulness) == (4, 5)
    first = judge_chat.requests[0]
    assert first.options is not None
    assert first.options.model == "judge-model"
    assert "Chen: Fix the build" in first.messages[0].text
    # The out-of-range score was refused by the guard's parameter check, never recorded.
    second_input = judge_chat.requests[1].messages
    assert "invalid_tool_arguments" in json.dumps([str(m) for m in second_input])


async def test_a_judge_that_records_nothing_gives_no_scores() -> None:
    judge = Judge(
        ToolLoop(ScriptedChat(ScriptedTurn(text="Looks fine to me.")), LoopSettings()), "judge-model"
    )
    evaluation = await evaluate(
        [MEETING], SummaryAgent(ScriptedChat(*_summary_turns()), LoopSettings()), judge
    )
    assert evaluation.meetings[0].judgement is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([], "expected an object"),
        ({"transcript": ""}, "transcript: expected a non-empty string"),
        ({"transcript": "Ann: hi", "action_items": [{"owner": "Ann"}]}, r"action_items\[0\]\.task"),
        ({"transcript": "Ann: hi", "decisions": "ship"}, "decisions: expected a list"),
        ({"transcript": "Ann: hi", "decisions": [3]}, r"decisions\[0\]"),
    ],
)
def test_a_labelled_meeting_that_cannot_be_read_names_its_field(value: object, problem: str) -> None:
    with pytest.raises(DatasetError, match=problem):
        labelled_meeting(value, name="m")


def test_a_labelled_meeting_reads_its_labels() -> None:
    meeting = labelled_meeting(
        {
            "transcript": TRANSCRIPT,
            "action_items": [{"owner": "Chen", "task": "fix the build"}],
            "decisions": ["ship"],
        },
        name="line-1",
    )
    assert meeting == LabelledMeeting(
        "line-1", TRANSCRIPT, (ExpectedItem("Chen", "fix the build"),), ("ship",)
    )


CAPTIONS = """\
WEBVTT

1
00:00:01.000 --> 00:00:03.000
<v Ann>Let's start with the release.</v>

2
00:00:04.000 --> 00:00:06.000
<v Chen>I will fix the build by Friday.</v>
"""


def test_a_labelled_meeting_in_captions_is_imported_with_its_times() -> None:
    meeting = labelled_meeting({"transcript": CAPTIONS, "action_items": [], "decisions": []}, name="m")
    assert not isinstance(meeting.transcript, str)
    assert [line.speaker for line in meeting.transcript.lines] == ["Ann", "Chen"]
    assert meeting.text.splitlines()[1] == "[00:04] Chen: I will fix the build by Friday."
    with pytest.raises(DatasetError, match="transcript: "):
        labelled_meeting({"transcript": CAPTIONS.replace("00:00:04.000", "00:00:0x")}, name="m")
    with pytest.raises(DatasetError, match="format: expected one of"):
        labelled_meeting({"transcript": CAPTIONS, "format": "docx"}, name="m")


async def test_a_meeting_in_captions_is_evaluated_on_its_imported_lines() -> None:
    meeting = labelled_meeting(
        {"transcript": CAPTIONS, "action_items": [{"owner": "Chen", "task": "fix the build"}]}, name="m"
    )
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "record_action_item", CHEN_FIXES.replace("[3]", "[2]")),)),
        ScriptedTurn(text="Chen fixes the build."),
    )
    evaluation = await evaluate([meeting], SummaryAgent(chat, LoopSettings()))
    assert evaluation.meetings[0].action_items == Score(1, 1, 1)
    assert "[00:04] Chen: I will fix the build by Friday." in chat.requests[0].messages[-1].text
