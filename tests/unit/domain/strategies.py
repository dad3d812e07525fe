"""Hypothesis strategies for the domain tests: surrogates in argument strings."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import strategies as st

from tests.strategies import json_values

_ESCAPE = re.compile(r"\\u[0-9a-f]{4}")

# Every surrogate code point, high and low; Hypothesis's text() leaves them out by default.
surrogates: st.SearchStrategy[str] = st.characters(categories=["Cs"])

# Any str at all, surrogates included, in any order (so high/low pairs of raw code points occur too).
any_text: st.SearchStrategy[str] = st.text(st.characters() | surrogates)

# Characters outside the Basic Multilingual Plane: ensure_ascii spells each as an escaped pair.
astral_characters: st.SearchStrategy[str] = st.characters(min_codepoint=0x10000)


@st.composite
def texts_with_a_lone_surrogate(draw: st.DrawFn) -> str:
    """Surrogate-free text with one surrogate code point planted in it, so it is unpaired."""
    text = draw(st.text(max_size=8))
    cut = draw(st.integers(min_value=0, max_value=len(text)))
    return text[:cut] + draw(surrogates) + text[cut:]


@st.composite
def _planted(draw: st.DrawFn, leaf: st.SearchStrategy[str]) -> dict[str, Any]:
    """A JSON object holding one ``leaf`` string as a key or a value, at the top or nested."""
    planted = draw(leaf)
    place = draw(st.sampled_from(["key", "value", "nested_key", "nested_value", "in_list"]))
    container: Any
    if place in ("key", "nested_key"):
        container = {planted: draw(json_values)}
    elif place == "in_list":
        container = [draw(json_values), planted]
    else:
        container = {"s": planted}
    if place.startswith("nested") or place == "in_list":
        for _ in range(draw(st.integers(min_value=1, max_value=4))):
            container = draw(st.sampled_from([{"n": container}, [container]]))
    siblings = draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))
    return {**siblings, "planted": container}


@st.composite
def lone_surrogate_arguments(draw: st.DrawFn) -> str:
    """A strict JSON object with an unpaired surrogate in a key or string, escaped or raw."""
    obj = draw(_planted(texts_with_a_lone_surrogate()))
    # ensure_ascii writes the surrogate as a \\udXXX escape; without it the code point stays raw.
    return json.dumps(obj, ensure_ascii=draw(st.booleans()))


@st.composite
def surrogate_pair_arguments(draw: st.DrawFn) -> str:
    """A strict JSON object whose astral characters are written as escaped pairs (or left raw)."""
    text = draw(st.text(max_size=6)) + draw(astral_characters) + draw(st.text(max_size=6))
    obj = draw(_planted(st.just(text)))
    raw = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    # Escapes are case-insensitive: an upper-case pair is the same character.
    return _ESCAPE.sub(lambda m: m[0].upper().replace("U", "u"), raw) if draw(st.booleans()) else raw
