"""The grounding evaluation: its meetings are labelled truly, and its figures are what the rule gives."""

from __future__ import annotations

import random

from application.grounding import content_words
from benchmarks.grounding import evaluate, hallucinated_calls, meetings, refusals, render


def test_the_meetings_are_twenty_or_more_the_same_each_time_and_their_labels_point_at_what_was_said() -> None:
    generated = meetings()
    assert len(generated) >= 20
    assert generated == meetings()
    for meeting in generated:
        for item in meeting.items:
            said = " ".join(meeting.lines[n - 1] for n in item.lines)
            assert item.owner in said
            assert content_words(item.task) <= content_words(said)
        for decision in meeting.decisions:
            said = " ".join(meeting.lines[n - 1] for n in decision.lines)
            assert content_words(decision.text) <= content_words(said)


async def test_a_hallucinating_model_gets_every_ungrounded_call_refused_and_every_true_one_recorded() -> None:
    rng = random.Random(7)  # noqa: S311 - a seeded draw of test cases, not a secret
    for meeting in meetings(20):
        calls, true = hallucinated_calls(meeting, rng)
        assert len(calls) > true > 0
        checked = await refusals(meeting, random.Random(7))  # noqa: S311 - a seeded draw of test cases
        assert checked.ungrounded_refused == checked.ungrounded
        assert checked.true_accepted == checked.true


async def test_the_stand_in_is_scored_end_to_end() -> None:
    figures = await evaluate(count=2)
    items = figures["stand_in"]["items"]
    assert figures["meetings"] == 2
    assert 0 < items["true_positives"] <= items["predicted"]
    assert items["precision"] == items["true_positives"] / items["predicted"]
    assert figures["hallucinating_model"]["ungrounded_refused_share"] == 1.0
    assert "synthetic meetings" in render(figures)
