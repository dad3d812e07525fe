"""The JSON form of a workflow, ``{"name": ..., "steps": [{"id", "name", "kind"}]}``, both ways."""

from __future__ import annotations

import json
from typing import Final

import attrs

from application.tools.parameters import ParameterError, describe_errors, strict_converter
from domain import ArgumentsParseError, Workflow, WorkflowStep, parse_arguments

__all__ = ["WorkflowJsonError", "workflow_from_json", "workflow_to_json"]


class WorkflowJsonError(ValueError):
    """The text is not a workflow; ``problems`` lists each one with its JSON path (``$.steps[0].id``)."""

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__("not a workflow: " + "; ".join(problems))
        self.problems = problems


@attrs.frozen
class _StepJson:
    id: str
    name: str
    kind: str


def _unique_ids(instance: _WorkflowJson, attribute: object, steps: tuple[_StepJson, ...]) -> None:
    ids = [step.id for step in steps]
    if len(set(ids)) != len(ids):
        raise ParameterError("step ids must be unique")
    if any(not step_id for step_id in ids):
        raise ParameterError("step ids must not be empty")


@attrs.frozen
class _WorkflowJson:
    """The file format, kept apart from the domain value so that its rules report JSON paths."""

    name: str
    steps: tuple[_StepJson, ...] = attrs.field(validator=_unique_ids)


# One converter per purpose: this one reads workflow files, rejecting unknown keys and wrong types.
_CONVERTER: Final = strict_converter()


def workflow_from_json(text: str | bytes) -> Workflow:
    """Read a workflow; raises :class:`WorkflowJsonError` for anything that is not one.

    The same strict JSON rules as tool arguments apply (no ``NaN``, no repeated keys), and a
    workflow has exactly the keys ``name`` and ``steps``, each step exactly ``id``, ``name``, ``kind``.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise WorkflowJsonError(("the file is not UTF-8 text",)) from None
    parsed = parse_arguments(text.lstrip("\ufeff"))
    if isinstance(parsed, ArgumentsParseError):
        raise WorkflowJsonError((_json_problem(parsed),))
    try:
        document = _CONVERTER.structure(dict(parsed), _WorkflowJson)
    except Exception as exc:
        raise WorkflowJsonError(describe_errors(exc)) from None
    return Workflow(document.name, tuple(WorkflowStep(s.id, s.name, s.kind) for s in document.steps))


def _json_problem(error: ArgumentsParseError) -> str:
    if error.kind == "empty":
        return "the text is empty"
    if error.kind == "not_an_object":
        return "the top level is not a JSON object"
    at = f" (at character {error.position})" if error.position is not None else ""
    return f"the text is not valid JSON{at}"


def workflow_to_json(workflow: Workflow) -> str:
    """The workflow's JSON form, indented for people; :func:`workflow_from_json` reads it back."""
    document = _WorkflowJson(workflow.name, tuple(_StepJson(s.id, s.name, s.kind) for s in workflow.steps))
    return json.dumps(_CONVERTER.unstructure(document), indent=2, ensure_ascii=False)
