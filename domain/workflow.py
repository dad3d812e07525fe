"""Workflows the workflow-editor pipeline edits: pure values with pure editing operations."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = ["UnknownStepError", "Workflow", "WorkflowStep"]


class UnknownStepError(LookupError):
    """An edit named a step id that the workflow does not have."""

    def __init__(self, step_id: str) -> None:
        super().__init__(f"no step with id {step_id!r}")
        self.step_id = step_id


@attrs.frozen
class WorkflowStep:
    """One step of a workflow."""

    id: str = attrs.field(validator=attrs.validators.min_len(1))
    name: str
    kind: str


def _unique_ids(
    instance: Workflow, attribute: attrs.Attribute[tuple[WorkflowStep, ...]], steps: tuple[WorkflowStep, ...]
) -> None:
    ids = [step.id for step in steps]
    if len(set(ids)) != len(ids):
        raise ValueError("workflow step ids must be unique")


def _steps(value: Iterable[WorkflowStep]) -> tuple[WorkflowStep, ...]:
    return tuple(value)


@attrs.frozen
class Workflow:
    """A named, ordered tuple of steps. Every edit returns a new workflow."""

    name: str
    steps: tuple[WorkflowStep, ...] = attrs.field(default=(), converter=_steps, validator=_unique_ids)

    def index_of(self, step_id: str) -> int:
        """The position of ``step_id``; raises :class:`UnknownStepError` if it is absent."""
        for index, step in enumerate(self.steps):
            if step.id == step_id:
                return index
        raise UnknownStepError(step_id)

    def step(self, step_id: str) -> WorkflowStep:
        return self.steps[self.index_of(step_id)]

    def next_step_id(self) -> str:
        """A fresh id of the form ``step-N`` that no step uses yet."""
        taken = {step.id for step in self.steps}
        n = len(self.steps) + 1
        while f"step-{n}" in taken:
            n += 1
        return f"step-{n}"

    def add_step(self, name: str, kind: str, after: str | None = None) -> tuple[Workflow, WorkflowStep]:
        """Add a step after ``after`` (at the end when None); returns the new workflow and step."""
        step = WorkflowStep(self.next_step_id(), name, kind)
        at = len(self.steps) if after is None else self.index_of(after) + 1
        return attrs.evolve(self, steps=(*self.steps[:at], step, *self.steps[at:])), step

    def remove_step(self, step_id: str) -> Workflow:
        at = self.index_of(step_id)
        return attrs.evolve(self, steps=self.steps[:at] + self.steps[at + 1 :])

    def rename_step(self, step_id: str, name: str) -> Workflow:
        at = self.index_of(step_id)
        renamed = attrs.evolve(self.steps[at], name=name)
        return attrs.evolve(self, steps=(*self.steps[:at], renamed, *self.steps[at + 1 :]))

    def move_step(self, step_id: str, position: int) -> Workflow:
        """Move a step to a 1-based ``position``, clamped to the workflow's bounds."""
        at = self.index_of(step_id)
        step = self.steps[at]
        rest = self.steps[:at] + self.steps[at + 1 :]
        to = min(max(position, 1), len(self.steps)) - 1
        return attrs.evolve(self, steps=(*rest[:to], step, *rest[to:]))
