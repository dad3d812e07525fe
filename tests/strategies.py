"""Hypothesis strategies shared by every test: JSON values, argument strings, model outputs."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

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
def deep_nesting(draw: st.DrawFn) -> str:
    depth = draw(st.integers(min_value=5_000, max_value=50_000))
    return '{"' + MARKER + '": ' + "[" * depth + "]" * depth + "}"


invalid_json_strings: st.SearchStrategy[str] = st.one_of(
    truncated_objects(),
    trailing_garbage(),
    duplicate_keys(),
    non_finite_literals(),
    deep_nesting(),
    st.text().map(lambda s: MARKER + s),
)

non_object_json_strings: st.SearchStrategy[str] = st.one_of(
    st.just("null"),
    st.lists(json_values, max_size=4).map(lambda v: json.dumps([MARKER, *v])),
    st.integers().map(json.dumps),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.text().map(lambda s: json.dumps(MARKER + s)),
    st.booleans().map(json.dumps),
)

empty_strings: st.SearchStrategy[str] = st.text(alphabet=" \t\r\n", max_size=20)

malformed_argument_strings: st.SearchStrategy[str] = st.one_of(
    invalid_json_strings, non_object_json_strings, empty_strings
)
