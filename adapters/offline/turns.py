"""The offline model: reads a Responses request body and decides its next turn, deterministically."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import attrs

from adapters.offline.rules import Edit, describe_edit, plan_edits, read_meeting, summary_text, tagged
from domain import ArgumentsParseError, Workflow, WorkflowStep, parse_arguments

__all__ = [
    "SUMMARY_TOOLS",
    "WORKFLOW_TOOLS",
    "BadRequestError",
    "FunctionCallOut",
    "ModelRequest",
    "ModelTurn",
    "OutputItem",
    "ReasoningOut",
    "TextOut",
    "TurnUsage",
    "count_tokens",
    "respond",
]

SUMMARY_TOOLS: Final = ("list_participants", "record_action_item", "record_decision")
WORKFLOW_TOOLS: Final = ("list_steps", "add_step", "remove_step", "rename_step", "move_step")
_TOKEN: Final = re.compile(r"\w+|[^\w\s]")


class BadRequestError(ValueError):
    """The request body is not one the Responses API would accept; the server answers HTTP 400."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@attrs.frozen
class HistoryCall:
    """A function call the model made earlier, as the client sent it back."""

    call_id: str
    name: str
    arguments: str
    # Parsed once: a history can carry megabytes of arguments, compared against every planned call.
    parsed: Mapping[str, object] | None = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        value = parse_arguments(self.arguments)
        object.__setattr__(self, "parsed", None if isinstance(value, ArgumentsParseError) else value)


@attrs.frozen
class ModelRequest:
    """What the model reads from a request body."""

    instructions: str = ""
    tool_names: tuple[str, ...] = ()
    messages: tuple[tuple[str, str], ...] = ()
    calls: tuple[HistoryCall, ...] = ()
    outputs: Mapping[str, str] = attrs.field(factory=dict)
    reasoning: bool = False
    input_tokens: int = 0

    @classmethod
    def from_body(cls, body: object) -> ModelRequest:
        """Read a ``POST /v1/responses`` body; raises :class:`BadRequestError` like the API would."""
        if not isinstance(body, Mapping):
            raise BadRequestError("The request body must be a JSON object.")
        instructions = body.get("instructions") or ""
        if not isinstance(instructions, str):
            raise BadRequestError("'instructions' must be a string.", "instructions")
        tools = body.get("tools")
        tools = [] if tools is None else tools
        if not isinstance(tools, list):
            raise BadRequestError("'tools' must be an array.", "tools")
        tool_names = tuple(
            str(tool.get("name"))
            for tool in tools
            if isinstance(tool, Mapping) and tool.get("type") == "function"
        )
        messages, calls, outputs = _read_input(body.get("input"))
        _check_pairs(calls, outputs)
        counted = [instructions, json.dumps(tools) if tools else ""]
        counted.extend(text for _, text in messages)
        counted.extend(call.name + call.arguments for call in calls)
        counted.extend(outputs.values())
        return cls(
            instructions=instructions,
            tool_names=tool_names,
            messages=messages,
            calls=calls,
            outputs=outputs,
            reasoning=bool(body.get("reasoning")),
            input_tokens=sum(count_tokens(text) for text in counted),
        )

    @property
    def last_user_text(self) -> str:
        return next((text for role, text in reversed(self.messages) if role == "user"), "")


def _text_of(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequestError(f"'{where}' must be a string or an array of content parts.", where)
    parts = []
    for part in content:
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            raise BadRequestError(f"Every part of '{where}' must be an object with a 'type'.", where)
        if part["type"] in {"input_text", "output_text", "text", "summary_text", "refusal"}:
            parts.append(str(part.get("text", part.get("refusal", ""))))
    return "\n".join(parts)


def _read_input(value: object) -> tuple[tuple[tuple[str, str], ...], tuple[HistoryCall, ...], dict[str, str]]:
    if isinstance(value, str):
        return (("user", value),), (), {}
    if not isinstance(value, list) or not value:
        raise BadRequestError("'input' must be a non-empty string or array of input items.", "input")
    messages: list[tuple[str, str]] = []
    calls: list[HistoryCall] = []
    outputs: dict[str, str] = {}
    for index, item in enumerate(value):
        where = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise BadRequestError(f"'{where}' must be an object.", where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role not in {"user", "assistant", "system", "developer"}:
                raise BadRequestError(f"'{where}.role' must be user, assistant, system or developer.", where)
            messages.append((str(role), _text_of(item.get("content"), f"{where}.content")))
        elif kind == "function_call":
            fields = (item.get("call_id"), item.get("name"), item.get("arguments"))
            if not all(isinstance(field, str) for field in fields):
                raise BadRequestError(f"'{where}' needs string call_id, name and arguments.", where)
            calls.append(HistoryCall(*(str(field) for field in fields)))
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise BadRequestError(f"'{where}.call_id' must be a string.", where)
            outputs[call_id] = _text_of(item.get("output"), f"{where}.output")
        elif not isinstance(kind, str):
            raise BadRequestError(f"'{where}' has no 'type'.", where)
    return tuple(messages), tuple(calls), outputs


def _check_pairs(calls: Sequence[HistoryCall], outputs: Mapping[str, str]) -> None:
    """The API's own rule: every call in history has its output, and every output its call."""
    ids = {call.call_id for call in calls}
    for call in calls:
        if call.call_id not in outputs:
            raise BadRequestError(f"No tool output found for function call {call.call_id}.", "input")
    for call_id in outputs:
        if call_id not in ids:
            raise BadRequestError(
                f"No tool call found for function call output with call_id {call_id}.", "input"
            )


def count_tokens(text: str) -> int:
    """A plausible token count: words and punctuation marks."""
    return len(_TOKEN.findall(text))


# ---------------------------------------------------------------- the model's turn


@attrs.frozen
class ReasoningOut:
    summary: str
    encrypted_content: str


@attrs.frozen
class FunctionCallOut:
    call_id: str
    name: str
    arguments: str


@attrs.frozen
class TextOut:
    text: str


OutputItem = ReasoningOut | FunctionCallOut | TextOut


@attrs.frozen
class TurnUsage:
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@attrs.frozen
class ModelTurn:
    """The model's answer: output items in order, and what they cost."""

    items: tuple[OutputItem, ...]
    usage: TurnUsage

    @property
    def calls(self) -> tuple[FunctionCallOut, ...]:
        return tuple(item for item in self.items if isinstance(item, FunctionCallOut))


@attrs.frozen
class _Planned:
    name: str
    arguments: Mapping[str, object] = attrs.field(hash=False)

    @property
    def raw(self) -> str:
        return json.dumps(self.arguments, ensure_ascii=False)


def _is_invalid_arguments(output: str) -> bool:
    try:
        value = json.loads(output)
    except ValueError:
        return "invalid_tool_arguments" in output
    return isinstance(value, Mapping) and value.get("error") == "invalid_tool_arguments"


def _error_code(output: str) -> str | None:
    """The ``error`` code of a tool's error result; None for a result that is not an error."""
    try:
        value = json.loads(output)
    except ValueError:
        return None
    code = value.get("error") if isinstance(value, Mapping) else None
    return code if isinstance(code, str) else None


def _next_calls(request: ModelRequest, stage: Sequence[_Planned]) -> tuple[list[_Planned], bool] | None:
    """What is left of ``stage``: (calls to make, first attempt?) or None when the stage is done.

    A planned call is done once a call with the same name and equal arguments is in history. A
    stage that was never attempted is made whole; after that, only calls whose earlier attempt got
    an ``invalid_tool_arguments`` result are made again, so no tool is called twice otherwise.
    """
    names = {planned.name for planned in stage}
    attempted = [call for call in request.calls if call.name in names]
    pending = [
        planned
        for planned in stage
        if not any(call.name == planned.name and call.parsed == planned.arguments for call in attempted)
    ]
    if not attempted:
        return (pending, True) if pending else None
    rejected = [
        call.name for call in attempted if _is_invalid_arguments(request.outputs.get(call.call_id, ""))
    ]
    retry = []
    for planned in pending:
        if planned.name in rejected:
            rejected.remove(planned.name)
            retry.append(planned)
    return (retry, False) if retry else None


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


def _calls(request: ModelRequest, planned: Sequence[_Planned], *, malformed: bool) -> list[FunctionCallOut]:
    conversation = _digest(request.messages[:1], request.instructions)
    calls = [
        FunctionCallOut(
            call_id="call_" + _digest(conversation, len(request.calls), index, call.name)[:24],
            name=call.name,
            arguments=call.raw,
        )
        for index, call in enumerate(planned)
    ]
    if malformed and calls:
        # The second action item, else the second call: the calls around the broken one must still run.
        items = [call for call in calls if call.name == "record_action_item"]
        victim = items[1] if len(items) > 1 else calls[1] if len(calls) > 1 else calls[0]
        broken = attrs.evolve(victim, arguments=victim.arguments[: len(victim.arguments) // 2])
        calls[calls.index(victim)] = broken
    return calls


def _summary_turn(request: ModelRequest, *, malformed: bool) -> tuple[list[OutputItem], str]:
    meeting = read_meeting(tagged(request.last_user_text, "transcript"))
    stage: list[_Planned] = []
    if "list_participants" in request.tool_names:
        stage.append(_Planned("list_participants", {}))
    if "record_action_item" in request.tool_names:
        stage.extend(
            _Planned("record_action_item", {"owner": item.owner, "task": item.task, "due": item.due})
            for item in meeting.action_items
        )
    if "record_decision" in request.tool_names:
        stage.extend(_Planned("record_decision", {"decision": decision}) for decision in meeting.decisions)
    step = _next_calls(request, stage)
    if step is not None and step[0]:
        planned, first = step
        counts = (len(meeting.participants), len(meeting.action_items), len(meeting.decisions))
        thought = (
            "The transcript has {} participants, {} action items and {} decisions; "
            "recording them with the tools.".format(*counts)
            if first
            else "A tool rejected malformed arguments; sending those calls again with valid JSON."
        )
        return list(_calls(request, planned, malformed=malformed and not request.calls)), thought
    return [TextOut(summary_text(meeting))], "Every item is recorded; writing the summary."


def _workflow_from(output: str) -> Workflow | None:
    try:
        value = json.loads(output)
    except ValueError:
        return None
    name = "the workflow"
    if isinstance(value, Mapping):
        name = str(value.get("name") or name)
        value = value.get("steps")
    if not isinstance(value, list):
        return None
    steps = []
    for entry in value:
        if not isinstance(entry, Mapping) or not entry.get("id"):
            return None
        steps.append(WorkflowStep(str(entry["id"]), str(entry.get("name", "")), str(entry.get("kind", ""))))
    try:
        return Workflow(name, tuple(steps))
    except ValueError:
        return None


def _workflow_turn(request: ModelRequest, *, malformed: bool) -> tuple[list[OutputItem], str]:
    listing = [_Planned("list_steps", {})] if "list_steps" in request.tool_names else []
    step = _next_calls(request, listing)
    if step is not None and step[0]:
        thought = (
            "Reading the workflow's steps first." if step[1] else "Listing the steps again, with valid JSON."
        )
        return list(_calls(request, step[0], malformed=malformed and not request.calls)), thought
    listed = [call for call in request.calls if call.name == "list_steps" and call.parsed == {}]
    workflow = _workflow_from(request.outputs.get(listed[-1].call_id, "")) if listed else None
    if workflow is None:
        return [TextOut("I could not read the workflow's steps, so I changed nothing.")], "No steps to edit."
    edits, skipped = plan_edits(tagged(request.last_user_text, "instruction"), workflow)
    offered = [edit for edit in edits if edit.name in request.tool_names]
    step = _next_calls(request, [_Planned(edit.name, edit.arguments) for edit in offered])
    if step is not None and step[0]:
        thought = f"Turning the instruction into {len(step[0])} edit calls."
        return list(_calls(request, step[0], malformed=malformed and not request.calls)), thought
    return [TextOut(_edit_report(request, workflow, offered, skipped))], "Reporting what changed."


def _edit_report(
    request: ModelRequest, workflow: Workflow, edits: Sequence[Edit], skipped: Iterable[str]
) -> str:
    names = {step.id: step.name for step in workflow.steps}
    done: list[str] = []
    failed: list[str] = []
    for edit in edits:
        made = [call for call in request.calls if call.name == edit.name and call.parsed == edit.arguments]
        codes = [_error_code(request.outputs.get(call.call_id, "")) for call in made]
        if None in codes:
            done.append(describe_edit(edit, names))
        else:
            failed.append(describe_edit(edit, names, done=False) + f" ({codes[-1] if codes else 'not made'})")
    parts = [
        f"Edited {workflow.name}: " + "; ".join(done) + "." if done else f"Left {workflow.name} unchanged."
    ]
    if failed:
        parts.append("Could not " + "; ".join(failed) + ".")
    unread = list(skipped)
    if unread:
        parts.append("Not understood: " + "; ".join(f"'{clause}'" for clause in unread) + ".")
    return " ".join(parts)


def _echo_turn(request: ModelRequest) -> tuple[list[OutputItem], str]:
    words = request.last_user_text.split()
    opening = " ".join(words[:12]) + (" …" if len(words) > 12 else "")
    text = f"This is the offline stand-in model. Your message has {len(words)} words: “{opening}”."
    return [TextOut(text)], "No tools are offered; answering in plain text."


def respond(request: ModelRequest, *, malformed: bool = False) -> ModelTurn:
    """The model's next turn: tool calls for a pipeline step, or text when the work is done.

    The pipeline is told by the offered tools: the summary tools, the workflow tools, or none.
    ``malformed`` truncates the arguments of one call in the first tool-calling turn.
    """
    if any(name in request.tool_names for name in SUMMARY_TOOLS):
        items, thought = _summary_turn(request, malformed=malformed)
    elif any(name in request.tool_names for name in WORKFLOW_TOOLS):
        items, thought = _workflow_turn(request, malformed=malformed)
    else:
        items, thought = _echo_turn(request)
    reasoning_tokens = 0
    if request.reasoning:
        secret = base64.urlsafe_b64encode(_digest("reasoning", request.messages, len(request.calls)).encode())
        items.insert(0, ReasoningOut(summary=thought, encrypted_content="offline-" + secret.decode()))
        reasoning_tokens = count_tokens(thought)
    written = sum(
        count_tokens(item.text) if isinstance(item, TextOut) else count_tokens(item.name + item.arguments)
        for item in items
        if not isinstance(item, ReasoningOut)
    )
    usage = TurnUsage(request.input_tokens, written + reasoning_tokens, reasoning_tokens)
    return ModelTurn(items=tuple(items), usage=usage)
