"""Near misses and fair paraphrases of the grounding benchmark's labelled items, one kind at a time.

A near miss cites the right lines but changes what they say; a fair paraphrase says what they say in
other words. Both are made from each labelled item of the synthetic meetings and the meeting's own
vocabulary, so what each one should get (refused, recorded) is known by construction.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any, Final

import attrs

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import LoopSettings, SummaryAgent

__all__ = ["NEAR_MISSES", "PARAPHRASES", "Call", "KindScore", "paraphrases_and_near_misses", "scored"]

NEAR_MISSES: Final = (
    "due changed", "due invented", "object substituted", "verb substituted", "negated", "reversed",
    "detail changed",
)  # fmt: skip
PARAPHRASES: Final = (
    "articles dropped",
    "noun phrase reordered",
    "possessive",
    "decision shortened",
    "due written another way",
)
# The same due date as the meeting's own DUES, written another way.
OTHER_WAYS: Final = {
    "Friday": "Fri",
    "tomorrow": "tmrw",
    "end of week": "EOW",
    "Monday": "Mon",
    "next sprint": "the next sprint",
}
CALLS_PER_RUN: Final = 100
"""Calls per scripted answer: well under any per-answer call limit."""


@attrs.frozen
class Call:
    """One record call of a kind, and whether the grounding rule should record it."""

    kind: str
    name: str
    arguments: dict[str, Any]
    grounded: bool


@attrs.frozen
class KindScore:
    """Of one kind: how many calls, and how many got what they should (refused or recorded)."""

    kind: str
    grounded: bool
    calls: int = 0
    as_expected: int = 0

    @property
    def share(self) -> float:
        return self.as_expected / self.calls if self.calls else 1.0


def _words(text: str) -> list[str]:
    return text.split()


def _swap(words: list[str], a: int, b: int) -> list[str]:
    words = list(words)
    words[a], words[b] = words[b], words[a]
    return words


def _other(rng: random.Random, options: Sequence[str], said: str) -> str | None:
    """One of ``options`` that the cited lines do not say."""
    fits = [option for option in options if option.casefold() not in said.casefold()]
    return rng.choice(fits) if fits else None


def paraphrases_and_near_misses(
    items: Sequence[tuple[str, str, tuple[int, ...], str | None]],
    decisions: Sequence[tuple[str, tuple[int, ...]]],
    lines: Sequence[str],
    dues: Sequence[str],
    rng: random.Random,
) -> list[Call]:
    """Every near miss and fair paraphrase that applies to each labelled item (owner, task, lines, due
    said) and decision (text, lines) of one meeting."""
    tasks = [task for _, task, _, _ in items]
    verbs = [task.split()[0] for task in tasks] + ["archive", "cancel", "delay"]
    objects = [task.split()[-1] for task in tasks] + ["contract", "roadmap", "invoice"]
    modifiers = [task.split()[-2] for task in tasks if len(task.split()) > 2] + ["legacy", "mobile"]
    calls: list[Call] = []
    for owner, task, cited, due in items:
        said = " ".join(lines[n - 1] for n in cited)
        base = {"owner": owner, "task": task, "due": due, "lines": list(cited)}

        def item(kind: str, grounded: bool, base: dict[str, Any] = base, **changes: Any) -> None:
            calls.append(Call(kind, "record_action_item", {**base, **changes}, grounded))

        words = _words(task)
        item("true", True)
        if due is not None:
            changed = _other(rng, [d for d in dues if d != due], said)
            if changed is not None:
                item("due changed", False, due=changed)
            item("due written another way", True, due=OTHER_WAYS.get(due, due))
        else:
            invented = _other(rng, dues, said)
            if invented is not None:
                item("due invented", False, due=invented)
        swapped_object = _other(rng, [o for o in objects if o != words[-1]], said)
        if swapped_object is not None:
            item("object substituted", False, task=" ".join([*words[:-1], swapped_object]))
        swapped_verb = _other(rng, [v for v in verbs if v != words[0]], said)
        if swapped_verb is not None:
            item("verb substituted", False, task=" ".join([swapped_verb, *words[1:]]))
        item("negated", False, task=f"do not {task}")
        item("reversed", False, task=" ".join(_swap(words, -1, -2)))
        if len(words) > 2:
            detail = _other(rng, [m for m in modifiers if m != words[-2]], said)
            if detail is not None:
                item("detail changed", False, task=" ".join([*words[:-2], detail, words[-1]]))
        item("articles dropped", True, task=" ".join(w for w in words if w not in {"the", "a", "an"}))
        if "the" in words and len(words) > 2:
            at = words.index("the")
            head, rest = words[-1], words[at + 1 : -1]
            item("noun phrase reordered", True, task=" ".join([*words[:at], "the", head, "for the", *rest]))
            item("possessive", True, task=" ".join([*words[:at], f"{owner}'s", *words[at + 1 :]]))
    for text, cited in decisions:
        said = " ".join(lines[n - 1] for n in cited)
        words = _words(text)

        def decision(kind: str, grounded: bool, changed: str, cited: tuple[int, ...] = cited) -> None:
            calls.append(Call(kind, "record_decision", {"decision": changed, "lines": list(cited)}, grounded))

        decision("true", True, text)
        decision("negated", False, f"do not {text}")
        # Verb and object change places: "move the launch" -> "launch the move".
        decision("reversed", False, " ".join(_swap(words, 0, 2)))
        verb = _other(rng, [v for v in verbs if v != words[0]], said)
        if verb is not None:
            decision("verb substituted", False, " ".join([verb, *words[1:]]))
        noun = _other(rng, [o for o in objects if o != words[2]], said)
        if noun is not None:
            decision("object substituted", False, " ".join([*words[:2], noun, *words[3:]]))
        time = _other(rng, ["in May", "in October", "next quarter", "on Monday", "in November"], said)
        if time is not None:
            decision("detail changed", False, " ".join([*words[:-2], time]))
        decision("articles dropped", True, " ".join(w for w in words if w not in {"the", "a", "an"}))
        if words[1] == "the":
            decision("possessive", True, " ".join([words[0], "our", *words[2:]]))
        decision("decision shortened", True, " ".join(words[:-2]))
    return calls


async def scored(
    transcript: str, calls: Sequence[Call], *, language: str = "auto"
) -> list[tuple[Call, bool]]:
    """Each call sent by a scripted model through the summary pipeline (items in ``language``), with
    whether it was recorded."""
    verdicts: list[tuple[Call, bool]] = []
    for start in range(0, len(calls), CALLS_PER_RUN):
        batch = calls[start : start + CALLS_PER_RUN]
        chat = ScriptedChat(
            ScriptedTurn(
                calls=tuple((f"call_{i}", c.name, json.dumps(c.arguments)) for i, c in enumerate(batch))
            ),
            ScriptedTurn(text="Summary."),
        )
        summary = await SummaryAgent(chat, LoopSettings(), language=language).summarize(transcript)
        for call, record in zip(batch, summary.tool_calls, strict=True):
            result = record.result.result
            refused = isinstance(result, dict) and result.get("error") == "ungrounded"
            verdicts.append((call, not refused and not record.result.is_error))
    return verdicts
