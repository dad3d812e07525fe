"""The workflow file format: cattrs both ways, a typed error naming each problem's JSON path."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from application import WorkflowJsonError, workflow_from_json, workflow_to_json
from domain import Workflow, WorkflowStep
from tests.strategies import workflows

DOCUMENT = '{"name": "release", "steps": [{"id": "a", "name": "Build", "kind": "task"}]}'


@given(workflows)
def test_a_workflow_survives_the_round_trip(workflow: Workflow) -> None:
    assert workflow_from_json(workflow_to_json(workflow)) == workflow


@given(workflows)
def test_the_json_form_is_the_documented_one(workflow: Workflow) -> None:
    assert json.loads(workflow_to_json(workflow)) == {
        "name": workflow.name,
        "steps": [{"id": s.id, "name": s.name, "kind": s.kind} for s in workflow.steps],
    }


@pytest.mark.parametrize("text", [DOCUMENT, DOCUMENT.encode(), b"\xef\xbb\xbf" + DOCUMENT.encode()])
def test_text_bytes_and_a_byte_order_mark_are_read(text: str | bytes) -> None:
    assert workflow_from_json(text) == Workflow("release", (WorkflowStep("a", "Build", "task"),))


def test_non_ascii_is_written_as_it_is() -> None:
    assert '"Zoë"' in workflow_to_json(Workflow("Zoë"))


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("", ("the text is empty",)),
        ("[]", ("the top level is not a JSON object",)),
        ('{"name": "x", "steps": [}', ("the text is not valid JSON (at character 24)",)),
        ('{"name": "x", "name": "y", "steps": []}', ("the text is not valid JSON",)),
        ('{"steps": []}', ("required field is missing @ $.name",)),
        (
            '{"name": 1, "steps": {}}',
            ("expected a string @ $.name", "expected an array (each item an object) @ $.steps"),
        ),
        (
            '{"name": "x", "steps": [], "owner": "me"}',
            ("unexpected field; the allowed fields are: name, steps @ $",),
        ),
        (
            '{"name": "x", "steps": [{"id": "a", "name": "A"}]}',
            ("required field is missing @ $.steps[0].kind",),
        ),
        (
            '{"name": "x", "steps": [{"id": "a", "name": "A", "kind": "k"}, '
            '{"id": "a", "name": "B", "kind": "k"}]}',
            ("step ids must be unique @ $",),
        ),
        (
            '{"name": "x", "steps": [{"id": "", "name": "A", "kind": "k"}]}',
            ("step ids must not be empty @ $",),
        ),
    ],
)
def test_each_problem_is_named_with_its_path(text: str, problems: tuple[str, ...]) -> None:
    with pytest.raises(WorkflowJsonError) as caught:
        workflow_from_json(text)
    assert caught.value.problems == problems
    assert str(caught.value) == "not a workflow: " + "; ".join(problems)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(WorkflowJsonError, match="not UTF-8"):
        workflow_from_json(b"\xff\xfe{")


def test_the_error_is_a_value_error() -> None:
    assert issubclass(WorkflowJsonError, ValueError)
