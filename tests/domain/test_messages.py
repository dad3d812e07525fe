"""Chat messages and their contents (domain/messages.py): frozen, hashable, validated."""

from __future__ import annotations

import attrs
import pytest

from domain import ChatMessage, FunctionCallContent, FunctionResultContent, TextContent


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
