"""FunctionCallContent.parse: the contract's argument parsing rules, on generated inputs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import ArgumentsParseError, FunctionCallContent
from domain.arguments import SURROGATE, escape_surrogates, has_surrogate, mend_surrogates, replace_surrogates
from tests.domain.strategies import (
    any_text,
    lone_surrogate_arguments,
    surrogate_pair_arguments,
)
from tests.strategies import (
    MARKER,
    deep_nesting,
    duplicate_keys,
    empty_strings,
    invalid_json_strings,
    json_objects,
    non_finite_literals,
    non_object_json_strings,
    trailing_garbage,
    truncated_objects,
    valid_argument_strings,
)


def parse(raw: str) -> FunctionCallContent:
    return FunctionCallContent.parse(call_id="call_1", name="tool", raw_arguments=raw)


@given(valid_argument_strings())
def test_valid_objects_round_trip_with_raw_arguments_unchanged(raw: str) -> None:
    call = parse(raw)
    assert call.parse_error is None
    assert call.raw_arguments == raw
    assert call.arguments == json.loads(raw)
    assert call.is_valid


@given(json_objects)
def test_parsed_arguments_equal_the_generated_object(obj: dict[str, Any]) -> None:
    assert parse(json.dumps(obj)).arguments == obj


@given(empty_strings)
def test_empty_and_whitespace_are_empty(raw: str) -> None:
    call = parse(raw)
    assert call.parse_error is not None
    assert call.parse_error.kind == "empty"
    assert call.arguments is None
    assert not call.is_valid


@pytest.mark.parametrize(
    "strategy",
    [truncated_objects(), trailing_garbage(), duplicate_keys(), non_finite_literals(), deep_nesting()],
    ids=["truncated", "trailing-garbage", "duplicate-key", "non-finite", "deep-nesting"],
)
@given(data=st.data())
def test_each_invalid_json_class_is_invalid_json(
    strategy: st.SearchStrategy[str], data: st.DataObject
) -> None:
    call = parse(data.draw(strategy))
    assert call.parse_error is not None
    assert call.parse_error.kind == "invalid_json"
    assert call.arguments is None


@given(non_object_json_strings)
def test_strict_json_that_is_not_an_object_is_not_an_object(raw: str) -> None:
    call = parse(raw)
    assert call.parse_error is not None
    assert call.parse_error.kind == "not_an_object"


@given(st.one_of(invalid_json_strings, non_object_json_strings))
def test_error_message_never_echoes_the_input(raw: str) -> None:
    error = parse(raw).parse_error
    assert error is not None
    assert MARKER not in error.message
    assert error.message == ArgumentsParseError.of(error.kind).message


@given(st.one_of(st.text(), any_text, lone_surrogate_arguments(), surrogate_pair_arguments()))
def test_parse_never_raises_for_any_text(raw: str) -> None:
    call = parse(raw)
    assert call.raw_arguments == raw
    assert (call.arguments is None) == (call.parse_error is not None)


@given(lone_surrogate_arguments())
def test_an_unpaired_surrogate_anywhere_is_invalid_json(raw: str) -> None:
    call = parse(raw)
    assert call.parse_error == ArgumentsParseError.of("invalid_json")
    assert call.arguments is None


@given(surrogate_pair_arguments())
def test_surrogate_pairs_are_valid_and_decode_to_one_character(raw: str) -> None:
    call = parse(raw)
    assert call.parse_error is None
    assert call.arguments is not None
    assert call.arguments == json.loads(raw)
    assert any(ord(ch) > 0xFFFF for ch in json.dumps(dict(call.arguments), ensure_ascii=False))


@given(st.one_of(any_text, valid_argument_strings(), lone_surrogate_arguments(), surrogate_pair_arguments()))
def test_accepted_arguments_always_encode_as_utf8(raw: str) -> None:
    call = parse(raw)
    if call.arguments is not None:
        # What the guard lets through can always go back out in the next request.
        encoded = json.dumps(dict(call.arguments), ensure_ascii=False).encode("utf-8")
        assert json.loads(encoded) == call.arguments


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ('{"a": 1, "a": 2}', "invalid_json"),
        ('{"a": {"b": 1, "b": 1}}', "invalid_json"),
        ('{"a": NaN}', "invalid_json"),
        ('{"a": -Infinity}', "invalid_json"),
        ('{"a": "\x01"}', "invalid_json"),
        ('{"a": 1} {"b": 2}', "invalid_json"),
        ("{'a': 1}", "invalid_json"),
        ('{"a": 1,}', "invalid_json"),
        ("1" * 5000, "invalid_json"),
        ('{"s": "\\ud800"}', "invalid_json"),
        ('{"s": "\\udfff"}', "invalid_json"),
        ('{"s": "\ud800"}', "invalid_json"),
        ('{"\\ud800": 1}', "invalid_json"),
        ('{"a": [{"b": ["\\ude00"]}]}', "invalid_json"),
        ('{"s": "\\ude00\\ud83d"}', "invalid_json"),
        ('{"s": "\\ud83d\\u0041"}', "invalid_json"),
        ('{"s": "\ud83d\ude00"}', "invalid_json"),
        ('"\\ud800"', "invalid_json"),
        ("null", "not_an_object"),
        ("[]", "not_an_object"),
        ('"{}"', "not_an_object"),
        ("true", "not_an_object"),
        ("", "empty"),
        (" \n\t ", "empty"),
    ],
)
def test_known_inputs_are_classified(raw: str, kind: str) -> None:
    error = parse(raw).parse_error
    assert error is not None
    assert error.kind == kind


@pytest.mark.parametrize(
    "raw",
    [
        '{"s": "\\ud83d\\ude00"}',
        '{"s": "\\uD83D\\uDE00"}',
        '{"\\ud83d\\ude00": "\U0001f600"}',
        '{"s": "\\\\ud800"}',
        '{"\\u0000": 0}',
        ' {"a": [1, 2, {"b": null}]}\n',
    ],
)
def test_unusual_but_strict_json_objects_parse(raw: str) -> None:
    call = parse(raw)
    assert call.parse_error is None
    assert call.arguments == json.loads(raw)


def test_huge_argument_string_parses() -> None:
    raw = json.dumps({"blob": "x" * 5_000_000})
    call = parse(raw)
    assert call.arguments is not None
    assert len(str(call.arguments["blob"])) == 5_000_000


def test_invalid_json_error_reports_the_position_but_not_the_text() -> None:
    error = parse('{"a": 1, "b": }').parse_error
    assert error is not None
    assert error.position == 14


def test_parsed_arguments_are_read_only() -> None:
    call = parse('{"a": 1}')
    assert call.arguments is not None
    with pytest.raises(TypeError):
        call.arguments["a"] = 2  # type: ignore[index]  # the point: the mapping refuses writes


@given(any_text)
def test_escaped_json_text_reads_back_as_the_same_value_and_utf8_carries_it(text: str) -> None:
    written = escape_surrogates(json.dumps({"text": text}, ensure_ascii=False))
    written.encode("utf-8")  # raises if a surrogate is left
    assert json.loads(written) == {"text": mend_surrogates(text)}


@given(any_text)
def test_replaced_text_keeps_every_character_utf8_carries_and_marks_the_rest(text: str) -> None:
    replaced = replace_surrogates(text)
    replaced.encode("utf-8")
    mended = mend_surrogates(text)
    assert len(replaced) == len(mended)
    pairs = zip(replaced, mended, strict=True)
    assert all(a == b or (SURROGATE.match(b) and a == "\ufffd") for a, b in pairs)
    assert has_surrogate(text) == (SURROGATE.search(text) is not None)
