"""Domain values: immutable, hashable where they should be, and their derived properties."""

from __future__ import annotations

import attrs
import pytest

from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    ToolSpec,
    UnknownStepError,
    Usage,
    Workflow,
    WorkflowStep,
)


def test_messages_are_frozen_and_hashable() -> None:
    message = ChatMessage.user("hello")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        message.role = "assistant"  # type: ignore[misc]  # the point: frozen
    assert hash(message) == hash(ChatMessage("user", [TextContent("hello")]))
    assert {message, ChatMessage.user("hello")} == {message}


def test_role_is_validated() -> None:
    with pytest.raises(ValueError, match="role"):
        ChatMessage("robot", ())  # type: ignore[arg-type]  # the point: an invalid role


@pytest.mark.parametrize(
    ("factory", "role"),
    [
        (ChatMessage.user, "user"),
        (ChatMessage.system, "system"),
        (ChatMessage.developer, "developer"),
        (ChatMessage.assistant, "assistant"),
    ],
)
def test_helpers_set_role_and_text(factory: object, role: str) -> None:
    message = factory("hi")  # type: ignore[operator]  # each factory is a classmethod taking text
    assert message.role == role
    assert message.text == "hi"


def test_function_calls_with_unhashable_arguments_still_hash() -> None:
    call = FunctionCallContent.parse(call_id="c", name="n", raw_arguments='{"a": [1, {"b": 2}]}')
    again = FunctionCallContent.parse(call_id="c", name="n", raw_arguments='{"a": [1, {"b": 2}]}')
    assert call == again
    assert hash(call) == hash(again)
    result = FunctionResultContent("c", {"ok": [1, 2]})
    assert hash(result) == hash(FunctionResultContent("c", {"ok": [1, 2]}))


def test_response_text_and_function_calls_span_messages() -> None:
    call_a = FunctionCallContent.parse(call_id="a", name="f", raw_arguments="{}")
    call_b = FunctionCallContent.parse(call_id="b", name="g", raw_arguments="oops")
    response = ChatResponse(
        messages=(
            ChatMessage(
                "assistant", (ReasoningContent("thinking"), TextContent("Hello, "), TextContent("world."))
            ),
            ChatMessage("assistant", (call_a,)),
            ChatMessage("tool", (FunctionResultContent("a", "done"),)),
            ChatMessage("user", (TextContent("not assistant text"),)),
            ChatMessage("assistant", (TextContent("Second."), call_b)),
        )
    )
    assert response.text == "Hello, world.\nSecond."
    assert response.function_calls == (call_a, call_b)
    assert [c.call_id for c in response.function_calls] == ["a", "b"]


def test_usage_adds_field_by_field_and_keeps_unknowns_unknown() -> None:
    total = Usage(1, 2, 3, None, None) + Usage(10, 20, 30, 5, None)
    assert total == Usage(11, 22, 33, 5, None)


def test_tool_spec_parameters_are_read_only_and_options_hashable() -> None:
    spec = ToolSpec("f", "does f", {"type": "object", "properties": {}})
    with pytest.raises(TypeError):
        spec.parameters["x"] = 1  # type: ignore[index]  # the point: read-only
    options = ChatOptions(tools=[spec], initiator="agent")
    assert options.tools == (spec,)
    assert hash(options) == hash(ChatOptions(tools=(spec,), initiator="agent"))
    with pytest.raises(ValueError, match="initiator"):
        ChatOptions(initiator="robot")  # type: ignore[arg-type]  # the point: invalid


def workflow() -> Workflow:
    return Workflow(
        "release",
        (
            WorkflowStep("s1", "Build", "task"),
            WorkflowStep("s2", "Test", "task"),
            WorkflowStep("s3", "Ship", "task"),
        ),
    )


def test_workflow_edits_return_copies() -> None:
    original = workflow()
    added, step = original.add_step("Review", "approval", after="s1")
    assert [s.id for s in added.steps] == ["s1", step.id, "s2", "s3"]
    assert step.id not in {s.id for s in original.steps}
    assert [s.id for s in original.steps] == ["s1", "s2", "s3"]
    assert [s.id for s in original.remove_step("s2").steps] == ["s1", "s3"]
    assert original.rename_step("s3", "Release").step("s3").name == "Release"
    assert [s.id for s in original.move_step("s3", 1).steps] == ["s3", "s1", "s2"]
    assert [s.id for s in original.move_step("s1", 99).steps] == ["s2", "s3", "s1"]
    assert [s.id for s in original.add_step("End", "task")[0].steps][-1] == "step-4"


def test_workflow_rejects_unknown_and_duplicate_ids() -> None:
    with pytest.raises(UnknownStepError) as info:
        workflow().remove_step("nope")
    assert info.value.step_id == "nope"
    with pytest.raises(ValueError, match="unique"):
        Workflow("w", (WorkflowStep("a", "A", "t"), WorkflowStep("a", "B", "t")))
