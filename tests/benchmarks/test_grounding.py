"""The grounding evaluation: its meetings are labelled truly, and its figures are what the rule gives."""

from __future__ import annotations

import random

from application.meetings.grounding import content_words
from application.meetings.language import transcript_language
from benchmarks.grounding import (
    DUES,
    cross_language_figures,
    evaluate,
    hallucinated_calls,
    meetings,
    near_miss_figures,
    refusals,
    render,
    said_due,
)
from benchmarks.languages import german_meetings, japanese_meetings
from benchmarks.near_misses import NEAR_MISSES, PARAPHRASES, paraphrases_and_near_misses


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
    assert 0 < items["matched"] <= items["found"]
    assert items["precision"] == items["matched"] / items["found"]
    assert figures["hallucinating_model"]["ungrounded_refused_share"] == 1.0
    shown = render(figures)
    assert "synthetic meetings" in shown
    assert "| negated | refused |" in shown
    assert "| English summary of Japanese meetings (8 meetings) |" in shown


# ---------------------------------------------------------------- near misses, other languages

NEAR_MISS_TARGET = 0.99
PARAPHRASE_TARGET = 0.95
CROSS_LANGUAGE_TARGET = 0.99


async def test_near_misses_are_refused_and_fair_paraphrases_recorded_kind_by_kind() -> None:
    figures = await near_miss_figures(meetings())
    kinds = figures["kinds"]
    assert set(NEAR_MISSES) | set(PARAPHRASES) | {"true"} == set(kinds)
    for kind in NEAR_MISSES:
        assert kinds[kind]["grounded"] is False
        assert kinds[kind]["calls"] > 20, kind
        assert kinds[kind]["share"] >= NEAR_MISS_TARGET, (kind, kinds[kind])
    for kind in (*PARAPHRASES, "true"):
        assert kinds[kind]["grounded"] is True
        assert kinds[kind]["calls"] > 20, kind
        assert kinds[kind]["share"] >= PARAPHRASE_TARGET, (kind, kinds[kind])
    assert figures["near_misses"]["share"] >= NEAR_MISS_TARGET
    assert figures["near_misses"]["calls"] == sum(kinds[kind]["calls"] for kind in NEAR_MISSES)


def test_each_near_miss_changes_the_item_and_each_paraphrase_keeps_its_words() -> None:
    rng = random.Random(3)  # noqa: S311 - a seeded draw of test cases, not a secret
    meeting = meetings()[0]
    items = [(item.owner, item.task, item.lines, said_due(meeting, item)) for item in meeting.items]
    decisions = [(decision.text, decision.lines) for decision in meeting.decisions]
    calls = paraphrases_and_near_misses(items, decisions, meeting.lines, DUES, rng)
    originals = {tuple(call.arguments["lines"]): call.arguments for call in calls if call.kind == "true"}
    for call in calls:
        true = originals[tuple(call.arguments["lines"])]
        if call.kind != "true":
            assert call.arguments != true, call
        if call.kind in PARAPHRASES and call.kind != "due written another way":
            text = str(call.arguments.get("task", call.arguments.get("decision")))
            said = str(true.get("task", true.get("decision")))
            owner = [call.arguments["owner"]] if "owner" in call.arguments else []
            assert content_words(text, names=owner) <= content_words(said), (call.kind, text, said)


async def test_across_languages_the_hallucinating_model_is_refused_and_true_calls_recorded() -> None:
    figures = await cross_language_figures(meetings(8), others=4)
    assert set(figures) == {
        "French summary of English meetings",
        "English summary of German meetings",
        "English summary of Japanese meetings",
    }
    for title, across in figures.items():
        assert across["ungrounded_refused"]["calls"] > 50, title
        assert across["ungrounded_refused"]["share"] >= CROSS_LANGUAGE_TARGET, (title, across["kinds"])
        assert across["true_recorded"]["share"] >= CROSS_LANGUAGE_TARGET, (title, across["kinds"])


def test_the_german_and_japanese_meetings_are_in_their_language_and_labelled_by_what_was_said() -> None:
    for labelled, language in ((german_meetings(), "de"), (japanese_meetings(), "ja")):
        assert labelled == (german_meetings() if language == "de" else japanese_meetings())
        for meeting in labelled:
            assert transcript_language(meeting.lines) == language
            for item in meeting.items:
                assert any(item.owner in meeting.lines[n - 1] for n in item.lines)
