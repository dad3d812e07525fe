"""Run documents: every value a run produces loads back equal, and anything else is a DocumentError
that names the first bad field."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application import DocumentError, ToolCallRecord, ToolRun, dumps, loads
from domain import (
    ChatMessage,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
)
from tests.application.strategies import (
    chat_responses,
    conversations,
    meeting_summaries,
    tool_runs,
    workflow_edits,
)
from tests.support.examples import examples
from tests.support.json_places import places

_SLOW = settings(
    max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@_SLOW
@given(st.one_of(conversations, chat_responses, tool_runs, meeting_summaries, workflow_edits))
def test_every_value_a_run_produces_loads_back_equal(value: object) -> None:
    text = dumps(value)

    assert loads(text) == value
    # Valid UTF-8 JSON whatever the value holds, lone surrogates included.
    assert json.loads(text.encode("utf-8"))["format"] == "meeting-agents"


@_SLOW
@given(conversations)
def test_messages_load_as_a_tuple_whatever_sequence_was_stored(conversation: tuple[ChatMessage, ...]) -> None:
    loaded = loads(dumps(list(conversation)))

    assert isinstance(loaded, tuple)
    assert loaded == conversation


def test_the_envelope_names_format_version_and_kind() -> None:
    document = json.loads(dumps(ChatResponse(response_id="resp_1")))

    assert {key: document[key] for key in ("format", "version", "kind")} == {
        "format": "meeting-agents",
        "version": 1,
        "kind": "chat_response",
    }
    assert document["value"]["response_id"] == "resp_1"


def test_raw_arguments_with_a_lone_surrogate_survive_byte_for_byte() -> None:
    raw = '{"note": "half \ud83d of a pair", "x": "\\udc00"}'
    call = FunctionCallContent.parse(call_id="c1", name="record", raw_arguments=raw, item_id="fc_1")
    text = dumps((ChatMessage("assistant", (call,)),))

    (message,) = loads(text)
    (loaded,) = message.contents
    assert loaded.raw_arguments == raw
    assert loaded == call
    assert "\\ud83d" in text
    text.encode("utf-8")


def test_a_surrogate_pair_split_in_two_code_points_loads_as_the_character_it_encodes() -> None:
    # Every JSON reader joins the two escapes into one character: the document says what the request would.
    loaded = loads(dumps((ChatMessage.user("\ud83d\ude00"),)))

    assert loaded == (ChatMessage.user("\U0001f600"),)


def test_a_call_loads_with_its_arguments_parsed_again_from_the_raw_string() -> None:
    good = FunctionCallContent.parse(call_id="c1", name="f", raw_arguments='{"a": [1, 2]}')
    bad = FunctionCallContent.parse(call_id="c2", name="f", raw_arguments='{"a": ')
    stored = json.loads(dumps((ChatMessage("assistant", (good, bad)),)))

    assert "arguments" not in stored["value"][0]["contents"][0]
    assert "parse_error" not in stored["value"][0]["contents"][0]
    (message,) = loads(json.dumps(stored))
    assert message.contents == (good, bad)
    assert message.contents[0].arguments == {"a": [1, 2]}
    assert message.contents[1].parse_error is not None


def test_dumps_refuses_a_value_no_document_holds() -> None:
    with pytest.raises(TypeError, match="dict"):
        dumps({"messages": []})


# ---------------------------------------------------------------- refusals

_CALL = FunctionCallContent.parse(call_id="call_1", name="record_decision", raw_arguments='{"decision": "x"}')
_RUN = ToolRun(
    messages=(
        ChatMessage.user("hi"),
        ChatMessage(
            "assistant",
            (
                ReasoningContent.from_parts(["plan"], item_id="rs_1", encrypted_content="enc"),
                TextContent("Recording."),
                _CALL,
                ProviderItemContent("compaction", '{"type":"compaction","id":"cp_1"}', "cp_1"),
            ),
        ),
        ChatMessage("tool", (FunctionResultContent("call_1", {"recorded": True}),)),
    ),
    responses=(ChatResponse(response_id="resp_1", status="completed", usage=Usage(10, 2, 12)),),
    tool_calls=(ToolCallRecord(_CALL, FunctionResultContent("call_1", {"recorded": True}), False),),
    iterations=1,
)
_DOCUMENT = dumps(_RUN)


def _refusal(text: str | bytes) -> DocumentError:
    with pytest.raises(DocumentError) as caught:
        loads(text)
    return caught.value


def _edited(change: Any) -> str:
    document = json.loads(_DOCUMENT)
    change(document)
    return json.dumps(document)


@pytest.mark.parametrize(
    ("change", "path", "problem"),
    [
        (
            lambda d: d["value"]["messages"][1]["contents"][2].update(call_id=7),
            "value.messages[1].contents[2].call_id",
            "a string",
        ),
        (
            lambda d: d["value"]["messages"][1]["contents"][2].pop("name"),
            "value.messages[1].contents[2].name",
            "missing",
        ),
        (
            lambda d: d["value"]["messages"][1]["contents"][2].update(surplus=1),
            "value.messages[1].contents[2].surplus",
            "unexpected",
        ),
        (
            lambda d: d["value"]["messages"][1]["contents"][0].update(kind="thought"),
            "value.messages[1].contents[0].kind",
            "one of",
        ),
        (
            lambda d: d["value"]["messages"][1]["contents"][0].update(summary="plan"),
            "value.messages[1].contents[0].summary",
            "an array",
        ),
        (lambda d: d["value"]["messages"][2].update(role="robot"), "value.messages[2].role", "one of"),
        (lambda d: d["value"]["messages"].__setitem__(0, "hi"), "value.messages[0]", "an object"),
        (
            lambda d: d["value"]["responses"][0]["usage"].update(input_tokens="10"),
            "value.responses[0].usage.input_tokens",
            "an integer",
        ),
        (
            lambda d: d["value"]["responses"][0].update(created_at="yesterday"),
            "value.responses[0].created_at",
            "ISO 8601",
        ),
        (lambda d: d["value"]["tool_calls"][0].update(guarded=0), "value.tool_calls[0].guarded", "a boolean"),
        (lambda d: d["value"].update(iterations=1.5), "value.iterations", "an integer"),
        (lambda d: d.update(version=2), "version", "newer"),
        (lambda d: d.update(version="1"), "version", "integer"),
        (lambda d: d.update(format="other"), "format", "meeting-agents"),
        (lambda d: d.update(kind="transcript"), "kind", "one of"),
        (lambda d: d.pop("value"), "value", "missing"),
        (lambda d: d.update(extra=True), "extra", "unexpected"),
    ],
)
def test_a_bad_field_is_named_by_its_path(change: Any, path: str, problem: str) -> None:
    error = _refusal(_edited(change))

    assert error.path == path
    assert str(error).startswith(f"{path}: ")
    assert problem in str(error)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[1, 2]",
        '{"a": NaN}',
        "1" * 5000,
        "[" * 100_000 + "]" * 100_000,
        b"\xff\xfe",
        '"\\ud800"',
    ],
)
def test_what_is_not_a_document_is_refused_as_a_whole(text: str | bytes) -> None:
    error = _refusal(text)

    assert error.path == ""


def test_a_value_that_is_not_text_is_refused() -> None:
    assert _refusal(None).path == ""  # type: ignore[arg-type]  # what a caller might hand in by mistake


def test_an_error_never_quotes_the_value_it_refused() -> None:
    secret = "PLANTED-7f3a9c"
    error = _refusal(_edited(lambda d: d["value"]["messages"][0].update(role=secret)))

    assert secret not in str(error)
    assert error.__cause__ is None
    assert error.__context__ is None or secret not in str(error.__context__)


# ---------------------------------------------------------------- 1,000 mutated documents


def _replacements(rng: random.Random, old: Any) -> Any:
    deep: Any = []
    for _ in range(rng.choice([50, 900])):
        deep = [deep]
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            10**80,
            1.5e300,
            "",
            "text",
            [],
            [old],
            {},
            {"kind": "text"},
            deep,
            str(old),
        ]
    )


def _mutated(rng: random.Random, document: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """The document changed at one random place (replaced, removed, or given an extra field)."""
    mutated = copy.deepcopy(document)
    place = rng.choice(places(mutated)[1:])
    parent: Any = mutated
    for step in place[:-1]:
        parent = parent[step]
    last = place[-1]
    how = rng.choice(["replace", "replace", "remove", "extra"])
    if how == "remove":
        del parent[last]
    elif how == "extra" and isinstance(parent[last], dict):
        parent[last]["surplus"] = rng.choice([1, "x", None])
        place = (*place, "surplus")
    else:
        parent[last] = _replacements(rng, parent[last])
    return json.dumps(mutated), place


def _spelled(place: tuple[Any, ...]) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in place).lstrip(".")


def test_a_thousand_mutated_documents_give_only_document_errors_that_name_a_path() -> None:
    rng = random.Random(20_250_521)  # noqa: S311  # seeded so that a failure repeats; not a secret
    documents = [json.loads(dumps(value)) for value in (_RUN, _RUN.messages, _RUN.responses[0])]
    refusals: list[tuple[DocumentError, tuple[Any, ...]]] = []
    for _ in range(1_000):
        text, place = _mutated(rng, rng.choice(documents))
        try:
            loads(text)
        except DocumentError as error:
            refusals.append((error, place))

    for refusal, place in refusals:
        mutated, holder = _spelled(place), _spelled(place[:-1])
        # The path named is inside the object that holds the change (a changed "kind" makes its
        # siblings wrong), or an object around the change.
        assert refusal.path.startswith(holder) or mutated.startswith(refusal.path), (refusal.path, mutated)
        assert str(refusal).startswith(refusal.path)
    # Most changes break the document; some leave it valid (a null where null is allowed, a field with a
    # default left out).
    assert len(refusals) > 600
