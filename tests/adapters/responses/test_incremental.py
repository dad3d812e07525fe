"""The JSON parsed in steps is json.loads's, value for value and fault for fault."""

from __future__ import annotations

import json
from typing import Any, Final

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters.responses import chat_adapters
from adapters.responses.incremental import JsonInSteps, ParsedTooLargeError, over, parsed_size, quick_size

# Escapes and characters where a parse could go wrong: lone and paired surrogates (escaped and
# raw), escaped quotes and backslashes, the brackets and quotes the walk cuts runs at, control
# characters (refused), and an escape a JSON reader does not take.
_PIECES: Final = [
    "a",
    "é",
    "\U0001f600",
    "\\ud800",
    "\\udc00",
    "\\ud83d\\ude00",
    "\\ud83d",
    "\\ude00",
    "\\u0041",
    '\\"',
    "\\\\",
    "\\n",
    "\\/",
    "}",
    "]",
    "{",
    "[",
    ",",
    ":",
    '"',
    "\ud800",
    "\x01",
    "\\x",
    "\\u12",
]
_NUMBERS: Final = [
    "0",
    "-0",
    "-0.0",
    "1.5",
    "1e400",
    "-1e400",
    "1e-400",
    "12345678901234567890123",
    "NaN",
    "Infinity",
    "-Infinity",
    "01",
    "1.",
    "1e",
    "-",
    "true",
    "false",
    "null",
    "tru",
]


@st.composite
def _string_tokens(draw: st.DrawFn) -> str:
    return '"' + "".join(draw(st.lists(st.sampled_from(_PIECES), max_size=12))) + '"'


def _texts() -> st.SearchStrategy[str]:
    """JSON text as a gateway might send it: mostly well-formed, with duplicate keys, odd spacing
    and every hard token, sometimes with a fault (a string that breaks it, a cut, a stray mark)."""
    whitespace = st.sampled_from(["", " ", "\n", " \t\r\n "])
    leaves = st.one_of(st.sampled_from(_NUMBERS), _string_tokens(), st.integers().map(str))

    def containers(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        arrays = st.tuples(st.lists(children, max_size=6), whitespace).map(
            lambda t: "[" + f",{t[1]}".join(t[0]) + "]"
        )
        keys = st.one_of(st.sampled_from(['"a"', '"b"', '"\\ud800"']), _string_tokens())
        members = st.lists(st.tuples(keys, whitespace, children), max_size=6)
        objects = members.map(lambda ms: "{" + ",".join(f"{k}{w}:{w}{v}" for k, w, v in ms) + "}")
        return arrays | objects

    return st.recursive(leaves, containers, max_leaves=40)


def _outcome(parse: Any, text: str) -> tuple[Any, ...]:
    try:
        value = parse(text)
    except json.JSONDecodeError as error:
        # What the adapters make of a fault (chat_adapters._cut_short: retried or not), and where it is.
        return ("fault", error.pos, chat_adapters._cut_short(error))
    except (RecursionError, ValueError) as error:
        return (type(error).__name__,)
    # json.dumps tells apart what == does not: -0.0 from 0.0, 1 from 1.0, NaN from NaN, key order.
    return ("value", type(value).__name__, json.dumps(value))


def _in_steps(piece: int) -> Any:
    def parse(text: str) -> Any:
        parser = JsonInSteps(text, piece=piece)
        for _ in parser.steps():
            pass
        return parser.value

    return parse


@settings(max_examples=200)
@given(
    text=_texts(),
    piece=st.integers(16, 96),
    cut=st.none() | st.integers(0, 400),
    lead=st.sampled_from(["", " ", "\n"]),
)
# A text cut right after a surrogate pair's two escapes: json.loads calls the second an invalid
# escape, not the string open (found by a random example).
@example(text='[-0, "aaaaaaaa\\ud800\\ud800\\"", ["aaa\\ud800\\udc00"]]', piece=16, cut=48, lead="")
def test_parsing_in_steps_gives_json_loads_value_or_fault(
    text: str, piece: int, cut: int | None, lead: str
) -> None:
    """Pieces far smaller than the text, so that runs, halving, opened containers and strings in
    pieces are all exercised; a cut makes a text end early (what the adapters ask for again)."""
    document = lead + (text if cut is None else text[:cut])
    assert _outcome(_in_steps(piece), document) == _outcome(json.loads, document)


@settings(max_examples=50)
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
        lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=5), c, max_size=5),
        max_leaves=60,
    ),
    ensure_ascii=st.booleans(),
    piece=st.integers(16, 64),
)
def test_what_json_dumps_writes_reads_back_the_same_in_steps(
    value: Any, ensure_ascii: bool, piece: int
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    assert _outcome(_in_steps(piece), text) == _outcome(json.loads, text)


@pytest.mark.parametrize("depth", [50, 100_000])
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_nesting_too_deep_for_json_loads_is_a_recursion_error_in_steps_too(depth: int, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    # A wide level at every depth, so that the walk opens each container itself.
    filler = '"' + "x" * 40 + '",' if opening == "[" else ""
    text = (opening + filler) * depth + "1" + closing * depth
    assert _outcome(_in_steps(32), text) == _outcome(json.loads, text)


def test_a_string_larger_than_a_piece_is_decoded_a_piece_at_a_time() -> None:
    text = json.dumps({"text": 'ab"c\\\n\ud800é\U0001f600' * 5_000}, ensure_ascii=False)
    parser = JsonInSteps(text, piece=1024)
    steps = sum(1 for _ in parser.steps())
    assert parser.value == json.loads(text)
    # About one step per piece, none holding more than a piece (and the halving of one run).
    assert steps >= len(text) // 1024 - 1
    assert parser.scanned <= 3 * len(text)


def test_the_size_estimate_leaves_out_what_strings_hold() -> None:
    text = json.dumps({"text": '{}[],"' * 1000})
    assert parsed_size(text) == parsed_size(text.encode())
    # One object with one member: its text, the object and the two strings; the braces, brackets
    # and commas inside the string count as text only. The quick count takes them for values.
    assert parsed_size(text) == len(text) + 200 + 2 * 50
    assert quick_size(text) > 20 * len(text)
    assert over(text, 2 * len(text)) is None
    assert over(text, len(text)) == parsed_size(text)


@settings(max_examples=100)
@given(text=_texts(), whitespace=st.sampled_from(["", " ", "\n  "]))
def test_the_quick_count_never_says_less_than_the_one_leaving_strings_out(text: str, whitespace: str) -> None:
    """The quick count is the gate: a text it passes is parsed without the string-aware count, so it
    must never be the smaller of the two, in text or in bytes."""
    text = text.replace(",", "," + whitespace)
    assert quick_size(text) >= parsed_size(text)
    data = text.encode("utf-8", "surrogatepass")
    assert quick_size(data) >= parsed_size(data)


def test_many_small_values_are_refused_part_way_past_the_size_they_may_take() -> None:
    text = "[" + ",".join(["{}"] * 100_000) + "]"
    parser = JsonInSteps(text, max_size=1_000_000, piece=4096)
    with pytest.raises(ParsedTooLargeError) as raised:
        for _ in parser.steps():
            pass
    # Stopped within a few pieces of the limit, not at the end of the text.
    assert 1_000_000 < raised.value.size <= 1_000_000 + 4 * parsed_size(",{}" * 2048)
    assert parser.scanned < len(text) // 2


def test_strings_full_of_braces_are_not_refused_for_them() -> None:
    """A text whose strings hold many braces (code in a call's arguments) is counted as the text it
    is once the quick count says too much, and parses."""
    text = json.dumps([{"arguments": "{}" * 2000} for _ in range(50)])
    parser = JsonInSteps(text, max_size=3 * len(text), piece=4096)
    for _ in parser.steps():
        pass
    assert parser.value == json.loads(text)
    assert quick_size(text) > 3 * len(text)


@pytest.mark.parametrize(
    "text",
    [
        "\ufeff{}",
        '\ufeff["a", 1]',
        '{"a": 1} {"b": 2}',
        "[1]]",
        "1 2",
        '"done" ,',
        '{"a": [1, {"b": "c"}]}\n\n x',
    ],
    ids=[
        "bom-object",
        "bom-array",
        "two-documents",
        "stray-closer",
        "two-numbers",
        "stray-comma",
        "trailing-word",
    ],
)
@pytest.mark.parametrize("piece", [16, 64 * 1024])
def test_a_byte_order_mark_or_text_after_the_document_is_json_loads_own_fault(text: str, piece: int) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as found:
        _in_steps(piece)(text)

    assert (found.value.msg, found.value.pos) == (expected.value.msg, expected.value.pos)
    assert found.value.doc == text


def test_values_past_the_size_after_strings_full_of_braces_are_still_refused() -> None:
    """The quick count takes the braces in the strings for values, so the runs are counted again
    leaving out what strings hold, once; many small values after them still stop the parse."""
    braces = [{"arguments": "{}" * 2000} for _ in range(20)]
    text = json.dumps([*braces, *([{}] * 100_000)])
    limit = 3 * len(json.dumps(braces))
    parser = JsonInSteps(text, max_size=limit, piece=4096)

    with pytest.raises(ParsedTooLargeError) as raised:
        for _ in parser.steps():
            pass

    assert raised.value.limit == limit
    assert limit < raised.value.size <= limit + 4 * parsed_size(",{}" * 2048)
    # Counted as text first: a parse that stopped at the strings would not have passed them.
    assert parser.scanned > len(json.dumps(braces))
    assert parser.scanned < len(text)
