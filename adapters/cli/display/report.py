"""What the command prints as its result: readable text, or the contract's JSON objects."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence

from adapters.rendering import edit_json, error_code, summary_json, usage_json
from application import (
    UNGROUNDED,
    ActionItem,
    ApprovalRequest,
    Decision,
    MeetingSummary,
    ToolCallRecord,
    ToolRun,
    WorkflowEdit,
)
from application.meetings.transcripts import clock
from application.scrubbing import shown_json
from domain import Usage, Workflow

__all__ = [
    "describe_request",
    "edit_details",
    "edit_json",
    "edit_text",
    "error_code",
    "line_label",
    "summary_details",
    "summary_json",
    "summary_text",
    "usage_json",
    "usage_line",
]

_SHOWN_ARGUMENTS = 100
# Argument strings are compared on their first characters only: enough to tell calls apart, and cheap.
_COMPARED_ARGUMENTS = 2_000


def _when(item: ActionItem | Decision) -> str:
    """`` at 01:48-01:55`` for an item of a recording; nothing for plain text."""
    if item.start is None:
        return ""
    return f" at {clock(item.start)}" + (f"-{clock(item.end)}" if item.end is not None else "")


def line_label(lines: Sequence[int]) -> str:
    """Cited lines as a reader looks them up: ``L12``, ``L12-14``, ``L3, L12-14``."""
    runs: list[list[int]] = []
    for number in sorted(set(lines)):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"L{run[0]}" if len(run) == 1 else f"L{run[0]}-{run[-1]}" for run in runs)


def _compact(arguments: Mapping[str, object] | None) -> str:
    if not arguments:
        return ""
    text = ", ".join(f"{key}={shown_json(value, ensure_ascii=False)}" for key, value in arguments.items())
    return text if len(text) <= _SHOWN_ARGUMENTS else text[: _SHOWN_ARGUMENTS - 3] + "..."


def _ungrounded(record: ToolCallRecord) -> bool:
    return error_code(record) == UNGROUNDED


def _same_item(refused: ToolCallRecord, candidate: ToolCallRecord) -> bool:
    """Whether ``candidate`` looks like ``refused`` sent again: the same arguments but the lines, or,
    for arguments that did not parse, arguments that start the same way."""
    if refused.call.arguments is not None and candidate.call.arguments is not None:
        before = {key: value for key, value in refused.call.arguments.items() if key != "lines"}
        after = {key: value for key, value in candidate.call.arguments.items() if key != "lines"}
        return before == after
    raw = refused.call.raw_arguments
    return bool(raw) and candidate.call.raw_arguments.startswith(raw)


def _rounds(records: Sequence[ToolCallRecord], run: ToolRun) -> list[int | None]:
    """The round of each record (the index of the answer that made the call), None where unknown."""
    made_in: dict[str, list[int]] = {}
    for number, response in enumerate(run.responses):
        for call in response.function_calls:
            made_in.setdefault(call.call_id, []).append(number)
    # A call id the model repeated is answered once per time it was made, in order.
    return [queue.pop(0) if (queue := made_in.get(record.call.call_id)) else None for record in records]


def _likeness(refused: str, candidate: str) -> tuple[int, int]:
    """How much of what a refused call asked for a candidate asks for too: the characters of
    ``refused`` found in order in ``candidate``, then their common start (a truncated string is all
    found, from the start, in the whole it was cut from)."""
    refused, candidate = refused[:_COMPARED_ARGUMENTS], candidate[:_COMPARED_ARGUMENTS]
    matcher = difflib.SequenceMatcher(None, refused, candidate, autojunk=False)
    found = sum(block.size for block in matcher.get_matching_blocks())
    start = next(
        (index for index, (a, b) in enumerate(zip(refused, candidate, strict=False)) if a != b),
        min(len(refused), len(candidate)),
    )
    return found, start


def _after(later: int | None, earlier: int | None) -> bool:
    """Whether a call of round ``later`` can answer a refusal in round ``earlier`` (unknown: it can)."""
    return later is None or earlier is None or later > earlier


def _replacements(records: Sequence[ToolCallRecord], run: ToolRun) -> dict[int, ToolCallRecord]:
    """For each guarded or ungrounded call (by position), the call the model re-issued it as, if it did.

    That is a later call of the same tool that ran, from the round after (the model reads the refusal
    only then; any later round if that one has none); of those, the same item when one is found
    (:func:`_same_item`), and the one whose arguments are nearest the refused call's, so that the
    truncated ``{"owner": "Maya", "task": "upd`` pairs with Maya's call and not with the next
    ``record_action_item`` in line. Each call replaces at most one.
    """
    rounds = _rounds(records, run)
    replaced: dict[int, ToolCallRecord] = {}
    claimed: set[int] = set()
    for index, record in enumerate(records):
        if not (record.guarded or _ungrounded(record)):
            continue
        made_in = rounds[index]
        later = [
            at
            for at in range(index + 1, len(records))
            if at not in claimed
            and not records[at].guarded
            and not records[at].result.is_error
            and records[at].call.name == record.call.name
            and _after(rounds[at], made_in)
        ]
        if made_in is not None:
            later = [at for at in later if rounds[at] == made_in + 1] or later
        candidates = [at for at in later if _same_item(record, records[at])] or later
        if not candidates:
            continue
        raw = record.call.raw_arguments
        # max keeps the first of equals: the earliest call when two are as near.
        best = max(candidates, key=lambda at: _likeness(raw, records[at].call.raw_arguments))
        replaced[index] = records[best]
        claimed.add(best)
    return replaced


def _tool_lines(records: Sequence[ToolCallRecord], run: ToolRun) -> list[str]:
    guarded = sum(1 for record in records if record.guarded)
    ungrounded = sum(1 for record in records if _ungrounded(record))
    refused = f", {ungrounded} ungrounded" if ungrounded else ""
    lines = [f"Tool calls ({len(records)}, {guarded} guarded{refused})"]
    replacements = _replacements(records, run)
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
        elif _ungrounded(record):
            # The grounding check: the call parsed, but its cited lines do not show it.
            replacement = replacements.get(index)
            then = "; not cited again"
            if replacement is not None:
                again = replacement.call
                then = f"; cited again as [{again.call_id}] {again.name}({_compact(again.arguments)})"
            lines.append(
                f"  UNGROUNDED {call.name}({_compact(call.arguments)}): not recorded, the model got"
                f" {UNGROUNDED}{then}"
            )
        elif record.result.is_error:
            lines.append(f"  error   {call.name}({_compact(call.arguments)}) -> {error_code(record)}")
        else:
            lines.append(f"  ok      {call.name}({_compact(call.arguments)})")
    return lines


def usage_line(usage: Usage | None, requests: int) -> str:
    """The run's spending in one line: requests, tokens (with the share of the input read from the prompt
    cache, when reported) and what the gateway billed."""
    asked = f"{requests} request{'s' if requests != 1 else ''}"
    if usage is None:
        return f"Usage: {asked}, tokens and cost not reported"
    share = usage.cached_share
    cached = "" if share is None else f" ({share:.0%} cached)"
    tokens = f"{_count(usage.input_tokens)} input{cached} + {_count(usage.output_tokens)} output tokens"
    if usage.reasoning_tokens:
        tokens += f" ({usage.reasoning_tokens:,} reasoning)"
    cost = "cost not reported" if usage.cost_usd is None else f"cost ${usage.cost_usd:.6f}"
    return f"Usage: {asked}, {tokens}, {cost}"


def _count(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def summary_text(summary: MeetingSummary, transcript: Sequence[str] | None = None) -> str:
    """The summary for people; with ``transcript`` (its lines), each item's cited lines under it."""
    lines = ["Summary"]
    lines += [f"  {line}" for line in summary.text.splitlines() or ["(no summary text)"]]
    return "\n".join(lines) + "\n\n" + summary_details(summary, transcript)


def _quoted(cited: Sequence[int], transcript: Sequence[str] | None) -> list[str]:
    if transcript is None:
        return []
    width = len(str(max(cited, default=0)))
    return [
        f"       L{number:<{width}} | {transcript[number - 1]}"
        for number in cited
        if 0 < number <= len(transcript)
    ]


def summary_details(summary: MeetingSummary, transcript: Sequence[str] | None = None) -> str:
    """The summary without its text (``--stream`` has printed that as it arrived). With
    ``transcript`` (its lines, as the summary numbers them) each item quotes the lines it cites."""
    lines = [f"Action items ({len(summary.action_items)})"]
    for number, item in enumerate(summary.action_items, 1):
        due = f" (due {item.due})" if item.due else ""
        lines.append(f"  {number}. {item.owner}: {item.task}{due} [{line_label(item.lines)}{_when(item)}]")
        lines += _quoted(item.lines, transcript)
    lines += ["", f"Decisions ({len(summary.decisions)})"]
    for number, decision in enumerate(summary.decisions, 1):
        lines.append(f"  {number}. {decision.text} [{line_label(decision.lines)}{_when(decision)}]")
        lines += _quoted(decision.lines, transcript)
    if summary.failed_chunks:
        missing = ", ".join(f"L{first}-{last}" for first, last in summary.failed_chunks)
        lines += ["", f"Not covered: {missing} (those parts of the meeting failed; see stderr)"]
    lines += ["", *_tool_lines(summary.tool_calls, summary.run)]
    return "\n".join(lines) + "\n"


def _step_lines(workflow: Workflow) -> list[str]:
    return [f"name: {workflow.name}"] + [f"{step.id}: {step.name} ({step.kind})" for step in workflow.steps]


def _step(workflow: Workflow | None, step_id: object) -> str:
    """``s3 "Deploy"`` for a step of ``workflow``; the id alone for a step it does not have."""
    shown = str(step_id)
    if workflow is not None:
        for step in workflow.steps:
            if step.id == shown:
                return f'{shown} "{step.name}"'
    return shown


def describe_request(request: ApprovalRequest, workflow: Workflow | None) -> str:
    """What a held workflow call would do, in words: ``Remove step s3 "Deploy"``.

    Steps are named as ``workflow`` has them (the workflow as it was when the call was held).
    """
    arguments: Mapping[str, object] = request.arguments
    step = _step(workflow, arguments.get("step_id"))
    if request.name == "remove_step":
        return f"Remove step {step}"
    if request.name == "rename_step":
        return f'Rename step {step} to "{arguments.get("name")}"'
    if request.name == "move_step":
        return f"Move step {step} to position {arguments.get('position')}"
    if request.name == "add_step":
        after = arguments.get("after")
        where = "at the end" if after is None else f"after {_step(workflow, after)}"
        return f'Add step "{arguments.get("name")}" ({arguments.get("kind")}) {where}'
    if request.name == "list_steps":
        return "List the steps"
    return f"Call {request.name}"


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
    lines += ["", *_tool_lines(edit.tool_calls, edit.run)]
    if edit.pending:
        lines += ["", f"Waiting for approval ({len(edit.pending)})"]
        lines += [
            f"  [{request.call_id}] {describe_request(request, edit.workflow)}" for request in edit.pending
        ]
    return "\n".join(lines) + "\n"
