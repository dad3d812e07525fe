"""Whether a workflow edit carried out its instruction, and if not, one line saying why."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from adapters.cli.display.report import error_code
from application import WorkflowEdit
from domain import Workflow, WorkflowStep

__all__ = ["why_not_carried_out"]

_LISTING_TOOLS: Final = frozenset({"list_steps"})
_SHOWN_TEXT: Final = 160
_EDIT_VERBS: Final = r"(?:add|insert|append|remove|delete|drop|rename|move)\b"
_CLAUSES: Final = re.compile(rf"\s*(?:[;,.]|\band\b|\bthen\b|\balso\b)\s*(?={_EDIT_VERBS})", re.IGNORECASE)
_QUOTES: Final = "\"'\u201c\u201d\u2018\u2019"
# The step an edit names, in the phrasing examples/README.md documents: "remove X", "rename X to Y",
# "move X to position N", "add a step Y after|before X".
_NAMES_EXISTING: Final = re.compile(
    r"^(?P<verb>remove|delete|drop|rename|move)\s+(?:the\s+)?(?:step\s+)?(?P<rest>.+)$", re.IGNORECASE
)
_ANCHOR: Final = re.compile(
    r"^(?:add|insert|append)\b.*?\s(?:after|before|following)\s+(?:the\s+)?(?:step\s+)?(?P<anchor>.+)$",
    re.IGNORECASE,
)


def _clean(phrase: str) -> str:
    phrase = phrase.strip().strip(_QUOTES + " .")
    return re.sub(r"\s+step$", "", phrase, flags=re.IGNORECASE).strip(_QUOTES + " ")


def _named_steps(instruction: str) -> Iterator[str]:
    """The step names the instruction's clauses refer to (not the new names it gives)."""
    for clause in _CLAUSES.split(instruction.strip()):
        clause = clause.strip()
        if (match := _NAMES_EXISTING.match(clause)) is not None:
            rest = match["rest"]
            if match["verb"].lower() in ("rename", "move") and " to " in rest:
                rest = rest.rsplit(" to ", 1)[0]
            yield _clean(rest)
        elif (match := _ANCHOR.match(clause)) is not None:
            yield _clean(match["anchor"])


def _matches(workflow: Workflow, phrase: str) -> list[WorkflowStep]:
    wanted = phrase.casefold()
    exact = [s for s in workflow.steps if wanted in (s.name.casefold(), s.id.casefold())]
    return exact or [s for s in workflow.steps if wanted in s.name.casefold()]


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_TEXT else text[: _SHOWN_TEXT - 3] + "..."


def why_not_carried_out(before: Workflow, edit: WorkflowEdit, instruction: str) -> str | None:
    """None when the instruction was carried out; otherwise why not, in one line.

    Carried out means the workflow changed, or some edit tool call succeeded (an edit may leave
    the workflow as it was, e.g. moving a step to where it already is). Otherwise the reason is,
    first that applies: a step the instruction names that no step matches, or that several steps
    match (named); the model's edit calls that all failed (with their error codes); else nothing
    was understood.
    """
    if edit.workflow != before:
        return None
    edits = [record for record in edit.tool_calls if record.call.name not in _LISTING_TOOLS]
    if any(not record.result.is_error for record in edits):
        return None
    for phrase in _named_steps(instruction):
        if not phrase:
            continue
        found = _matches(before, phrase)
        if not found:
            return f"no such step: {phrase!r} matches none of the {len(before.steps)} steps"
        if len(found) > 1:
            return f"several steps match {phrase!r}: " + ", ".join(repr(step.name) for step in found)
    if edits:
        failures = ", ".join(f"{record.call.name} -> {error_code(record)}" for record in edits)
        return f"every edit the model tried failed ({failures})"
    said = f" (the model said: {_one_line(edit.text)})" if edit.text.strip() else ""
    return f"nothing understood: the model made no edit{said}"
