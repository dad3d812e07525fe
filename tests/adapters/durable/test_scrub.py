"""What a durable run stores is scrubbed of every secret, found by one search over all of a value's
strings; a step's answer, scrubbed in the step, is not searched again when DBOS stores it."""

from __future__ import annotations

import contextvars
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters.durable.steps as steps
from adapters.durable.steps import _step_answer, scrubbed, to_store
from adapters.redaction import REDACTED, Redactor
from domain import ChatMessage, ChatResponse, FunctionCallContent, FunctionResultContent, TextContent, Usage

SECRET = "sk-live-4242-abcd"
REDACTOR = Redactor([SECRET])


@attrs.frozen
class _Held:
    """An attrs value of our own, with a field of every kind a value holds."""

    name: str
    parts: tuple[Any, ...] = ()
    by_key: Any = None
    count: int = 0


# Texts that may hold the secret in one of the spellings an echo gives it (as is, upper-cased, inside
# other text); values nesting them as the domain's values do.
_pieces = st.sampled_from(["", "a ", " b", "\0", "sk-", "-abcd"])
_texts = st.one_of(
    st.text(max_size=12),
    st.builds(lambda a, s, b: a + s + b, _pieces, st.sampled_from([SECRET, SECRET.upper()]), _pieces),
)
_values = st.recursive(
    st.one_of(_texts, st.integers(), st.none(), st.booleans()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.lists(inner, max_size=3),
        st.dictionaries(_texts, inner, max_size=3),
        st.builds(_Held, _texts, st.lists(inner, max_size=3).map(tuple), inner),
    ),
    max_leaves=12,
)


def _each_string_cut(value: Any) -> Any:
    """The oracle: each string alone with the secret cut, rebuilt level by level (these are shallow)."""
    if isinstance(value, str):
        return REDACTOR.redact(value) if REDACTOR.contains_secret(value) else value
    if isinstance(value, _Held):
        return _Held(
            _each_string_cut(value.name),
            _each_string_cut(value.parts),
            _each_string_cut(value.by_key),
            value.count,
        )
    if isinstance(value, tuple):
        return tuple(_each_string_cut(item) for item in value)
    if isinstance(value, list):
        return [_each_string_cut(item) for item in value]
    if isinstance(value, dict):
        return {_each_string_cut(key): _each_string_cut(item) for key, item in value.items()}
    return value


@given(_values)
def test_a_value_comes_back_as_the_walk_of_every_string_gives_it(value: object) -> None:
    cleaned = scrubbed(value, REDACTOR)

    # The same as looking at each string alone (the walk that cuts), and the value itself when clean.
    assert cleaned == _each_string_cut(value)
    assert SECRET not in repr(cleaned).lower()
    if cleaned == value:
        assert cleaned is value


def _answer(text: str) -> ChatResponse:
    call = FunctionCallContent.parse(
        call_id="c1", name="record_decision", raw_arguments=f'{{"decision": "{text}"}}'
    )
    return ChatResponse(
        messages=(ChatMessage("assistant", (TextContent(text), call)),),
        response_id="resp_1",
        status="completed",
        usage=Usage(10, 2, 12),
    )


def test_a_secret_anywhere_in_an_answer_is_cut_and_a_clean_answer_is_not_copied() -> None:
    echoed = _answer(f"the key was {SECRET}")
    clean = _answer("ship on Friday")

    cut = scrubbed(echoed, REDACTOR)

    assert SECRET not in repr(cut)
    assert cut.messages[0].text == f"the key was {REDACTED}"
    assert scrubbed(clean, REDACTOR) is clean
    assert scrubbed(echoed, Redactor.none()) is echoed


class _Label(str):
    """A string of a type of its own (as an enum's ``str`` members are)."""


def test_a_secret_in_a_string_of_a_type_of_its_own_is_cut_too() -> None:
    value = (_Label(f"label {SECRET}"), {"kind": _Label("clean")})

    cut = scrubbed(value, REDACTOR)

    assert cut == (f"label {REDACTED}", {"kind": "clean"})
    assert cut == _each_string_cut(value)
    assert scrubbed(value[1], REDACTOR) is value[1]


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every value :func:`to_store` searches for secrets."""
    seen: list[object] = []
    search = steps.scrubbed

    def counted(value: Any, redactor: Redactor) -> Any:
        seen.append(value)
        return search(value, redactor)

    monkeypatch.setattr(steps, "scrubbed", counted)
    return seen


def test_the_answer_a_step_just_scrubbed_is_stored_without_a_second_search(searches: list[object]) -> None:
    answer = contextvars.copy_context().run(_stored_after_step, _answer(f"echo {SECRET}"))

    assert SECRET not in repr(answer)
    assert len(searches) == 1  # in the step only


def _stored_after_step(raw: ChatResponse) -> ChatResponse:
    answer = _step_answer(raw, REDACTOR)
    stored = to_store(answer, REDACTOR)
    assert stored is answer
    return stored


def test_anything_else_is_searched_when_stored(searches: list[object]) -> None:
    def in_a_step() -> None:
        answer = _step_answer(_answer("clean"), REDACTOR)
        searches.clear()
        # An equal value that is not the step's answer, the answer under another redactor, another value.
        other = Redactor([SECRET, "sk-other-9999"])
        assert to_store(_answer("clean"), REDACTOR) == answer
        assert to_store(answer, other) is answer
        echoed = FunctionResultContent("c1", f"key {SECRET}")
        assert SECRET not in repr(to_store(echoed, REDACTOR))

    contextvars.copy_context().run(in_a_step)
    assert len(searches) == 3
    # Outside that step's context nothing is known to be scrubbed.
    answer = _answer(f"echo {SECRET}")
    assert SECRET not in repr(to_store(answer, REDACTOR))
    assert len(searches) == 4
