"""The grounding benchmark across languages: a French summary of the English meetings, and English
summaries of German and Japanese meetings written for this benchmark (labelled by construction).

Every call carries a quote of its cited lines, as the summary pipeline asks when the summary's
language is not the transcript's; the hallucinating model sends, for each labelled item, the true
call and ungrounded ones that a check across languages can see.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Final

import attrs

from benchmarks.near_misses import Call
from benchmarks.plans import write_plan

__all__ = ["FRENCH", "LabelledMeeting", "cross_language_calls", "german_meetings", "japanese_meetings"]

# The English meetings' tasks and decisions as a French summary writes them.
FRENCH: Final = {
    "update the pricing page": "mettre à jour la page des tarifs",
    "call the payroll vendor": "appeler le prestataire de paie",
    "draft the hiring plan": "rédiger le plan de recrutement",
    "fix the export bug": "corriger le bogue d'export",
    "review the security audit": "relire l'audit de sécurité",
    "book the offsite venue": "réserver le lieu du séminaire",
    "migrate the staging database": "migrer la base de préproduction",
    "write the onboarding guide": "écrire le guide d'accueil",
    "renew the SSL certificates": "renouveler les certificats SSL",
    "clean up the feature flags": "nettoyer les drapeaux de fonctionnalité",
    "prepare the board slides": "préparer les diapositives du conseil",
    "test the Android release": "tester la version Android",
    "order the new laptops": "commander les nouveaux portables",
    "summarize the customer interviews": "résumer les entretiens clients",
    "archive the old tickets": "archiver les anciens tickets",
    "benchmark the search service": "mesurer le service de recherche",
    "move the launch": "déplacer le lancement",
    "freeze the public API": "geler l'API publique",
    "hire a second designer": "embaucher un second designer",
    "drop the legacy exporter": "abandonner l'ancien exportateur",
    "run the retro": "tenir la rétro",
    "switch the CI provider": "changer de fournisseur de CI",
}
FRENCH_TIMES: Final = {
    "to June": "en juin", "to July": "en juillet", "this quarter": "ce trimestre",
    "next quarter": "le trimestre prochain",
    "in March": "en mars", "in May": "en mai", "in April": "en avril", "in August": "en août",
    "on Thursday": "jeudi", "on Friday": "vendredi", "in June": "en juin", "in September": "en septembre",
}  # fmt: skip
FRENCH_DUES: Final = {
    "Friday": "vendredi", "tomorrow": "demain", "end of week": "fin de semaine", "Monday": "lundi",
    "next sprint": "le prochain sprint",
}  # fmt: skip


@attrs.frozen
class LabelledItem:
    owner: str
    task: str
    """As the summary writes it, in the summary's language."""
    lines: tuple[int, ...]
    due: str | None
    """As the summary gives it: the meeting's words, or the same date in the summary's language."""


@attrs.frozen
class LabelledDecision:
    text: str
    lines: tuple[int, ...]


@attrs.frozen
class LabelledMeeting:
    """A meeting, what a careful reader records from it in the summary's language, and its
    distractors (lines that name a person or a task with nobody taking it on)."""

    name: str
    lines: tuple[str, ...]
    items: tuple[LabelledItem, ...]
    decisions: tuple[LabelledDecision, ...]
    distractors: tuple[tuple[str, int], ...]
    """(the person named, the line)"""
    negated: str
    """How the summary's language says "do not" before a task, for the negated hallucination."""

    @property
    def transcript(self) -> str:
        return "\n".join(self.lines)


# ---------------------------------------------------------------- meetings in German and Japanese

_TASKS: Final = (
    # (German, Japanese, English)
    ("die Preisseite aktualisieren", "料金ページを更新", "update the pricing page"),
    ("den Lohnanbieter anrufen", "給与ベンダーに電話", "call the payroll vendor"),
    ("den Einstellungsplan entwerfen", "採用計画を作成", "draft the hiring plan"),
    ("den Exportfehler beheben", "エクスポートのバグを修正", "fix the export bug"),
    ("das Sicherheitsaudit prüfen", "セキュリティ監査をレビュー", "review the security audit"),
    ("den Ort für das Offsite buchen", "オフサイトの会場を予約", "book the offsite venue"),
    ("die Staging-Datenbank migrieren", "ステージングのデータベースを移行", "migrate the staging database"),
    ("den Onboarding-Leitfaden schreiben", "オンボーディングガイドを執筆", "write the onboarding guide"),
    ("die SSL-Zertifikate erneuern", "SSL証明書を更新", "renew the SSL certificates"),
    ("die Vorstandsfolien vorbereiten", "取締役会のスライドを準備", "prepare the board slides"),
)
_DECISIONS: Final = (
    ("den Launch auf Juni zu verschieben", "ローンチを6月に延期する", "move the launch to June"),
    (
        "die öffentliche API in diesem Quartal einzufrieren",
        "今四半期は公開APIを凍結する",
        "freeze the public API this quarter",
    ),
    (
        "im März einen zweiten Designer einzustellen",
        "3月に2人目のデザイナーを採用する",
        "hire a second designer in March",
    ),
    (
        "den alten Exporter im April abzuschalten",
        "4月に古いエクスポーターを廃止する",
        "drop the legacy exporter in April",
    ),
)
_DUES: Final = (
    # (German, Japanese, English)
    ("Freitag", "金曜日", "Friday"),
    ("morgen", "明日", "tomorrow"),
    ("Ende der Woche", "週末", "end of week"),
    ("Montag", "月曜日", "Monday"),
    ("nächsten Sprint", "次のスプリント", "next sprint"),
)
# Japanese punctuation, named so the lines that use it read plainly.
_COLON: Final = "\uff1a"
_ASK: Final = "\uff1f"
_PEOPLE: Final = {
    "de": ("Anna", "Ben", "Clara", "David", "Eva", "Felix"),
    "ja": ("アナ", "ベン", "チェン", "ダラ", "エリフ", "ハル"),
}
_FILLER: Final = {
    "de": ("Guten Morgen zusammen.", "Danke, das hilft.", "Die Kaffeemaschine ist wieder kaputt.",
           "Kann mich jeder hören?", "Bei mir blockiert nichts."),
    "ja": ("おはようございます。", "ありがとうございます、助かります。", "コーヒーマシンがまた壊れています。",
           f"皆さん聞こえますか{_ASK}", "私の方は特に問題ありません。"),
}  # fmt: skip


class _Writer:
    def __init__(self, language: str, rng: random.Random, people: Sequence[str]) -> None:
        self.language, self.rng, self.people = language, rng, people
        self.lines: list[str] = []
        self.items: list[LabelledItem] = []
        self.decisions: list[LabelledDecision] = []
        self.distractors: list[tuple[str, int]] = []

    def say(self, speaker: str, text: str) -> int:
        colon = ":" if self.language == "de" else _COLON
        self.lines.append(f"[{len(self.lines) // 2:02d}:{len(self.lines) % 60:02d}] {speaker}{colon} {text}")
        return len(self.lines)

    def other(self, *not_these: str) -> str:
        return self.rng.choice([p for p in self.people if p not in not_these])

    def commitment(self, task: tuple[str, str, str]) -> None:
        german, japanese, english = task
        owner = self.rng.choice(self.people)
        said, _, due_english = spoken_due = self.rng.choice(_DUES)
        due_said = spoken_due[0] if self.language == "de" else spoken_due[1]
        # The summary gives the due as the meeting said it, or as the same date in English.
        due = self.rng.choice([due_said, due_english])
        form = self.rng.randrange(4)
        de = self.language == "de"
        if form == 0:
            text = f"Ich werde bis {said} {german}." if de else f"私が{due_said}までに{japanese}します。"
            self.items.append(LabelledItem(owner, english, (self.say(owner, text),), due))
        elif form in (1, 2):
            # Someone else assigns the task: with its due (1), or as an action line without one (2).
            chair = self.other(owner)
            if form == 1:
                text = (
                    f"{owner} wird bis {said} {german}."
                    if de
                    else f"{owner}さんが{due_said}までに{japanese}を担当します。"
                )
                assigned_due: str | None = due
            else:
                text = (
                    f"Aktion: {owner} soll {german}."
                    if de
                    else f"アクション{_COLON}{owner}さんが{japanese}を担当します。"
                )
                assigned_due = None
            self.items.append(LabelledItem(owner, english, (self.say(chair, text),), assigned_due))
        else:
            chair = self.other(owner)
            asked = self.say(
                chair,
                f"{owner}, kannst du {german}?" if de else f"{owner}さん、{japanese}をお願いできますか{_ASK}",
            )
            agreed = self.say(owner, "Ja, mache ich." if de else "はい、やります。")
            self.items.append(LabelledItem(owner, english, (asked, agreed), None))

    def decision(self, decision: tuple[str, str, str]) -> None:
        german, japanese, english = decision
        chair = self.rng.choice(self.people)
        de = self.language == "de"
        form = self.rng.randrange(3)
        if form == 0:
            text = f"Wir haben beschlossen, {german}." if de else f"{japanese}ことに決定しました。"
            self.decisions.append(LabelledDecision(english, (self.say(chair, text),)))
        elif form == 1:
            text = f"Entscheidung: {german[0].upper()}{german[1:]}." if de else f"決定{_COLON}{japanese}。"
            self.decisions.append(LabelledDecision(english, (self.say(chair, text),)))
        else:
            asked = self.say(
                chair,
                f"Sollen wir {german.replace(' zu ', ' ')}?" if de else f"{japanese}ことにしましょうか{_ASK}",
            )
            agreed = self.say(self.other(chair), "Einverstanden." if de else "賛成です。")
            self.decisions.append(LabelledDecision(english, (asked, agreed)))

    def distractor(self, task: tuple[str, str, str]) -> None:
        german, japanese, _ = task
        speaker, named = self.rng.choice(self.people), self.other()
        if self.rng.randrange(2) == 0:
            text = (
                f"{named} meinte, wir sollten irgendwann {german}."
                if self.language == "de"
                else f"{named}さんがいつか{japanese}するべきだと言っていました。"
            )
        else:
            text = (
                f"Sollte {named} irgendwann {german}?"
                if self.language == "de"
                else f"{named}さんはいつか{japanese}するべきでしょうか{_ASK}"
            )
        self.distractors.append((named, self.say(speaker, text)))

    def filler(self) -> None:
        self.say(self.rng.choice(self.people), self.rng.choice(_FILLER[self.language]))


def _meetings(language: str, count: int, seed: int) -> tuple[LabelledMeeting, ...]:
    rng = random.Random(f"{language}-{seed}")
    made = []
    for number in range(count):
        writer = _Writer(language, rng, rng.sample(_PEOPLE[language], rng.randint(3, 5)))
        tasks = rng.sample(_TASKS, rng.randint(3, 5))
        decisions = rng.sample(_DECISIONS, rng.randint(1, 2))
        unused = [task for task in _TASKS if task not in tasks]
        plan = ["task"] * len(tasks) + ["decision"] * len(decisions) + ["distractor"] * rng.randint(1, 2)
        plan += ["filler"] * rng.randint(3, 6)
        rng.shuffle(plan)
        write_plan(writer, plan, tasks, decisions, unused, rng)
        made.append(
            LabelledMeeting(
                f"{language}-{number + 1:02d}",
                tuple(writer.lines),
                tuple(writer.items),
                tuple(writer.decisions),
                tuple(writer.distractors),
                "do not",
            )
        )
    return tuple(made)


def german_meetings(count: int = 8, seed: int = 24) -> tuple[LabelledMeeting, ...]:
    """German meetings labelled in English, the same ones for the same seed."""
    return _meetings("de", count, seed)


def japanese_meetings(count: int = 8, seed: int = 24) -> tuple[LabelledMeeting, ...]:
    """Japanese meetings labelled in English, the same ones for the same seed."""
    return _meetings("ja", count, seed)


# ---------------------------------------------------------------- a hallucinating model across languages


def _spoken(line: str) -> str:
    """What a generated line says, without its timestamp and speaker."""
    return line.split("] ", 1)[1].split(" ", 1)[1]


def _quote(meeting: LabelledMeeting, lines: Sequence[int]) -> str:
    return " ... ".join(_spoken(meeting.lines[n - 1]) for n in lines)


def cross_language_calls(meeting: LabelledMeeting, rng: random.Random) -> list[Call]:
    """For every labelled item the true call, with its quote, and ungrounded calls a check across
    languages can see: another owner, a wrong line, no such line, another item's quote, a due date the
    quote does not say, the item negated; a distractor recorded; a decision on a wrong line, one quoting
    a line where nothing was decided, and a decision negated."""
    people = sorted({_speaker(line) for line in meeting.lines})
    taken = {n for item in meeting.items for n in item.lines} | {
        n for d in meeting.decisions for n in d.lines
    }
    taken |= {n for _, n in meeting.distractors}
    fillers = [n for n in range(1, len(meeting.lines) + 1) if n not in taken]
    quotes = [_quote(meeting, item.lines) for item in meeting.items]
    calls: list[Call] = []
    for item, quote in zip(meeting.items, quotes, strict=True):
        call: dict[str, Any] = {
            "owner": item.owner,
            "task": item.task,
            "due": item.due,
            "lines": list(item.lines),
            "quote": quote,
        }
        calls.append(Call("true", "record_action_item", call, True))
        strangers = [
            p for p in people if p != item.owner and all(p not in meeting.lines[n - 1] for n in item.lines)
        ]
        calls.append(
            Call(
                "another owner",
                "record_action_item",
                {**call, "owner": rng.choice(strangers or ["Zed"])},
                False,
            )
        )
        if fillers:
            calls.append(
                Call("wrong line", "record_action_item", {**call, "lines": [rng.choice(fillers)]}, False)
            )
        calls.append(
            Call("no such line", "record_action_item", {**call, "lines": [len(meeting.lines) + 3]}, False)
        )
        others = [q for q in quotes if q != quote]
        if others:
            calls.append(
                Call("another quote", "record_action_item", {**call, "quote": rng.choice(others)}, False)
            )
        if item.due is not None:
            calls.append(Call("due changed", "record_action_item", {**call, "due": "Saturday"}, False))
        else:
            calls.append(Call("due invented", "record_action_item", {**call, "due": "Saturday"}, False))
        calls.append(
            Call("negated", "record_action_item", {**call, "task": f"{meeting.negated} {item.task}"}, False)
        )
    for named, number in meeting.distractors:
        quote = _spoken(meeting.lines[number - 1])
        calls.append(
            Call(
                "distractor",
                "record_action_item",
                {
                    "owner": named,
                    "task": meeting.items[0].task,
                    "due": None,
                    "lines": [number],
                    "quote": quote,
                },
                False,
            )
        )
    for decision in meeting.decisions:
        quote = _quote(meeting, decision.lines)
        call = {"decision": decision.text, "lines": list(decision.lines), "quote": quote}
        calls.append(Call("true", "record_decision", call, True))
        # A line where nothing was decided (not one where a decision changed later was taken).
        idle = [n for n in fillers if not any(word in meeting.lines[n - 1] for word in _DECIDING)]
        if fillers:
            calls.append(
                Call("wrong line", "record_decision", {**call, "lines": [rng.choice(fillers)]}, False)
            )
        if idle:
            number = rng.choice(idle)
            calls.append(
                Call(
                    "nothing decided",
                    "record_decision",
                    {**call, "lines": [number], "quote": _spoken(meeting.lines[number - 1])},
                    False,
                )
            )
        calls.append(
            Call(
                "negated",
                "record_decision",
                {**call, "decision": f"{meeting.negated} {decision.text}"},
                False,
            )
        )
    return calls


_DECIDING: Final = ("decided", "beschlossen", "決定")


def _speaker(line: str) -> str:
    return line.split("] ", 1)[1].split(" ", 1)[0].rstrip(":\uff1a")
