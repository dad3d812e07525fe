"""The offline model: reads a Responses request body and writes its next output items, deterministically."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

import attrs

from adapters.offline.render import call_item, message_item, reasoning_item, usage
from adapters.offline.rules import (
    Call,
    describe_edit,
    numbered_lines,
    plan_edits,
    read_numbered,
    spoken,
    summary_text,
    tagged,
)
from application.workflows.json_form import WorkflowJsonError, workflow_from_json
from domain import ArgumentsParseError, Workflow, parse_arguments

__all__ = ["Item", "ModelRequest", "RefusedError", "count_tokens", "digest", "respond"]

_SUMMARY_TOOLS: Final = ("list_participants", "record_action_item", "record_decision")
_WORKFLOW_TOOLS: Final = ("list_steps", "add_step", "remove_step", "rename_step", "move_step")
_ROLES: Final = ("user", "assistant", "system", "developer")
_TEXT_PARTS: Final = ("input_text", "output_text", "text", "summary_text", "refusal")
_TOKEN: Final = re.compile(r"\w+|[^\w\s]")
_INVALID: Final = "invalid_tool_arguments"
_UNGROUNDED: Final = "ungrounded"
# The answers after which the model sends a planned call again: it got the call itself wrong.
_RETRIED: Final = (_INVALID, _UNGROUNDED)

Item = dict[str, Any]
Answer = tuple[list[Item] | str, str]
"""The calls to make or the text to write, and the model's thought about it."""


class RefusedError(ValueError):
    """A request the Responses API would refuse: the server answers ``status`` (400 unless said)."""

    def __init__(
        self, message: str, *, status: int = 400, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.param = status, code, param


def _require(ok: bool, message: str, param: str = "input") -> None:
    if not ok:
        raise RefusedError(message, param=param)


class Called(NamedTuple):
    """A function call the model made earlier, as the client sent it back."""

    call_id: str
    name: str
    arguments: str
    parsed: Mapping[str, object] | None
    """Parsed once (None when not a JSON object): a history can carry megabytes of arguments."""


@attrs.frozen
class ModelRequest:
    """What the model reads from a request body."""

    instructions: str
    tool_names: frozenset[str]
    messages: tuple[tuple[str, str], ...]
    """(role, text) of every message, in order."""
    calls: tuple[Called, ...]
    outputs: Mapping[str, str]
    """Each call's output, by call id."""
    reasoning: bool
    input_tokens: int

    @classmethod
    def from_body(cls, body: object) -> ModelRequest:
        """Read a ``POST /v1/responses`` body; raises :class:`RefusedError` as the API would."""
        if not isinstance(body, Mapping):
            raise RefusedError("The request body must be a JSON object.")
        instructions = body.get("instructions") or ""
        tools = [] if body.get("tools") is None else body["tools"]
        _require(isinstance(instructions, str), "'instructions' must be a string.", "instructions")
        _require(isinstance(tools, list), "'tools' must be an array.", "tools")
        messages, calls, outputs = _read_input(body.get("input"))
        counted = [instructions, json.dumps(tools) if tools else "", *(text for _, text in messages)]
        counted += [call.name + call.arguments for call in calls] + list(outputs.values())
        functions = [tool for tool in tools if isinstance(tool, Mapping) and tool.get("type") == "function"]
        return cls(
            instructions=instructions,
            tool_names=frozenset(str(tool.get("name")) for tool in functions),
            messages=messages,
            calls=calls,
            outputs=outputs,
            reasoning=bool(body.get("reasoning")),
            input_tokens=sum(map(count_tokens, counted)),
        )

    @property
    def last_user_text(self) -> str:
        return next((text for role, text in reversed(self.messages) if role == "user"), "")


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    _require(isinstance(content, list), f"'{where}' must be a string or an array of content parts.", where)
    typed = all(isinstance(part, Mapping) and isinstance(part.get("type"), str) for part in content)
    _require(typed, f"Every part of '{where}' must be an object with a 'type'.", where)
    texts = [part.get("text", part.get("refusal", "")) for part in content if part["type"] in _TEXT_PARTS]
    return "\n".join(map(str, texts))


def _read_input(value: Any) -> tuple[tuple[tuple[str, str], ...], tuple[Called, ...], dict[str, str]]:
    if isinstance(value, str):
        return (("user", value),), (), {}
    _require(
        isinstance(value, list) and bool(value), "'input' must be a non-empty string or array of input items."
    )
    messages: list[tuple[str, str]] = []
    calls: list[Called] = []
    outputs: dict[str, str] = {}
    for index, item in enumerate(value):
        where = f"input[{index}]"
        kind = item.get("type", "message" if "role" in item else None) if isinstance(item, Mapping) else None
        _require(isinstance(kind, str), f"'{where}' must be an object with a 'type'.", where)
        if kind == "message":
            role = item.get("role")
            _require(role in _ROLES, f"'{where}.role' must be user, assistant, system or developer.", where)
            messages.append((role, _text_of(item.get("content"), f"{where}.content")))
        elif kind == "function_call":
            call_id, name, arguments = (item.get(key) for key in ("call_id", "name", "arguments"))
            strings = all(isinstance(field, str) for field in (call_id, name, arguments))
            _require(strings, f"'{where}' needs string call_id, name and arguments.", where)
            parsed = parse_arguments(arguments)
            calls.append(
                Called(call_id, name, arguments, None if isinstance(parsed, ArgumentsParseError) else parsed)
            )
        elif kind == "function_call_output":
            _require(isinstance(item.get("call_id"), str), f"'{where}.call_id' must be a string.", where)
            outputs[item["call_id"]] = _text_of(item.get("output"), f"{where}.output")
    # The API's own rule: every call in history has its output, and every output its call.
    ids = [call.call_id for call in calls]
    for call_id in ids:
        _require(call_id in outputs, f"No tool output found for function call {call_id}.")
    for call_id in outputs:
        _require(call_id in ids, f"No tool call found for function call output with call_id {call_id}.")
    return tuple(messages), tuple(calls), outputs


def count_tokens(text: str) -> int:
    """A plausible token count: words and punctuation marks."""
    return len(_TOKEN.findall(text))


def digest(*parts: object) -> str:
    """A stable hex digest of ``parts``: where the model's ids come from."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


# ---------------------------------------------------------------- the model's turn


def _error_code(output: str) -> str | None:
    """The ``error`` code of a tool's error result; None for a result that is not an error."""
    try:
        value = json.loads(output)
    except ValueError:
        # A result in plain words may still say the arguments were rejected.
        return _INVALID if _INVALID in output else None
    code = value.get("error") if isinstance(value, Mapping) else None
    return code if isinstance(code, str) else None


def _next_calls(request: ModelRequest, stage: Sequence[Call]) -> tuple[list[Call], bool] | None:
    """What is left of ``stage``: (calls to make, first attempt?) or None when the stage is done.

    A planned call is done once a call with the same name and equal arguments is in history. A
    stage that was never attempted is made whole; after that, only calls whose earlier attempt got
    an ``invalid_tool_arguments`` or ``ungrounded`` result are made again, so no tool is called
    twice otherwise.
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
    rejected = [call.name for call in attempted if _error_code(request.outputs[call.call_id]) in _RETRIED]
    retry = []
    for planned in pending:
        if planned.name in rejected:
            rejected.remove(planned.name)
            retry.append(planned)
    return (retry, False) if retry else None


def _calls(
    request: ModelRequest, planned: Sequence[Call], *, malformed: bool, miscite: bool = False
) -> list[Item]:
    """Call items for ``planned``; in a first tool turn ``malformed`` breaks the arguments of one, and
    ``miscite`` makes the first record call cite the line before the one that shows it."""
    conversation = digest(request.messages[:1], request.instructions)
    first_turn = not request.calls
    cited = False
    calls = []
    for index, (name, arguments) in enumerate(planned):
        call_id = "call_" + digest(conversation, len(request.calls), index, name)[:24]
        lines = arguments.get("lines")
        if miscite and first_turn and not cited and isinstance(lines, list) and lines and lines[0] > 1:
            # An off-by-one citation, the mistake a model makes most: the grounding check refuses it.
            arguments, cited = {**arguments, "lines": [lines[0] - 1]}, True
        calls.append(call_item("", call_id, name, json.dumps(arguments, ensure_ascii=False)))
    if malformed and first_turn:
        # The second action item, else the second call: the calls around the broken one must still run.
        actions = [call for call in calls if call["name"] == "record_action_item"]
        victim = actions[1] if len(actions) > 1 else calls[min(1, len(calls) - 1)]
        victim["arguments"] = victim["arguments"][: len(victim["arguments"]) // 2]
    return calls


def _summary_turn(request: ModelRequest, malformed: bool, miscite: bool) -> Answer:
    numbered = numbered_lines(request.last_user_text, "transcript")
    meeting = read_numbered(numbered)
    said = dict(numbered)

    def quote(lines: Sequence[int]) -> str:
        # What the cited lines say, word for word: the grounding check compares the quote with them.
        return " ... ".join(spoken(said[number]) for number in lines)

    offered = request.tool_names
    stage = [Call("list_participants", {})] if "list_participants" in offered else []
    if "record_action_item" in offered:
        stage += [
            Call(
                "record_action_item",
                {"owner": owner, "task": task, "due": due, "lines": list(lines), "quote": quote(lines)},
            )
            for owner, task, due, lines in meeting.action_items
        ]
    if "record_decision" in offered:
        stage += [
            Call("record_decision", {"decision": text, "lines": list(lines), "quote": quote(lines)})
            for text, lines in meeting.decisions
        ]
    step = _next_calls(request, stage)
    if step is None:
        return summary_text(meeting), "Every item is recorded; writing the summary."
    planned, first = step
    thought = (
        f"The transcript has {len(meeting.participants)} participants, {len(meeting.action_items)} "
        f"action items and {len(meeting.decisions)} decisions; recording them with the tools."
        if first
        else "A tool rejected some calls; sending them again with valid JSON and the right lines."
    )
    return _calls(request, planned, malformed=malformed, miscite=miscite), thought


def _workflow_from(output: str) -> Workflow | None:
    """The workflow a ``list_steps`` result shows (the pipeline's tool writes the workflow's JSON form)."""
    try:
        return workflow_from_json(output)
    except WorkflowJsonError:
        return None


def _workflow_turn(request: ModelRequest, malformed: bool) -> Answer:
    listing = [Call("list_steps", {})] if "list_steps" in request.tool_names else []
    step = _next_calls(request, listing)
    if step is not None:
        thought = (
            "Reading the workflow's steps first." if step[1] else "Listing the steps again, with valid JSON."
        )
        return _calls(request, step[0], malformed=malformed), thought
    listed = [call for call in request.calls if call.name == "list_steps" and call.parsed == {}]
    workflow = _workflow_from(request.outputs[listed[-1].call_id]) if listed else None
    if workflow is None:
        return "I could not read the workflow's steps, so I changed nothing.", "No steps to edit."
    edits, skipped = plan_edits(tagged(request.last_user_text, "instruction"), workflow)
    offered = [edit for edit in edits if edit.name in request.tool_names]
    step = _next_calls(request, offered)
    if step is not None:
        thought = f"Turning the instruction into {len(step[0])} edit calls."
        return _calls(request, step[0], malformed=malformed), thought
    return _edit_report(request, workflow, offered, skipped), "Reporting what changed."


def _edit_report(
    request: ModelRequest, workflow: Workflow, edits: Sequence[Call], skipped: Sequence[str]
) -> str:
    names = {step.id: step.name for step in workflow.steps}
    done: list[str] = []
    failed: list[str] = []
    for edit in edits:
        made = [call for call in request.calls if call.name == edit.name and call.parsed == edit.arguments]
        codes = [_error_code(request.outputs[call.call_id]) for call in made]
        if None in codes:
            done.append(describe_edit(edit, names))
        else:
            failed.append(describe_edit(edit, names, done=False) + f" ({codes[-1] if codes else 'not made'})")
    report = (
        f"Edited {workflow.name}: " + "; ".join(done) + "." if done else f"Left {workflow.name} unchanged."
    )
    if failed:
        report += " Could not " + "; ".join(failed) + "."
    if skipped:
        report += " Not understood: " + "; ".join(f"'{clause}'" for clause in skipped) + "."
    return report


def _echo_turn(request: ModelRequest) -> Answer:
    words = request.last_user_text.split()
    opening = " ".join(words[:12]) + (" …" if len(words) > 12 else "")
    text = f"This is the offline stand-in model. Your message has {len(words)} words: “{opening}”."
    return text, "No tools are offered; answering in plain text."


def respond(
    request: ModelRequest, *, malformed: bool = False, miscite: bool = False, litellm: bool = False
) -> tuple[list[Item], dict[str, Any]]:
    """The model's next output items (their ids left empty) and its usage block.

    Tool calls for a pipeline step, or text when the work is done; the pipeline is told by the
    offered tools: the summary tools, the workflow tools, or none. ``malformed`` truncates the
    arguments of one call in the first tool-calling turn; ``miscite`` makes the first summary record
    call of that turn cite the wrong line.
    """
    if request.tool_names.intersection(_SUMMARY_TOOLS):
        answer, thought = _summary_turn(request, malformed, miscite)
    elif request.tool_names.intersection(_WORKFLOW_TOOLS):
        answer, thought = _workflow_turn(request, malformed)
    else:
        answer, thought = _echo_turn(request)
    if isinstance(answer, str):
        items, written = [message_item("", answer, litellm=litellm)], count_tokens(answer)
    else:
        items, written = answer, sum(count_tokens(call["name"] + call["arguments"]) for call in answer)
    reasoning_tokens = 0
    if request.reasoning:
        secret = base64.urlsafe_b64encode(digest("reasoning", request.messages, len(request.calls)).encode())
        items.insert(0, reasoning_item("", [thought], "offline-" + secret.decode()))
        reasoning_tokens = count_tokens(thought)
    output_tokens = written + reasoning_tokens
    return items, usage(
        request.input_tokens, output_tokens, reasoning_tokens=reasoning_tokens, litellm=litellm
    )
