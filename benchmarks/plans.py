"""A synthetic meeting written from a shuffled plan of steps: commitments, decisions, distractors, filler."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["Writer", "write_plan"]

Task = TypeVar("Task", contravariant=True)
Decision = TypeVar("Decision", contravariant=True)


class Writer(Protocol[Task, Decision]):
    """Writes a meeting's lines one step at a time."""

    def commitment(self, task: Task) -> None: ...

    def decision(self, what: Decision) -> None: ...

    def distractor(self, task: Task) -> None: ...

    def filler(self) -> None: ...


def write_plan(
    writer: Writer[Task, Decision],
    plan: Sequence[str],
    tasks: list[Task],
    decisions: list[Decision],
    unused: Sequence[Task],
    rng: random.Random,
) -> None:
    """Each step of ``plan`` written in order: ``task`` and ``decision`` take the last of ``tasks`` and
    ``decisions``, ``distractor`` a random task of ``unused``, anything else a filler line."""
    for step in plan:
        if step == "task":
            writer.commitment(tasks.pop())
        elif step == "decision":
            writer.decision(decisions.pop())
        elif step == "distractor":
            writer.distractor(rng.choice(unused))
        else:
            writer.filler()
