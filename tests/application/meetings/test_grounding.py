"""The grounding rule: an item is recorded if and only if the lines it cites show it."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import ActionItem, Decision, LoopSettings, SummaryAgent
from application.meetings.grounding import Grounding, UngroundedError, transcript_lines
from tests.application.strategies import DUE_SPELLINGS, UNSAID_WORDS, Commitment, commitments
from tests.support.examples import examples


def grounding(transcript: str) -> Grounding:
    return Grounding(transcript_lines(transcript))


def refused(call: object) -> str:
    """The message of the ``ungrounded`` answer a rule gives (the call is a thunk)."""
    assert callable(call)
    with pytest.raises(UngroundedError) as caught:
        call()
    assert caught.value.code == "ungrounded"
    return caught.value.message


# ---------------------------------------------------------------- the tricky cases


PRONOUN = (
    "Priya: Tom found the cause of the outage.\nPriya: He will write the postmortem by Friday.\nTom: Yes."
)


def test_an_owner_named_only_by_a_pronoun_needs_the_line_that_names_them() -> None:
    check = grounding(PRONOUN)
    assert "neither speaks in nor is named" in refused(
        lambda: check.action_item("Tom", "Write the postmortem", [2])
    )
    assert check.action_item("Tom", "Write the postmortem", [1, 2]) == ("Tom", (1, 2))
    # "He" binds only whom the cited lines name: Priya is named nowhere, and speaking is not "he".
    assert "do not show them taking the task on" in refused(
        lambda: check.action_item("Priya", "Write the postmortem", [1, 2])
    )


def test_an_owner_mentioned_but_not_committing_is_refused() -> None:
    check = grounding(
        "Ana: Ben said the invoice is wrong.\nBen: I'll fix the invoice today.\nCleo: Ben, fix it?"
    )
    assert "does not show them taking the task on" in refused(
        lambda: check.action_item("Ben", "Fix the invoice", [1])
    )
    assert "does not show" in refused(lambda: check.action_item("Ben", "Fix the invoice", [3]))
    assert check.action_item("Ben", "Fix the invoice", [2]) == ("Ben", (2,))
    assert check.action_item("ben", "fixing invoices", [1, 2]) == ("Ben", (1, 2))


SAME_FIRST_NAME = (
    "Ana Souza: Morning.\nAna Lima: Morning, all.\nAna Lima: I'll send the deck tonight.\n"
    "Ben: Souza will book the flights.\n"
)


def test_two_people_with_the_same_first_name_are_told_apart_or_refused() -> None:
    check = grounding(SAME_FIRST_NAME)
    assert "fits more than one participant (Ana Souza, Ana Lima)" in refused(
        lambda: check.action_item("Ana", "Send the deck", [3])
    )
    assert check.action_item("ana lima", "Send the deck", [3]) == ("Ana Lima", (3,))
    assert check.action_item("Lima", "Send the deck", [3]) == ("Ana Lima", (3,))
    assert "neither speaks" in refused(lambda: check.action_item("Ana Souza", "Send the deck", [3]))
    # "Souza" alone names only Ana Souza; a bare "Ana" in a line would name neither.
    assert check.action_item("Ana Souza", "Book the flights", [4]) == ("Ana Souza", (4,))


REVERSED = (
    "Ana: We decided to ship the release on Friday.\nBen: Friday clashes with the audit.\n"
    "Ana: Then we decided to ship the release on Monday instead.\n"
)


def test_a_decision_reversed_later_cites_the_later_line() -> None:
    check = grounding(REVERSED)
    assert check.decision("Ship the release on Monday", [3]) == (3,)
    assert "line 1 does not say monday" in refused(lambda: check.decision("Ship the release on Monday", [1]))
    assert "Most words of the decision" in refused(lambda: check.decision("Ship on Monday", [2]))
    assert "shows nothing" in refused(lambda: check.decision("Ship the release on Monday", [2, 3]))


async def test_the_pipeline_records_the_reversed_decision_with_the_later_line_only() -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(
                ("c1", "record_decision", '{"decision": "Ship the release on Monday", "lines": [1]}'),
                ("c2", "record_decision", '{"decision": "Ship the release on Monday", "lines": [3]}'),
            )
        ),
        ScriptedTurn(text="Shipping Monday."),
    )
    summary = await SummaryAgent(chat, LoopSettings()).summarize(REVERSED)
    assert summary.decisions == (Decision("Ship the release on Monday", (3,)),)
    assert [record.result.is_error for record in summary.tool_calls] == [True, False]


@pytest.mark.parametrize(
    ("transcript", "owner", "task", "lines", "recorded"),
    [
        (
            "José Núñez: I'll translate the menu by Friday.",
            "Jose Nunez",
            "Translate the menu",
            [1],
            "José Núñez",
        ),
        ("ZOË: I will review the résumé.", "zoe", "Review the resume", [1], "ZOË"),
        ("王伟: I'll prepare the quarterly report.", "王伟", "Prepare the quarterly report", [1], "王伟"),
        ("Ana: 李娜 will review the contract.", "李娜", "Review the contract", [1], "李娜"),
        ("李娜：我会准备季度报告。", "李娜", "准备季度报告", [1], "李娜"),  # noqa: RUF001 - a Chinese colon on purpose
        ("Ana: Ben’ll draft the budget.", "Ben", "Draft the budget", [1], "Ben"),  # noqa: RUF001 - a curly apostrophe on purpose
    ],
)
def test_text_in_other_scripts_accents_and_cjk_names(
    transcript: str, owner: str, task: str, lines: list[int], recorded: str
) -> None:
    assert grounding(transcript).action_item(owner, task, lines) == (recorded, tuple(lines))


def test_cjk_names_are_still_people_not_any_characters() -> None:
    check = grounding("王伟: I'll prepare the quarterly report.")
    assert "neither speaks" in refused(lambda: check.action_item("李娜", "Prepare the quarterly report", [1]))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "No lines were cited"),
        ([0], "line 0 is not in the transcript (it has lines 1 to 3)"),
        ([4, 9], "lines 4, 9 are not in the transcript"),
    ],
)
def test_empty_and_out_of_range_citations_are_refused(lines: list[int], message: str) -> None:
    assert message in refused(lambda: grounding(PRONOUN).action_item("Tom", "Write the postmortem", lines))


def test_a_chunk_checks_its_own_lines_under_their_numbers_in_the_whole_file() -> None:
    check = Grounding(["Tom: I'll fix the build."], first=1201, participants=("Ana", "Tom"))
    assert check.action_item("Tom", "Fix the build", [1201]) == ("Tom", (1201,))
    assert "line 1 is not in the transcript (it has lines 1201 to 1201)" in refused(
        lambda: check.action_item("Tom", "Fix the build", [1])
    )


# ---------------------------------------------------------------- the property

# Generated meetings are built from lines whose meaning is known by construction, so the expected verdict
# of any call comes from how the meeting was written, not from the rule under test.
PEOPLE = ("Ana", "Ben", "Chen", "Dee")
TASKS = ("draft the budget", "book the venue", "fix the login bug", "email the auditors", "order new laptops")
DECISIONS = ("move the launch to June", "freeze the public API", "hire a second designer")


@attrs.frozen
class Line:
    """A generated line: who says it, what it says, and what it shows."""

    text: str
    commits: tuple[str, str] | None = None  # (owner, task) this line shows someone taking on
    decides: str | None = None
    mentions: tuple[str, ...] = ()  # people named, not committing
    about: str | None = None  # a task or decision spoken of, nobody taking it on


@st.composite
def meeting_lines(draw: st.DrawFn) -> Line:
    speaker, other = draw(st.sampled_from(PEOPLE)), draw(st.sampled_from(PEOPLE))
    task, decision = draw(st.sampled_from(TASKS)), draw(st.sampled_from(DECISIONS))
    kind = draw(st.sampled_from(["mine", "assigned", "decided", "mention", "question", "filler"]))
    if kind == "mine":
        return Line(f"{speaker}: I'll {task}.", commits=(speaker, task))
    if kind == "assigned":
        return Line(f"{speaker}: {other} will {task}.", commits=(other, task))
    if kind == "decided":
        return Line(f"{speaker}: We decided to {decision}.", decides=decision)
    if kind == "mention":
        return Line(f"{speaker}: {other} said we should {task} someday?", mentions=(other,), about=task)
    if kind == "question":
        return Line(f"{speaker}: Should we {decision}?", about=decision)
    return Line(f"{speaker}: {draw(st.sampled_from(['Morning.', 'Thanks, all.', 'Coffee first.']))}")


@st.composite
def record_calls(draw: st.DrawFn, size: int) -> tuple[str, dict[str, object]]:
    lines = draw(st.lists(st.integers(-1, size + 2), min_size=0, max_size=3))
    if draw(st.booleans()):
        owner, task = draw(st.sampled_from(PEOPLE)), draw(st.sampled_from(TASKS))
        return "record_action_item", {"owner": owner, "task": task, "due": None, "lines": lines}
    return "record_decision", {"decision": draw(st.sampled_from(DECISIONS)), "lines": lines}


def expected(lines: list[Line], name: str, arguments: dict[str, object]) -> bool:
    """Whether the call is grounded, read off how the meeting was generated."""
    cited = arguments["lines"]
    assert isinstance(cited, list)
    if not cited or not all(1 <= n <= len(lines) for n in cited):
        return False
    shown = [lines[n - 1] for n in sorted(set(cited))]
    if name == "record_decision":
        decision = arguments["decision"]
        # Every cited line speaks of this decision, and one of them settles it.
        return all(says(line, decision) for line in shown) and any(line.decides == decision for line in shown)
    owner, task = arguments["owner"], arguments["task"]
    # Every cited line speaks of this task (a line that only mentions a person, chats, or commits someone
    # to another task supports nothing), and one of them shows this owner taking it on.
    return all(says(line, task) for line in shown) and any(line.commits == (owner, task) for line in shown)


def says(line: Line, what: object) -> bool:
    """Whether the generated line speaks of this task or decision, whoever takes it on."""
    return what in (line.about, line.decides) or (line.commits is not None and line.commits[1] == what)


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
async def test_a_call_is_recorded_if_and_only_if_its_cited_lines_show_it(data: st.DataObject) -> None:
    lines = data.draw(st.lists(meeting_lines(), min_size=1, max_size=12))
    calls = data.draw(st.lists(record_calls(len(lines)), min_size=1, max_size=6))
    transcript = "\n".join(line.text for line in lines)
    chat = ScriptedChat(
        ScriptedTurn(calls=tuple((f"c{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls))),
        ScriptedTurn(text="done"),
    )

    summary = await SummaryAgent(chat, LoopSettings()).summarize(transcript)

    # Call ids and order are kept; each call is answered once, recorded or refused as the meeting says.
    assert [record.call.call_id for record in summary.tool_calls] == [f"c{i}" for i in range(len(calls))]
    verdicts = [expected(lines, name, args) for name, args in calls]
    for record, grounded in zip(summary.tool_calls, verdicts, strict=True):
        result = record.result.result
        assert isinstance(result, dict)
        assert (result.get("error") == "ungrounded") is (not grounded), (record.call.raw_arguments, result)
    recorded_items = [
        args for (name, args), ok in zip(calls, verdicts, strict=True) if ok and name == "record_action_item"
    ]
    recorded_decisions = [
        args for (name, args), ok in zip(calls, verdicts, strict=True) if ok and name == "record_decision"
    ]
    assert sorted(summary.action_items, key=repr) == sorted(
        (
            ActionItem(str(a["owner"]), str(a["task"]), None, tuple(sorted(set(a["lines"]))))  # type: ignore[call-overload]
            for a in recorded_items
        ),
        key=repr,
    )
    assert len(summary.decisions) == len(recorded_decisions)
    # No recorded item cites a line that does not support it.
    for item in summary.action_items:
        assert all(says(lines[n - 1], item.task) for n in item.lines)
        assert any(lines[n - 1].commits == (item.owner, item.task) for n in item.lines)
    for decision in summary.decisions:
        assert all(says(lines[n - 1], decision.text) for n in decision.lines)
        assert any(lines[n - 1].decides == decision.text for n in decision.lines)


# ---------------------------------------------------------------- what the lines say (near misses)

STANDUP = """\
Priya: Morning, everyone.
Tom: I'll fix the billing export by Friday.
Maya: I'll remove the currency column from the report.
Alex: I'll quarantine the flaky checkout tests.
Priya: We decided to roll out Okta first and Azure AD in January.
Dev: We agreed to move the database to the larger instance class.
Priya: Decision: we will not freeze the public API this quarter.
Ben: I can't make Friday, so I'll send the deck on Monday.
"""


def part(call: object) -> str:
    """The part a refusal names, read off the start of its message."""
    return refused(call).split(":", 1)[0]


@pytest.mark.parametrize(
    ("call", "failed"),
    [
        (lambda g: g.action_item("Tom", "Fix the billing export", [2], due="Monday"), "due"),
        (lambda g: g.action_item("Maya", "Remove the currency column", [3], due="tomorrow"), "due"),
        (lambda g: g.action_item("Tom", "Fix the invoice export", [2]), "object"),
        (lambda g: g.action_item("Maya", "Add the currency column", [3]), "object"),
        (lambda g: g.action_item("Alex", "Not quarantine the flaky checkout tests", [4]), "polarity"),
        (lambda g: g.decision("Roll out Azure AD first and Okta in January", [5]), "order"),
        (lambda g: g.decision("Move the database to a smaller instance class", [6]), "object"),
        (lambda g: g.decision("Freeze the public API this quarter", [7]), "polarity"),
        (lambda g: g.decision("Roll out Okta first and Azure AD in March", [5]), "detail"),
        (lambda g: g.action_item("Priya", "Fix the billing export", [2]), "owner"),
    ],
    ids=[
        "due-changed",
        "due-invented",
        "object",
        "verb",
        "negated",
        "reversed",
        "detail",
        "unnegated",
        "month",
        "owner",
    ],
)
def test_an_item_that_cites_the_right_line_but_changes_what_it_says_is_refused_naming_the_part(
    call: object, failed: str
) -> None:
    check = grounding(STANDUP)
    assert callable(call)
    assert part(lambda: call(check)) == failed


@pytest.mark.parametrize(
    "call",
    [
        lambda g: g.action_item("Tom", "Fix the billing export", [2], due="Friday"),
        lambda g: g.action_item("Tom", "fix billing export", [2], due="Fri"),
        lambda g: g.action_item("Tom", "Billing export fix", [2], due="by friday"),
        lambda g: g.action_item("Tom", "Fix the export for billing", [2]),
        lambda g: g.action_item("Tom", "Fix Tom's billing export", [2]),
        lambda g: g.action_item("Maya", "Remove the currency column", [3]),
        lambda g: g.decision("Roll out Okta first and Azure AD in January", [5]),
        lambda g: g.decision("Okta first", [5]),
        lambda g: g.decision("Do not freeze the public API this quarter", [7]),
        lambda g: g.decision("Move the database to the larger instance class", [6]),
        # A negation in another clause of the line is not the item's.
        lambda g: g.action_item("Ben", "Send the deck", [8], due="Monday"),
    ],
)
def test_a_fair_paraphrase_is_recorded(call: object) -> None:
    assert callable(call)
    assert call(grounding(STANDUP))


@pytest.mark.parametrize(
    ("due", "line"),
    [
        ("Fri", "I'll send it by Friday."),
        ("end of the week", "I'll send it by EOW."),
        ("EOD", "I'll send it by end of day."),
        ("17:00", "I'll send it by 5pm."),
        ("March 3", "I'll send it by 3rd March."),
        ("2026-03-03", "I'll send it on 3 March 2026."),
        ("Thursday noon", "I'll send it by Thursday noon."),
        ("the next sprint", "I'll send it next sprint."),
        ("vendredi", "I'll send it on Friday."),
        ("before the demo", "I'll send it before the demo."),
    ],
)
def test_a_due_date_written_another_way_is_the_same_due_date(due: str, line: str) -> None:
    assert grounding(f"Ana: {line}").action_item("Ana", "Send it", [1], due=due) == ("Ana", (1,))


@pytest.mark.parametrize("due", ["Thursday", "5pm", "March 4", "tomorrow", "asap", "after the demo"])
def test_a_due_date_the_lines_do_not_state_is_refused_not_dropped(due: str) -> None:
    check = grounding("Ana: I'll send the deck by Friday 3 March before the demo.")
    assert part(lambda: check.action_item("Ana", "Send the deck", [1], due=due)) == "due"


def test_a_quote_is_checked_word_for_word_against_the_cited_lines() -> None:
    check = grounding(STANDUP)
    assert check.action_item("Tom", "Fix the billing export", [2], quote="fix the BILLING export, by Friday")
    assert check.decision("Okta first", [5], quote="roll out Okta first ... Azure AD in January")
    assert (
        part(lambda: check.action_item("Tom", "Fix the billing export", [2], quote="fix the export"))
        == "quote"
    )
    # The time and speaker the model read before a line may come with the quote.
    assert check.action_item(
        "Tom", "Fix the billing export", [2], quote="[00:12] Tom: I'll fix the billing export"
    )
    # The quote is of line 2; citing line 3 with it is refused, whatever the item says.
    assert part(lambda: check.action_item("Tom", "Fix the billing export", [3], quote="fix the billing")) in {
        "owner",
        "quote",
    }


# ---------------------------------------------------------------- across languages

ENGLISH = """\
Ana: Morning.
Ben: I'll fix the billing export by Friday.
Ana: Ben, can you not touch the invoices?
Ana: We decided not to freeze the public API.
Chen: Maybe we should move the launch?
"""


def across() -> Grounding:
    return Grounding(transcript_lines(ENGLISH), cross_language=True)


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (
            lambda: grounding(STANDUP).action_item("Tom", "the", [2]),
            "object: The task has no content word to check against the lines; describe it.",
        ),
        (
            lambda: grounding(STANDUP).decision("the", [5]),
            "object: The decision has no content word to check against the lines; state it.",
        ),
        (
            lambda: across().action_item("Ben", "Corriger l'export", [2], quote="by"),
            "quote: The quote says nothing of the task; quote the words that say it.",
        ),
        (
            lambda: across().decision("Ne pas geler l'API", [4], quote="We"),
            "quote: The quote says nothing of the decision; quote the words that say it.",
        ),
    ],
    ids=["task", "decision", "task's quote", "decision's quote"],
)
def test_an_item_or_its_quote_without_a_content_word_is_refused_saying_which(call: object, said: str) -> None:
    assert refused(call).startswith(said)


def test_across_languages_the_quote_stands_for_the_wording_and_is_required() -> None:
    check = across()
    recorded = check.action_item(
        "Ben",
        "Corriger l'export de facturation",
        [2],
        due="vendredi",
        quote="fix the billing export by Friday",
    )
    assert recorded == ("Ben", (2,))
    assert part(lambda: check.action_item("Ben", "Corriger l'export", [2])) == "quote"
    assert (
        part(lambda: check.action_item("Ben", "Corriger l'export", [2], quote="fix the invoices")) == "quote"
    )
    assert (
        part(lambda: check.action_item("Ana", "Corriger l'export", [2], quote="fix the billing export"))
        == "owner"
    )
    assert (
        part(
            lambda: check.action_item(
                "Ben", "Corriger l'export", [2], due="lundi", quote="fix the billing export"
            )
        )
        == "due"
    )
    assert (
        part(lambda: check.action_item("Ben", "Corriger", [2], due="Friday", quote="the billing export"))
        == "due"
    )


def test_across_languages_negation_numbers_and_settling_are_still_checked() -> None:
    check = across()
    assert check.decision("Ne pas geler l'API publique", [4], quote="freeze the public API") == (4,)
    assert (
        part(lambda: check.decision("Geler l'API publique", [4], quote="freeze the public API")) == "polarity"
    )
    assert (
        part(lambda: check.decision("Ne pas geler l'API 2", [4], quote="not to freeze the public API"))
        == "detail"
    )
    assert part(lambda: check.decision("Déplacer le lancement", [5], quote="move the launch")) == "settled"
    assert part(lambda: check.decision("Bonjour", [1], quote="Morning")) == "settled"


async def test_a_summary_in_another_language_records_quoted_items_and_refuses_unquoted_ones() -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(
                (
                    "c1",
                    "record_action_item",
                    json.dumps({"owner": "Ben", "task": "Corriger l'export", "due": None, "lines": [2]}),
                ),
                (
                    "c2",
                    "record_action_item",
                    json.dumps(
                        {
                            "owner": "Ben",
                            "task": "Corriger l'export de facturation",
                            "due": "vendredi",
                            "lines": [2],
                            "quote": "fix the billing export by Friday",
                        }
                    ),
                ),
            )
        ),
        ScriptedTurn(text="Ben corrige l'export."),
    )
    summary = await SummaryAgent(chat, LoopSettings(), language="fr").summarize(ENGLISH)

    assert summary.action_items == (ActionItem("Ben", "Corriger l'export de facturation", "vendredi", (2,)),)
    first = summary.tool_calls[0].result.result
    assert isinstance(first, dict)
    assert first["error"] == "ungrounded"
    assert str(first["message"]).startswith("quote: ")
    instructions = chat.requests[0].options.instructions if chat.requests[0].options else None
    assert instructions is not None
    assert "French (fr)" in instructions


async def test_a_summary_in_the_transcripts_own_language_checks_the_wording() -> None:
    call = {
        "owner": "Ben",
        "task": "Fix the invoice export",
        "due": None,
        "lines": [2],
        "quote": "fix the billing export",
    }
    for language in ("auto", "en"):
        chat = ScriptedChat(
            ScriptedTurn(calls=(("c1", "record_action_item", json.dumps(call)),)), ScriptedTurn(text=".")
        )
        summary = await SummaryAgent(chat, LoopSettings(), language=language).summarize(ENGLISH)
        result = summary.tool_calls[0].result.result
        assert isinstance(result, dict)
        assert str(result["message"]).startswith("object: ")


def test_a_summary_language_that_is_no_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="BCP 47"):
        SummaryAgent(ScriptedChat(), LoopSettings(), language="French please")


def test_a_refusal_echoes_at_most_five_of_the_calls_words_each_cut_short() -> None:
    check = grounding(STANDUP)
    long_word = "x" * 500
    # Six words the line says and six it does not: "not say" with the first five of them.
    text = "We decided to roll out Okta first and Azure AD " + " ".join(f"{long_word}{n}" for n in range(6))
    message = refused(lambda: check.decision(text, [5]))
    assert message.count("'xxx") == 5
    assert ", ..." in message
    assert long_word not in message
    due = "Saturday " + long_word
    assert long_word not in refused(lambda: check.action_item("Tom", "Fix the billing export", [2], due=due))


# ---------------------------------------------------------------- properties of the wording rule


@settings(max_examples=examples(80), deadline=None)
@given(said=commitments(), data=st.data())
def test_an_item_in_its_lines_words_order_and_dates_is_recorded(
    said: Commitment, data: st.DataObject
) -> None:
    verb, adjective, noun = said.words
    task = data.draw(
        st.sampled_from(
            [
                f"{verb} the {adjective} {noun}",
                f"{verb.capitalize()} {adjective} {noun}.",
                f"the {adjective} {noun} {verb}",
                f"{verb} the {noun} for the {adjective}",
                f"{verb} {said.owner}'s {adjective} {noun}",
            ]
        )
    )
    due = None if said.due is None else data.draw(st.sampled_from(DUE_SPELLINGS[said.due]))
    assert grounding(said.line).action_item(said.owner, task, [1], due=due) == (said.owner, (1,))


@settings(max_examples=examples(80), deadline=None)
@given(said=commitments(), data=st.data())
def test_an_item_that_changes_a_word_the_order_the_polarity_or_the_date_of_its_line_is_refused_naming_it(
    said: Commitment, data: st.DataObject
) -> None:
    words = list(said.words)
    change = data.draw(st.sampled_from(["object", "order", "polarity", "due"]))
    due = said.due
    if change == "object":
        words[data.draw(st.integers(0, 2))] = data.draw(st.sampled_from(UNSAID_WORDS))
    elif change == "order":
        first, second = data.draw(st.sampled_from([(0, 1), (0, 2), (1, 2)]))
        words[first], words[second] = words[second], words[first]
    elif change == "due":
        due = data.draw(st.sampled_from(["Saturday", "Sunday", "next month", "5pm"]))
    task = ("do not " if change == "polarity" else "") + f"{words[0]} the {words[1]} {words[2]}"
    assert part(lambda: grounding(said.line).action_item(said.owner, task, [1], due=due)) == change
