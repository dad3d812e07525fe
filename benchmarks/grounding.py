"""``python -m benchmarks.grounding``: how well summaries are grounded, on synthetic labelled meetings.

Two figures over the same meetings (generated here from a fixed seed, each line's meaning known by
construction, phrased in more ways than the offline stand-in's rules read):

- the offline stand-in end to end (a real HTTP server on 127.0.0.1, the container, the grounded summary
  pipeline): precision and recall of its action items and decisions against the labels;
- a scripted "hallucinating" model that sends, for every labelled item, the true call and several
  ungrounded ones (an owner who never took it on, a wrong line, a line outside the transcript, a
  decision nobody took): the share of ungrounded calls the grounding check refuses, and the share of
  true calls it lets through;
- near misses (the right lines, what they say changed) and fair paraphrases of every labelled item,
  per kind (:mod:`benchmarks.near_misses`);
- the hallucinating model across languages, every call quoting its lines: a French summary of these
  meetings, English summaries of German and Japanese ones (:mod:`benchmarks.languages`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs

from adapters.container import Container
from adapters.offline import OfflineResponsesServer
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import LoopSettings, MeetingSummary, SummaryAgent
from application.meetings.evaluation import Score, same_task
from application.meetings.grounding import normalized
from benchmarks.languages import (
    FRENCH,
    FRENCH_DUES,
    FRENCH_TIMES,
    LabelledDecision,
    LabelledItem,
    LabelledMeeting,
    cross_language_calls,
    german_meetings,
    japanese_meetings,
)
from benchmarks.near_misses import Call, KindScore, paraphrases_and_near_misses, scored
from benchmarks.plans import write_plan

__all__ = ["Meeting", "evaluate", "meetings", "render"]

DEFAULT_OUTPUT: Final = Path(__file__).parent / "results" / "grounding.json"
SEED: Final = 24
_Label = TypeVar("_Label")
_Found = TypeVar("_Found")
PEOPLE: Final = ("Ana", "Ben", "Chen", "Dara", "Elif", "Farid", "Greta", "Hugo")
TASKS: Final = (
    "update the pricing page", "call the payroll vendor", "draft the hiring plan", "fix the export bug",
    "review the security audit", "book the offsite venue", "migrate the staging database",
    "write the onboarding guide", "renew the SSL certificates", "clean up the feature flags",
    "prepare the board slides", "test the Android release", "order the new laptops",
    "summarize the customer interviews", "archive the old tickets", "benchmark the search service",
)  # fmt: skip
DECISIONS: Final = (
    ("move the launch", "to June", "to July"), ("freeze the public API", "this quarter", "next quarter"),
    ("hire a second designer", "in March", "in May"), ("drop the legacy exporter", "in April", "in August"),
    ("run the retro", "on Thursday", "on Friday"), ("switch the CI provider", "in June", "in September"),
)  # fmt: skip
DUES: Final = ("Friday", "tomorrow", "end of week", "Monday", "next sprint")
FILLER: Final = (
    "Morning, everyone.", "Thanks, that helps.", "Let me share my screen.", "Can everyone hear me?",
    "Good point.", "I'll be honest, that demo was fun.", "The coffee machine is broken again.",
    "Nothing blocking on my side.", "We are a bit behind on the roadmap.",
)  # fmt: skip


@attrs.frozen
class Item:
    owner: str
    task: str
    lines: tuple[int, ...]


@attrs.frozen
class Choice:
    text: str
    lines: tuple[int, ...]


@attrs.frozen
class Meeting:
    """A synthetic meeting: its lines and what a careful reader would record from them."""

    name: str
    lines: tuple[str, ...]
    items: tuple[Item, ...]
    decisions: tuple[Choice, ...]
    distractors: tuple[int, ...]
    """Lines that name a person or a task without anyone taking it on."""

    @property
    def transcript(self) -> str:
        return "\n".join(self.lines)


class _Writer:
    def __init__(self, rng: random.Random, people: Sequence[str]) -> None:
        self.rng, self.people = rng, people
        self.lines: list[str] = []
        self.items: list[Item] = []
        self.decisions: list[Choice] = []
        self.distractors: list[int] = []

    def say(self, speaker: str, text: str) -> int:
        self.lines.append(f"[{len(self.lines) // 2:02d}:{len(self.lines) % 60:02d}] {speaker}: {text}")
        return len(self.lines)

    def other(self, *not_these: str) -> str:
        return self.rng.choice([p for p in self.people if p not in not_these])

    def commitment(self, task: str) -> None:
        owner = self.rng.choice(self.people)
        due = self.rng.choice(DUES)
        form = self.rng.randrange(7)
        if form == 0:
            self.items.append(Item(owner, task, (self.say(owner, f"I'll {task} by {due}."),)))
        elif form == 1:
            chair = self.other(owner)
            self.items.append(Item(owner, task, (self.say(chair, f"So {owner} will {task} by {due}."),)))
        elif form == 2:
            chair = self.other(owner)
            self.items.append(Item(owner, task, (self.say(chair, f"Action: {owner} to {task}."),)))
        elif form == 3:
            # Asked and accepted on the next line: the stand-in's rules do not read this one.
            chair = self.other(owner)
            asked = self.say(chair, f"{owner}, can you {task}?")
            self.items.append(Item(owner, task, (asked, self.say(owner, "Sure, I can do that."))))
        elif form == 4:
            self.items.append(Item(owner, task, (self.say(owner, f"Let me {task} this week."),)))
        elif form == 5:
            self.items.append(Item(owner, task, (self.say(owner, f"I'm going to {task} before the demo."),)))
        else:
            # Named, then a pronoun: only both lines together say who.
            chair = self.other(owner)
            named = self.say(chair, f"{owner} knows the {task.split()[-1]} best.")
            pronoun = "She" if owner in ("Ana", "Dara", "Elif", "Greta") else "He"
            self.items.append(Item(owner, task, (named, self.say(chair, f"{pronoun} will {task}."))))

    def distractor(self, task: str) -> None:
        speaker, named = self.rng.choice(self.people), self.other()
        form = self.rng.randrange(3)
        if form == 0:
            self.distractors.append(self.say(speaker, f"{named} said we should {task} someday."))
        elif form == 1:
            self.distractors.append(self.say(speaker, f"Should we {task} at some point?"))
        else:
            self.distractors.append(self.say(speaker, f"Maybe {named} will {task}, who knows?"))

    def decision(self, what: tuple[str, str, str]) -> None:
        subject, first, later = what
        chair = self.rng.choice(self.people)
        form = self.rng.randrange(4)
        if form == 0:
            self.decisions.append(
                Choice(f"{subject} {first}", (self.say(chair, f"We decided to {subject} {first}."),))
            )
        elif form == 1:
            self.decisions.append(
                Choice(f"{subject} {first}", (self.say(chair, f"Decision: {subject} {first}."),))
            )
        elif form == 2:
            asked = self.say(chair, f"Shall we {subject} {first}?")
            agreed = self.say(self.other(chair), "Agreed, let's do that.")
            self.decisions.append(Choice(f"{subject} {first}", (asked, agreed)))
        else:
            # Reversed later: only the later decision stands.
            self.say(chair, f"We decided to {subject} {first}.")
            for _ in range(self.rng.randrange(1, 4)):
                self.say(self.rng.choice(self.people), self.rng.choice(FILLER))
            later_line = self.say(chair, f"Change of plan: we decided to {subject} {later} instead.")
            self.decisions.append(Choice(f"{subject} {later}", (later_line,)))

    def filler(self) -> None:
        self.say(self.rng.choice(self.people), self.rng.choice(FILLER))


def meetings(count: int = 24, seed: int = SEED) -> tuple[Meeting, ...]:
    """``count`` synthetic meetings, the same ones for the same seed."""
    rng = random.Random(seed)
    made = []
    for number in range(count):
        writer = _Writer(rng, rng.sample(PEOPLE, rng.randint(3, 5)))
        tasks = rng.sample(TASKS, rng.randint(3, 6))
        decisions = rng.sample(DECISIONS, rng.randint(1, 3))
        plan = ["task"] * len(tasks) + ["decision"] * len(decisions) + ["distractor"] * rng.randint(1, 3)
        plan += ["filler"] * rng.randint(4, 10)
        rng.shuffle(plan)
        unused = [task for task in TASKS if task not in tasks]
        write_plan(writer, plan, tasks, decisions, unused, rng)
        made.append(
            Meeting(
                f"meeting-{number + 1:02d}",
                tuple(writer.lines),
                tuple(writer.items),
                tuple(writer.decisions),
                tuple(writer.distractors),
            )
        )
    return tuple(made)


# ---------------------------------------------------------------- scoring


def _matched(
    labels: Sequence[_Label], found: Sequence[_Found], same: Callable[[_Label, _Found], bool]
) -> int:
    """How many of ``found`` match a label, each label matching at most one (the first left that fits)."""
    left = list(labels)
    hits = 0
    for item in found:
        match = next((label for label in left if same(label, item)), None)
        if match is not None:
            left.remove(match)
            hits += 1
    return hits


def score_items(meeting: Meeting, summary: MeetingSummary) -> Score:
    hits = _matched(
        meeting.items,
        summary.action_items,
        lambda label, found: (
            normalized(label.owner) == normalized(found.owner)
            and same_task(label.task, found.task)
            and bool(set(label.lines) & set(found.lines))
        ),
    )
    return Score(hits, len(summary.action_items), len(meeting.items))


def score_decisions(meeting: Meeting, summary: MeetingSummary) -> Score:
    hits = _matched(
        meeting.decisions,
        summary.decisions,
        lambda label, found: same_task(label.text, found.text) and bool(set(label.lines) & set(found.lines)),
    )
    return Score(hits, len(summary.decisions), len(meeting.decisions))


# ---------------------------------------------------------------- a hallucinating model


def hallucinated_calls(meeting: Meeting, rng: random.Random) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """For every labelled item the true call and ungrounded ones; and how many calls are true (the first)."""
    people = sorted({line.split("] ", 1)[1].split(":", 1)[0] for line in meeting.lines})
    true: list[tuple[str, dict[str, Any]]] = []
    false: list[tuple[str, dict[str, Any]]] = []
    fillers = [
        n
        for n, line in enumerate(meeting.lines, 1)
        if n not in {m for item in meeting.items for m in item.lines}
        and n not in {m for d in meeting.decisions for m in d.lines}
        and n not in meeting.distractors
    ]
    for item in meeting.items:
        call = {"owner": item.owner, "task": item.task, "due": None, "lines": list(item.lines)}
        true.append(("record_action_item", call))
        stranger = rng.choice(
            [p for p in people if p != item.owner and all(p not in meeting.lines[n - 1] for n in item.lines)]
            or ["Zed"]
        )
        false.append(("record_action_item", {**call, "owner": stranger}))  # someone who never took it on
        false.append(("record_action_item", {**call, "lines": [rng.choice(fillers)]}))  # a wrong line
        false.append(("record_action_item", {**call, "lines": [len(meeting.lines) + 7]}))  # no such line
        false.append(
            (
                "record_action_item",
                {**call, "task": rng.choice([t for t in TASKS if not same_task(t, item.task)])},
            )
        )
    for number in meeting.distractors:
        line = meeting.lines[number - 1]
        named = next((p for p in people if f" {p} " in f" {line.split(': ', 1)[1]} "), people[0])
        task = next(t for t in TASKS if t in line)
        false.append(("record_action_item", {"owner": named, "task": task, "due": None, "lines": [number]}))
    for decision in meeting.decisions:
        true.append(("record_decision", {"decision": decision.text, "lines": list(decision.lines)}))
        false.append(("record_decision", {"decision": decision.text, "lines": [rng.choice(fillers)]}))
    for subject, first, _ in DECISIONS:
        if not any(subject in d.text for d in meeting.decisions) and fillers:
            false.append(
                ("record_decision", {"decision": f"{subject} {first}", "lines": [rng.choice(fillers)]})
            )
            break
    return true + false, len(true)


@attrs.frozen
class Refusals:
    ungrounded_refused: int = 0
    ungrounded: int = 0
    true_accepted: int = 0
    true: int = 0

    def __add__(self, other: Refusals) -> Refusals:
        return Refusals(*(a + b for a, b in zip(attrs.astuple(self), attrs.astuple(other), strict=True)))


async def refusals(meeting: Meeting, rng: random.Random) -> Refusals:
    calls, true_count = hallucinated_calls(meeting, rng)
    chat = ScriptedChat(
        ScriptedTurn(
            calls=tuple((f"call_{i}", name, json.dumps(args)) for i, (name, args) in enumerate(calls))
        ),
        ScriptedTurn(text="Summary."),
    )
    summary = await SummaryAgent(chat, LoopSettings()).summarize(meeting.transcript)
    refused = [
        isinstance(record.result.result, dict) and record.result.result.get("error") == "ungrounded"
        for record in summary.tool_calls
    ]
    return Refusals(
        ungrounded_refused=sum(refused[true_count:]),
        ungrounded=len(calls) - true_count,
        true_accepted=true_count - sum(refused[:true_count]),
        true=true_count,
    )


# ---------------------------------------------------------------- near misses and paraphrases


def said_due(meeting: Meeting, item: Item) -> str | None:
    """The due date the item's lines say ("... by Friday."), or None."""
    said = " ".join(meeting.lines[n - 1] for n in item.lines)
    return next((due for due in DUES if f"by {due}." in said), None)


def _tally(verdicts: Sequence[tuple[Call, bool]]) -> dict[str, dict[str, Any]]:
    """Per kind: calls, as expected (refused for a near miss, recorded for a paraphrase), share."""
    kinds: dict[str, KindScore] = {}
    for call, recorded in verdicts:
        kind = kinds.get(call.kind, KindScore(call.kind, call.grounded))
        kinds[call.kind] = attrs.evolve(
            kind, calls=kind.calls + 1, as_expected=kind.as_expected + (recorded == call.grounded)
        )
    return {
        kind.kind: {
            "grounded": kind.grounded,
            "calls": kind.calls,
            "as_expected": kind.as_expected,
            "share": kind.share,
        }
        for kind in kinds.values()
    }


def _totals(kinds: dict[str, dict[str, Any]], grounded: bool) -> dict[str, Any]:
    picked = [k for k in kinds.values() if k["grounded"] is grounded]
    calls = sum(k["calls"] for k in picked)
    right = sum(k["as_expected"] for k in picked)
    return {"calls": calls, "as_expected": right, "share": right / calls if calls else 1.0}


async def near_miss_figures(generated: Sequence[Meeting], seed: int = SEED) -> dict[str, Any]:
    """Every near miss and fair paraphrase of every labelled item, scored per kind."""
    rng = random.Random(seed)
    verdicts: list[tuple[Call, bool]] = []
    for meeting in generated:
        items = [(item.owner, item.task, item.lines, said_due(meeting, item)) for item in meeting.items]
        decisions = [(decision.text, decision.lines) for decision in meeting.decisions]
        calls = paraphrases_and_near_misses(items, decisions, meeting.lines, DUES, rng)
        verdicts += await scored(meeting.transcript, calls)
    kinds = _tally(verdicts)
    return {"kinds": kinds, "near_misses": _totals(kinds, False), "paraphrases": _totals(kinds, True)}


def french_summaries(generated: Sequence[Meeting], rng: random.Random) -> tuple[LabelledMeeting, ...]:
    """The English meetings as a French summary labels them: tasks and decisions in French, due dates
    as the meeting said them or in French."""
    made = []
    for meeting in generated:
        people = sorted({line.split("] ", 1)[1].split(":", 1)[0] for line in meeting.lines})
        items = []
        for item in meeting.items:
            due = said_due(meeting, item)
            if due is not None and rng.random() < 0.5:
                due = FRENCH_DUES[due]
            items.append(LabelledItem(item.owner, FRENCH[item.task], item.lines, due))
        decisions = []
        for decision in meeting.decisions:
            subject, time = next(
                (s, decision.text[len(s) + 1 :]) for s, _, _ in DECISIONS if decision.text.startswith(s)
            )
            decisions.append(LabelledDecision(f"{FRENCH[subject]} {FRENCH_TIMES[time]}", decision.lines))
        distractors = []
        for number in meeting.distractors:
            said = meeting.lines[number - 1].split(": ", 1)[1]
            distractors.append((next((p for p in people if f" {p} " in f" {said} "), people[0]), number))
        made.append(
            LabelledMeeting(
                meeting.name, meeting.lines, tuple(items), tuple(decisions), tuple(distractors), "ne pas"
            )
        )
    return tuple(made)


async def cross_language_figures(
    generated: Sequence[Meeting], seed: int = SEED, *, others: int = 8
) -> dict[str, Any]:
    """The hallucinating model across languages: a French summary (``fr``) of the English meetings, an
    English one (``en``) of German and Japanese meetings; per summary, the share of ungrounded calls
    refused and of true calls recorded, and per kind."""
    rng = random.Random(seed)
    suites = {
        "French summary of English meetings": ("fr", french_summaries(generated, rng)),
        "English summary of German meetings": ("en", german_meetings(others, seed)),
        "English summary of Japanese meetings": ("en", japanese_meetings(others, seed)),
    }
    figures: dict[str, Any] = {}
    for title, (language, labelled) in suites.items():
        verdicts: list[tuple[Call, bool]] = []
        for meeting in labelled:
            calls = cross_language_calls(meeting, rng)
            verdicts += await scored(meeting.transcript, calls, language=language)
        kinds = _tally(verdicts)
        figures[title] = {
            "language": language,
            "meetings": len(labelled),
            "kinds": kinds,
            "ungrounded_refused": _totals(kinds, False),
            "true_recorded": _totals(kinds, True),
        }
    return figures


# ---------------------------------------------------------------- the run


async def evaluate(count: int = 24, seed: int = SEED) -> dict[str, Any]:
    """Every figure, over ``count`` meetings."""
    generated = meetings(count, seed)
    items, decisions = Score(), Score()
    with OfflineResponsesServer() as server:
        async with Container() as container:
            container.config.from_dict(
                {"agent": {"base_url": server.base_url, "api_key": "sk-any", "telemetry": False}}
            )
            for meeting in generated:
                summary = await container.summary_agent().summarize(meeting.transcript)
                items += score_items(meeting, summary)
                decisions += score_decisions(meeting, summary)
    rng = random.Random(seed)
    checked = Refusals()
    for meeting in generated:
        checked += await refusals(meeting, rng)
    near_misses = await near_miss_figures(generated, seed)
    across = await cross_language_figures(generated, seed)
    return {
        "near_miss_suite": near_misses,
        "cross_language": across,
        "meetings": len(generated),
        "lines": sum(len(m.lines) for m in generated),
        "labelled_items": items.labelled,
        "labelled_decisions": decisions.labelled,
        "stand_in": {
            "items": {"precision": items.precision, "recall": items.recall, **attrs.asdict(items)},
            "decisions": {
                "precision": decisions.precision,
                "recall": decisions.recall,
                **attrs.asdict(decisions),
            },
        },
        "hallucinating_model": {
            "ungrounded_refused_share": checked.ungrounded_refused / checked.ungrounded,
            "true_accepted_share": checked.true_accepted / checked.true,
            **attrs.asdict(checked),
        },
    }


def render(figures: dict[str, Any]) -> str:
    stand_in, model = figures["stand_in"], figures["hallucinating_model"]
    rows = [
        f"{figures['meetings']} synthetic meetings, {figures['lines']} lines, "
        f"{figures['labelled_items']} labelled action items, {figures['labelled_decisions']} decisions",
        f"stand-in action items: precision {stand_in['items']['precision']:.3f}, "
        f"recall {stand_in['items']['recall']:.3f}"
        f" ({stand_in['items']['matched']} of {stand_in['items']['found']} found, "
        f"{stand_in['items']['labelled']} labelled)",
        f"stand-in decisions:    precision {stand_in['decisions']['precision']:.3f}, recall "
        f"{stand_in['decisions']['recall']:.3f} ({stand_in['decisions']['matched']} of "
        f"{stand_in['decisions']['found']} found, {stand_in['decisions']['labelled']} labelled)",
        f"hallucinating model: {model['ungrounded_refused']} of {model['ungrounded']} ungrounded calls "
        "refused "
        f"({model['ungrounded_refused_share']:.3f}); {model['true_accepted']} of {model['true']} true calls "
        f"recorded ({model['true_accepted_share']:.3f})",
    ]
    suite = figures["near_miss_suite"]
    rows += [
        "",
        "near misses (the right lines, changed words) and fair paraphrases, per kind:",
        "| kind | should be | calls | as it should | share |",
        "|---|---|---:|---:|---:|",
    ]
    for grounded in (False, True):
        for kind, score in suite["kinds"].items():
            if score["grounded"] is grounded and kind != "true":
                rows.append(_kind_row(kind, score))
    near, fair = suite["near_misses"], suite["paraphrases"]
    rows.append(
        f"near misses refused: {near['as_expected']} of {near['calls']} ({near['share']:.3f}); "
        f"true calls and fair paraphrases recorded: {fair['as_expected']} of {fair['calls']}"
        f" ({fair['share']:.3f})"
    )
    rows += [
        "",
        "across languages (every call quotes its lines):",
        "| summary | ungrounded refused | true recorded |",
    ]
    rows.append("|---|---:|---:|")
    for title, across in figures["cross_language"].items():
        refused, true = across["ungrounded_refused"], across["true_recorded"]
        rows.append(
            f"| {title} ({across['meetings']} meetings) | {refused['as_expected']} of {refused['calls']}"
            f" ({refused['share']:.3f}) | {true['as_expected']} of {true['calls']} ({true['share']:.3f}) |"
        )
    return "\n".join(rows)


def _kind_row(kind: str, score: dict[str, Any]) -> str:
    should = "recorded" if score["grounded"] else "refused"
    return f"| {kind} | {should} | {score['calls']} | {score['as_expected']} | {score['share']:.3f} |"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grounding", description=__doc__)
    parser.add_argument("--meetings", type=int, default=24, help="how many synthetic meetings (at least 20)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the JSON")
    args = parser.parse_args(argv)
    figures = asyncio.run(evaluate(args.meetings))
    print(render(figures))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
