"""GuardedToolInvoker: a call whose arguments failed to parse never reaches the tool."""

from __future__ import annotations

import os

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from application import GuardedToolInvoker
from domain import FunctionCallContent, FunctionResultContent, ToolInvokerPort
from tests.strategies import MARKER, malformed_argument_strings, valid_argument_strings
from tests.support.doubles import RaisingTools, RecordingTools
from tests.support.examples import examples

# The one property that CI runs 10,000 times; locally it stays quick.
GUARD_EXAMPLES = 10_000 if os.environ.get("CI") else 200


def spy() -> RecordingTools:
    """A tool that records every call it is awaited with and answers with a fixed success."""
    return RecordingTools(lambda call: {"ran": call.name})


class WrongIdInvoker:
    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        return FunctionResultContent("some-other-id", "ok")


def test_spies_satisfy_the_port() -> None:
    ports: tuple[ToolInvokerPort, ...] = (spy(), RaisingTools(f"inner exploded {MARKER}"), WrongIdInvoker())
    guard: ToolInvokerPort = GuardedToolInvoker(ports[0])
    assert guard is not None


@settings(max_examples=examples(GUARD_EXAMPLES))
@given(
    raw=malformed_argument_strings,
    call_id=st.text(min_size=1, max_size=20),
    name=st.sampled_from(["list_steps", "list_participants", "record_decision", "anything"]),
)
async def test_malformed_arguments_never_invoke_the_tool(raw: str, call_id: str, name: str) -> None:
    inner = spy()
    call = FunctionCallContent.parse(call_id=call_id, name=name, raw_arguments=raw)

    result = await GuardedToolInvoker(inner).invoke(call)

    assert inner.calls == []
    assert result.call_id == call_id
    assert result.is_error
    assert isinstance(result.result, dict)
    assert result.result["error"] == "invalid_tool_arguments"
    message = result.result["message"]
    assert isinstance(message, str)
    assert MARKER not in message
    if len(raw.strip()) > 3:
        assert raw.strip() not in message


@given(raw=valid_argument_strings(), call_id=st.text(min_size=1, max_size=20))
async def test_parsed_arguments_are_delegated_unchanged(raw: str, call_id: str) -> None:
    inner = spy()
    call = FunctionCallContent.parse(call_id=call_id, name="tool", raw_arguments=raw)

    result = await GuardedToolInvoker(inner).invoke(call)

    assert inner.calls == [call]
    assert result == FunctionResultContent(call_id, {"ran": "tool"})


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("", "the arguments were empty"),
        ("  \n", "the arguments were empty"),
        ('{"a": 1', "the arguments were not valid JSON"),
        ('{"a": NaN}', "the arguments were not valid JSON"),
        ('{"a": 1, "a": 2}', "the arguments were not valid JSON"),
        ("[1, 2]", "the arguments were JSON but not a JSON object"),
        ("null", "the arguments were JSON but not a JSON object"),
    ],
)
async def test_the_message_names_the_kind_of_failure(raw: str, why: str) -> None:
    call = FunctionCallContent.parse(call_id="c", name="t", raw_arguments=raw)
    result = await GuardedToolInvoker(spy()).invoke(call)
    assert isinstance(result.result, dict)
    assert why in str(result.result["message"])


async def test_a_truncated_object_reports_where_parsing_stopped() -> None:
    call = FunctionCallContent.parse(call_id="c", name="t", raw_arguments='{"owner": "Ann",')
    result = await GuardedToolInvoker(spy()).invoke(call)
    assert isinstance(result.result, dict)
    assert "character 16" in str(result.result["message"])


async def test_the_message_ignores_whatever_text_the_parse_error_carries() -> None:
    parsed = FunctionCallContent.parse(call_id="c", name="t", raw_arguments="{")
    assert parsed.parse_error is not None
    tampered = attrs.evolve(parsed, parse_error=attrs.evolve(parsed.parse_error, message=MARKER))

    result = await GuardedToolInvoker(spy()).invoke(tampered)

    assert MARKER not in str(result.result)


@pytest.mark.parametrize("raw", ["", "{", f'["{MARKER}"]'])
async def test_a_call_built_without_parse_is_parsed_and_refused(raw: str) -> None:
    inner = spy()
    call = FunctionCallContent(call_id="c", name="t", raw_arguments=raw)

    guard = GuardedToolInvoker(inner)
    result = await guard.invoke(call)

    assert guard.refused == {"c"}
    assert inner.calls == []
    assert isinstance(result.result, dict)
    assert result.result["error"] == "invalid_tool_arguments"


async def test_a_call_built_without_parse_is_delegated_with_its_arguments_parsed() -> None:
    inner = spy()
    call = FunctionCallContent(call_id="c", name="t", raw_arguments='{"a": 1}')

    guard = GuardedToolInvoker(inner)
    await guard.invoke(call)

    assert guard.refused == frozenset()
    assert [c.arguments for c in inner.calls] == [{"a": 1}]


async def test_an_inner_invoker_that_raises_still_answers_the_call_without_its_text() -> None:
    call = FunctionCallContent.parse(call_id="c", name="t", raw_arguments="{}")

    result = await GuardedToolInvoker(RaisingTools(f"inner exploded {MARKER}")).invoke(call)

    assert result == FunctionResultContent("c", {"error": "tool_failed", "message": "The tool failed."}, True)


async def test_the_result_always_carries_the_calls_id() -> None:
    call = FunctionCallContent.parse(call_id="c-1", name="t", raw_arguments="{}")

    result = await GuardedToolInvoker(WrongIdInvoker()).invoke(call)

    assert result == FunctionResultContent("c-1", "ok")


@given(
    calls=st.lists(
        st.tuples(
            st.text(min_size=1, max_size=8), st.one_of(malformed_argument_strings, valid_argument_strings())
        )
    )
)
async def test_the_guard_reports_exactly_the_calls_it_answered_itself(calls: list[tuple[str, str]]) -> None:
    inner = spy()
    guard = GuardedToolInvoker(inner)
    parsed = [
        FunctionCallContent.parse(call_id=call_id, name="t", raw_arguments=raw) for call_id, raw in calls
    ]

    for call in parsed:
        await guard.invoke(call)

    delegated = {call.call_id for call in inner.calls}
    assert guard.refused == {call.call_id for call in parsed if call.parse_error is not None}
    assert guard.refused | delegated == {call.call_id for call in parsed}
