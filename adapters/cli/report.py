"""What the command prints as its result: readable text, or the contract's JSON objects."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from application import MeetingSummary, ToolCallRecord, WorkflowEdit, workflow_to_json
from domain import Usage, Workflow

__all__ = [
    "edit_details",
    "edit_json",
    "edit_text",
    "error_code",
    "summary_details",
    "summary_json",
    "summary_text",
    "usage_json",
    "usage_line",
]

_SHOWN_ARGUMENTS = 100


def error_code(record: ToolCallRecord) -> str | None:
    """The error code the call was answered with (``invalid_tool_arguments``, ``unknown_step``, ...)."""
    result = record.result
    if not result.is_error:
        return None
    if isinstance(result.result, Mapping) and isinstance(result.result.get("error"), str):
        return str(result.result["error"])
    return "error"


def _tool_calls_json(records: Sequence[ToolCallRecord]) -> list[dict[str, Any]]:
    return [
        {
            "call_id": record.call.call_id,
            "name": record.call.name,
            "guarded": record.guarded,
            "error": error_code(record),
        }
        for record in records
    ]


def summary_json(summary: MeetingSummary) -> dict[str, Any]:
    return {
        "text": summary.text,
        "action_items": [
            {"owner": item.owner, "task": item.task, "due": item.due} for item in summary.action_items
        ],
        "decisions": list(summary.decisions),
        "complete": summary.complete,
        "tool_calls": _tool_calls_json(summary.tool_calls),
        "stop_reason": summary.stop_reason,
        "usage": usage_json(summary.usage, len(summary.run.responses)),
    }


def edit_json(edit: WorkflowEdit) -> dict[str, Any]:
    workflow: dict[str, Any] = json.loads(workflow_to_json(edit.workflow))
    return {
        "workflow": workflow,
        "text": edit.text,
        "complete": edit.complete,
        "tool_calls": _tool_calls_json(edit.tool_calls),
        "stop_reason": edit.stop_reason,
        "usage": usage_json(edit.usage, len(edit.run.responses)),
    }


def _compact(arguments: Mapping[str, object] | None) -> str:
    if not arguments:
        return ""
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())
    return text if len(text) <= _SHOWN_ARGUMENTS else text[: _SHOWN_ARGUMENTS - 3] + "..."


def _replacements(records: Sequence[ToolCallRecord]) -> dict[int, ToolCallRecord]:
    """For each guarded call (by position), the later call of the same tool that the guard let run."""
    replaced: dict[int, ToolCallRecord] = {}
    claimed: set[int] = set()
    for index, record in enumerate(records):
        if not record.guarded:
            continue
        for later in range(index + 1, len(records)):
            candidate = records[later]
            if later not in claimed and not candidate.guarded and candidate.call.name == record.call.name:
                replaced[index] = candidate
                claimed.add(later)
                break
    return replaced


def _tool_lines(records: Sequence[ToolCallRecord]) -> list[str]:
    guarded = sum(1 for record in records if record.guarded)
    lines = [f"Tool calls ({len(records)}, {guarded} guarded)"]
    replacements = _replacements(records)
    for index, record in enumerate(records):
        call = record.call
        if record.guarded:
            # The guard answers a call whose arguments did not parse, and a call id seen before.
            why = (
                f"arguments rejected ({call.parse_error.kind}, {len(call.raw_arguments)} chars)"
                if call.parse_error is not None
                else "refused"
            )
            replacement = replacements.get(index)
            then = "; not re-issued"
            if replacement is not None:
                again = replacement.call
                then = f"; re-issued as [{again.call_id}] {again.name}({_compact(again.arguments)})"
            answer = f"not run, the model got {error_code(record)}"
            lines.append(f"  GUARDED {call.name} [{call.call_id}]: {why}; {answer}{then}")
        elif record.result.is_error:
            lines.append(f"  error   {call.name}({_compact(call.arguments)}) -> {error_code(record)}")
        else:
            lines.append(f"  ok      {call.name}({_compact(call.arguments)})")
    return lines


def usage_line(usage: Usage | None, requests: int) -> str:
    """The run's spending in one line: requests, tokens and what the gateway billed."""
    asked = f"{requests} request{'s' if requests != 1 else ''}"
    if usage is None:
        return f"Usage: {asked}, tokens and cost not reported"
    tokens = f"{_count(usage.input_tokens)} input + {_count(usage.output_tokens)} output tokens"
    if usage.reasoning_tokens:
        tokens += f" ({usage.reasoning_tokens:,} reasoning)"
    cost = "cost not reported" if usage.cost_usd is None else f"cost ${usage.cost_usd:.6f}"
    return f"Usage: {asked}, {tokens}, {cost}"


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def usage_json(usage: Usage | None, requests: int) -> dict[str, Any]:
    """The run's spending for ``--format json``: the requests sent, the summed tokens and cost (null when
    not reported)."""
    usage = usage or Usage()
    return {
        "requests": requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cost_usd": usage.cost_usd,
    }


def summary_text(summary: MeetingSummary) -> str:
    lines = ["Summary"]
    lines += [f"  {line}" for line in summary.text.splitlines() or ["(no summary text)"]]
    return "\n".join(lines) + "\n\n" + summary_details(summary)


def summary_details(summary: MeetingSummary) -> str:
    """The summary without its text (``--stream`` has printed that as it arrived)."""
    lines = [f"Action items ({len(summary.action_items)})"]
    for number, item in enumerate(summary.action_items, 1):
        due = f" (due {item.due})" if item.due else ""
        lines.append(f"  {number}. {item.owner}: {item.task}{due}")
    lines += ["", f"Decisions ({len(summary.decisions)})"]
    lines += [f"  {number}. {decision}" for number, decision in enumerate(summary.decisions, 1)]
    lines += ["", *_tool_lines(summary.tool_calls)]
    return "\n".join(lines) + "\n"


def _step_lines(workflow: Workflow) -> list[str]:
    return [f"name: {workflow.name}"] + [f"{step.id}: {step.name} ({step.kind})" for step in workflow.steps]


def edit_text(before: Workflow, edit: WorkflowEdit) -> str:
    return f"Model: {edit.text or '(no text)'}\n\n" + edit_details(before, edit)


def edit_details(before: Workflow, edit: WorkflowEdit) -> str:
    """The edit without the model's text (``--stream`` has printed that as it arrived)."""
    lines = ["Workflow changes"]
    if edit.workflow == before:
        lines.append("  (no change)")
    else:
        # One line per step, marked "-" (gone or as it was), "+" (new or as it is now), " " (as it was).
        lines += [
            f"  {line}"
            for line in difflib.ndiff(_step_lines(before), _step_lines(edit.workflow))
            if not line.startswith("?")
        ]
    lines += ["", *_tool_lines(edit.tool_calls)]
    return "\n".join(lines) + "\n"
