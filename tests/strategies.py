"""Hypothesis strategies shared by every test: JSON values, argument strings, model outputs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from domain import Workflow, WorkflowStep

# Marker planted in malformed inputs: an error message must never echo it.
MARKER = "PLANTED-7f3a9c"

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(
    st.text(max_size=10), json_values, max_size=6
)


@st.composite
def valid_argument_strings(draw: st.DrawFn) -> str:
    """A JSON object serialized in one of several legal spellings."""
    obj = draw(json_objects)
    indent = draw(st.sampled_from([None, 0, 2]))
    ensure_ascii = draw(st.booleans())
    return json.dumps(obj, indent=indent, ensure_ascii=ensure_ascii)


@st.composite
def truncated_objects(draw: st.DrawFn) -> str:
    """A non-empty JSON object cut short, with the marker inside so it must not leak."""
    obj = draw(st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=4))
    obj[MARKER] = draw(json_values)
    text = json.dumps(obj)
    cut = draw(st.integers(min_value=1, max_value=len(text) - 1))
    return text[:cut]


@st.composite
def trailing_garbage(draw: st.DrawFn) -> str:
    obj = draw(json_objects)
    garbage = draw(st.sampled_from(["}", "]", ",", "x", MARKER, '{"a":1}', "\x00"]))
    return json.dumps(obj) + garbage


@st.composite
def duplicate_keys(draw: st.DrawFn) -> str:
    key = draw(st.text(max_size=6))
    first, second = draw(json_values), draw(json_values)
    pairs = [(key, first), (MARKER, 1), (key, second)]
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"


@st.composite
def non_finite_literals(draw: st.DrawFn) -> str:
    literal = draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
    return '{"' + MARKER + '": ' + literal + "}"


@st.composite
def deep_nesting(draw: st.DrawFn, max_depth: int = 50_000) -> str:
    """An object nested deeper than ``json.loads`` follows (its limit is about 1,000)."""
    depth = draw(st.integers(min_value=5_000, max_value=max_depth))
    return '{"' + MARKER + '": ' + "[" * depth + "]" * depth + "}"


def _invalid_json_strings(max_depth: int) -> st.SearchStrategy[str]:
    return st.one_of(
        truncated_objects(),
        trailing_garbage(),
        duplicate_keys(),
        non_finite_literals(),
        deep_nesting(max_depth),
        st.text().map(lambda s: MARKER + s),
    )


invalid_json_strings = _invalid_json_strings(50_000)

non_object_json_strings: st.SearchStrategy[str] = st.one_of(
    st.just("null"),
    st.lists(json_values, max_size=4).map(lambda v: json.dumps([MARKER, *v])),
    st.integers().map(json.dumps),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.text().map(lambda s: json.dumps(MARKER + s)),
    st.booleans().map(json.dumps),
)

empty_strings: st.SearchStrategy[str] = st.text(alphabet=" \t\r\n", max_size=20)


def _malformed_argument_strings(max_depth: int) -> st.SearchStrategy[str]:
    return st.one_of(_invalid_json_strings(max_depth), non_object_json_strings, empty_strings)


malformed_argument_strings = _malformed_argument_strings(50_000)


# ---------------------------------------------------------------- pipeline tool-call mixes (application)
# A planned call is what the scripted model will send and what the test expects to happen to it:
# "valid" runs the tool, "malformed" (unparseable arguments) is answered by the guard, "ill_typed"
# (a JSON object of the wrong shape) is refused by the registry. Neither of the last two runs it.

CallKind = Literal["valid", "malformed", "ill_typed"]


@attrs.frozen
class PlannedCall:
    name: str
    raw: str
    kind: CallKind
    arguments: Mapping[str, Any] | None = None


def planned_chat(
    turns: Sequence[Sequence[PlannedCall]], texts: Sequence[str] = (), *, final_text: str = "Done."
) -> tuple[ScriptedChat, list[str]]:
    """A model that sends each turn's calls (ids ``call_<turn>_<index>``) with ``texts[turn]``, if there is
    one, then answers ``final_text`` alone; and the ids of the calls, in the order they are sent."""
    ids: list[str] = []
    scripted: list[ScriptedTurn] = []
    for t, turn in enumerate(turns):
        calls = tuple((f"call_{t}_{i}", c.name, c.raw) for i, c in enumerate(turn))
        ids.extend(call_id for call_id, _, _ in calls)
        scripted.append(ScriptedTurn(text=texts[t] if t < len(texts) else "", calls=calls))
    return ScriptedChat(*scripted, ScriptedTurn(text=final_text)), ids


# Strings a tool accepts as they are: non-empty, no surrounding whitespace.
plain_texts: st.SearchStrategy[str] = st.text(min_size=1, max_size=16).filter(lambda s: s.strip() == s)


@st.composite
def object_spellings(draw: st.DrawFn, obj: Mapping[str, Any]) -> str:
    """``obj`` serialized with its keys in any order and in one of several legal spellings."""
    keys = draw(st.permutations(list(obj)))
    indent = draw(st.sampled_from([None, 0, 2]))
    return json.dumps({k: obj[k] for k in keys}, indent=indent, ensure_ascii=draw(st.booleans()))


empty_object_strings: st.SearchStrategy[str] = st.sampled_from(["{}", " {} ", "{\n}", "\t{ }\r\n"])


@st.composite
def planned_calls(
    draw: st.DrawFn,
    zero_parameter_tools: Sequence[str],
    valid: Mapping[str, st.SearchStrategy[dict[str, Any]]],
    ill_typed: Mapping[str, st.SearchStrategy[dict[str, Any]]],
) -> PlannedCall:
    """One call of a pipeline's tools, valid, malformed or ill-typed with equal odds."""
    name = draw(st.sampled_from([*zero_parameter_tools, *valid]))
    kind: CallKind = draw(st.sampled_from(["valid", "malformed", "ill_typed"]))
    if kind == "malformed":
        return PlannedCall(name, draw(malformed_argument_strings), kind)
    if name in zero_parameter_tools:
        if kind == "valid":
            return PlannedCall(name, draw(empty_object_strings), kind, {})
        extra = draw(st.dictionaries(plain_texts, json_values, min_size=1, max_size=3))
        return PlannedCall(name, draw(object_spellings(extra)), kind)
    arguments = draw((valid if kind == "valid" else ill_typed)[name])
    return PlannedCall(name, draw(object_spellings(arguments)), kind, arguments if kind == "valid" else None)


def call_turns(calls: st.SearchStrategy[PlannedCall]) -> st.SearchStrategy[list[list[PlannedCall]]]:
    """One to four model turns of one to four calls each."""
    return st.lists(st.lists(calls, min_size=1, max_size=4), min_size=1, max_size=4)


# Call ids for the tool loop's at-most-once rule: drawn from a handful, so repeats within one
# response and across rounds are common; arguments valid or not, since a refused call is answered too.
repeating_call_turns: st.SearchStrategy[list[list[tuple[str, str]]]] = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["call_a", "call_b", "call_c", "call_d"]), st.sampled_from(["{}", "{"])),
        min_size=1,
        max_size=5,
    ),
    min_size=1,
    max_size=4,
)


@st.composite
def loop_scripts(draw: st.DrawFn) -> list[tuple[str, list[tuple[str, str]]]]:
    """A tool-loop run's model turns as ``(text, calls)``: each turn some text (or none) and the calls
    of :data:`repeating_call_turns`, then a last turn of text alone.
    """
    rounds = draw(repeating_call_turns)
    texts = draw(st.lists(st.text(max_size=40), min_size=len(rounds) + 1, max_size=len(rounds) + 1))
    return list(zip(texts, [*rounds, []], strict=True))


def _spoiled(
    obj: Mapping[str, Any], field: str, wrong: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """``obj`` with ``field`` replaced by a wrong value, removed, or joined by an unknown key."""
    return st.one_of(
        wrong.map(lambda value: {**obj, field: value}),
        st.just({k: v for k, v in obj.items() if k != field}),
        st.just({**obj, "unexpected": 1}),
    )


_not_strings: st.SearchStrategy[Any] = st.one_of(
    st.integers(), st.booleans(), st.lists(st.integers(), max_size=2), st.just({})
)
_blank: st.SearchStrategy[str] = st.text(alphabet=" \t", max_size=3)


@st.composite
def _ill_typed_action_items(draw: st.DrawFn) -> dict[str, Any]:
    obj = {"owner": draw(plain_texts), "task": draw(plain_texts), "due": draw(st.none() | plain_texts)}
    field = draw(st.sampled_from(["owner", "task"]))
    return draw(_spoiled(obj, field, _not_strings | _blank))


# The valid calls cite lines of tests/application/meetings/test_summary.py's TRANSCRIPT that show them:
# line 2 "Bob Smith: The build is red again.", 3 "Chen: I will fix the build by Friday.",
# 4 "Ann: Agreed: we ship on Monday."
summary_calls: st.SearchStrategy[PlannedCall] = planned_calls(
    zero_parameter_tools=("list_participants",),
    valid={
        "record_action_item": st.fixed_dictionaries(
            {
                "owner": st.sampled_from(["Chen", "chen", "CHEN"]),
                "task": st.sampled_from(["Fix the build", "fix the builds", "Fixing the build."]),
                # Line 3 says "by Friday": a due the cited lines do not state is refused.
                "due": st.sampled_from([None, "Friday", "by Friday", "Fri", "FRIDAY"]),
                "lines": st.sampled_from([[3], [2, 3], [3, 2], [3, 3]]),
            }
        ),
        "record_decision": st.fixed_dictionaries(
            {"decision": st.sampled_from(["Ship on Monday", "We ship Monday."]), "lines": st.just([4])}
        ),
    },
    ill_typed={
        "record_action_item": _ill_typed_action_items(),
        "record_decision": _spoiled({"decision": "x"}, "decision", _not_strings | _blank),
    },
)


# Workflow steps get ids from a small pool so that edits often, but not always, name a real step.
STEP_IDS = ("intake", "review", "approve", "step-4", "step-5", "ghost")

workflows: st.SearchStrategy[Workflow] = st.builds(
    Workflow,
    name=plain_texts,
    steps=st.lists(st.sampled_from(STEP_IDS[:4]), unique=True, max_size=4).flatmap(
        lambda ids: st.tuples(*(st.builds(WorkflowStep, st.just(i), plain_texts, plain_texts) for i in ids))
    ),
)

_step_ids = st.sampled_from(STEP_IDS)

workflow_calls: st.SearchStrategy[PlannedCall] = planned_calls(
    zero_parameter_tools=("list_steps",),
    valid={
        "add_step": st.fixed_dictionaries(
            {"name": plain_texts, "kind": plain_texts, "after": st.none() | _step_ids}
        ),
        "remove_step": st.fixed_dictionaries({"step_id": _step_ids}),
        "rename_step": st.fixed_dictionaries({"step_id": _step_ids, "name": plain_texts}),
        "move_step": st.fixed_dictionaries(
            {"step_id": _step_ids, "position": st.integers(min_value=-2, max_value=8)}
        ),
    },
    ill_typed={
        "add_step": st.fixed_dictionaries(
            {"name": plain_texts, "kind": plain_texts, "after": _step_ids}
        ).flatmap(lambda obj: _spoiled(obj, "kind", _not_strings | _blank)),
        "remove_step": _spoiled({"step_id": "intake"}, "step_id", _not_strings),
        "rename_step": _spoiled({"step_id": "intake", "name": "x"}, "name", _not_strings | _blank),
        "move_step": _spoiled(
            {"step_id": "intake", "position": 1},
            "position",
            st.one_of(
                st.text(max_size=3),
                st.floats(allow_nan=False, allow_infinity=False),
                st.booleans(),
                st.none(),
            ),
        ),
    },
)


# ---------------------------------------------------------------- Responses model outputs (adapters)
# Output items in the Responses API's JSON shape, for rendering as an event stream and as a JSON body.

output_texts: st.SearchStrategy[str] = st.text(max_size=40)

# Streamed in deltas of a few characters, a 100,000-character nesting is some 33,000 events: seconds
# a body, enough to pass the exchange's deadline on a loaded CI machine. Nesting a little past what
# json.loads follows proves the same about folding; the guard's own tests keep the deep kind.
raw_argument_strings: st.SearchStrategy[str] = st.one_of(
    valid_argument_strings(),
    _malformed_argument_strings(max_depth=5_500),
    st.text(max_size=60),
)


@st.composite
def output_items(draw: st.DrawFn, index: int) -> dict[str, Any]:
    """One output item: a message, reasoning, a function call or a compaction, ids unique by ``index``."""
    kind = draw(st.sampled_from(["message", "reasoning", "function_call", "compaction"]))
    if kind == "compaction":
        return {"type": "compaction", "id": f"cmp_{index}", "encrypted_content": draw(output_texts)}
    if kind == "message":
        parts = draw(st.lists(output_texts, min_size=1, max_size=3))
        content = [{"type": "output_text", "text": text, "annotations": []} for text in parts]
        return {
            "type": "message",
            "id": f"msg_{index}",
            "role": "assistant",
            "status": "completed",
            "content": content,
        }
    if kind == "reasoning":
        summary = draw(st.lists(output_texts, max_size=3))
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{index}",
            "summary": [{"type": "summary_text", "text": text} for text in summary],
        }
        encrypted = draw(st.none() | st.text(alphabet="ABCDEFabcdef0123456789+/=", min_size=1, max_size=40))
        if encrypted is not None:
            item["encrypted_content"] = encrypted
        return item
    return {
        "type": "function_call",
        "id": f"fc_{index}",
        "call_id": f"call_{index}",
        "name": draw(
            st.sampled_from(["record_action_item", "record_decision", "list_participants", "add_step"])
        ),
        "arguments": draw(raw_argument_strings),
        "status": "completed",
    }


@st.composite
def model_outputs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A whole response's output: up to five items of any kind, in any order."""
    count = draw(st.integers(min_value=0, max_value=5))
    return [draw(output_items(index)) for index in range(count)]


# ---------------------------------------------------------------- offline model: transcripts and instructions
# Built from small vocabularies that hold none of the rules' trigger words ("will", "by", "and", ...),
# so what a generated text says is exactly what was planted in it.

offline_speakers = st.sampled_from(["Ana", "Ben", "Cleo", "Dara", "Eli", "Farah"])
offline_tasks = st.lists(
    st.sampled_from(["review", "the", "budget", "deck", "draft", "send", "invite", "update", "notes", "fix"]),
    min_size=1,
    max_size=5,
).map(" ".join)
offline_dues = st.none() | st.sampled_from(
    ["Friday", "tomorrow", "end of week", "3 May", "next sprint", "Monday noon"]
)
offline_chit_chat = st.sampled_from(
    [
        "Sounds good.",
        "Thanks, everyone.",
        "Can you share the link?",
        "It will rain later, apparently.",
        "I'll be honest, that was fun.",
        "The coffee machine will outlive us all.",
        "Maybe we'll decide next week.",
    ]
)


@st.composite
def offline_utterances(draw: st.DrawFn) -> tuple[str, str, tuple[str, str, str | None] | str | None]:
    """(speaker, sentence, planted) where planted is an action item triple, a decision, or None."""
    speaker = draw(offline_speakers)
    kind = draw(st.sampled_from(["named", "tagged", "mine", "decision", "chat"]))
    task, due = draw(offline_tasks), draw(offline_dues)
    deadline = f" by {due}" if due else ""
    if kind == "named":
        owner = draw(offline_speakers)
        return speaker, f"{owner} will {task}{deadline}.", (owner, task, due)
    if kind == "tagged":
        owner = draw(offline_speakers)
        return speaker, f"Action: {owner} to {task}{deadline}", (owner, task, due)
    if kind == "mine":
        return speaker, f"I'll {task}{deadline}.", (speaker, task, due)
    if kind == "decision":
        lead = draw(
            st.sampled_from(["We decided to ", "So we agreed that ", "Decision: ", "we've agreed on "])
        )
        return speaker, f"{lead}{task}.", task[:1].upper() + task[1:]
    return speaker, draw(offline_chit_chat), None


offline_step_names = st.sampled_from(
    ["Build app", "Run tests", "Ship it", "Notify team", "Tag release", "Scan deps", "Write notes"]
)
offline_new_names = st.sampled_from(["Smoke test", "Canary", "Backup db", "Sign binaries", "Warm cache"])
offline_kinds = st.sampled_from(["build", "test", "deploy", "notify"])
offline_separators = st.sampled_from([", ", "; ", " and ", ", then ", " then "])
