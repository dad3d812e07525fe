"""Messages, instructions and tool results as the GenAI conventions' JSON content attributes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from application.scrubbing import shown_json
from domain import (
    ChatMessage,
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    JsonValue,
    ReasoningContent,
    TextContent,
)

__all__ = ["input_messages", "json_text", "output_messages", "system_instructions", "tool_result"]

# The conventions' finish reasons name a tool call in the singular.
_FINISH_REASONS: Final[Mapping[str, str]] = {"tool_calls": "tool_call"}


def _jsonable(value: object) -> object:
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def json_text(value: object) -> str:
    """Compact JSON; read-only mappings and anything else JSON cannot hold are written as their text, and
    what lies deeper than ``json.dumps`` follows as ``application.scrubbing.TOO_DEEP``."""
    return shown_json(value, ensure_ascii=False, separators=(",", ":"), default=_jsonable)


def _part(content: Content) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "text", "content": content.text}
    if isinstance(content, ReasoningContent):
        return {"type": "reasoning", "content": content.text}
    if isinstance(content, FunctionCallContent):
        # Malformed arguments are what the model sent, so they are shown as that string.
        arguments: object = content.arguments if content.is_valid else content.raw_arguments
        return {"type": "tool_call", "id": content.call_id, "name": content.name, "arguments": arguments}
    if isinstance(content, FunctionResultContent):
        return {"type": "tool_call_response", "id": content.call_id, "response": content.result}
    # An item this package does not interpret: its kind is known, its body is the provider's.
    return {"type": content.type}


def _message(message: ChatMessage) -> dict[str, Any]:
    return {"role": message.role, "parts": [_part(content) for content in message.contents]}


def input_messages(messages: Sequence[ChatMessage]) -> str:
    """``gen_ai.input.messages``: the conversation as sent, one entry per message, parts in order."""
    return json_text([_message(message) for message in messages])


def output_messages(response: ChatResponse) -> str:
    """``gen_ai.output.messages``: what the model answered, each message with the response's finish reason."""
    reason = response.finish_reason or "stop"
    finish = _FINISH_REASONS.get(reason, reason)
    return json_text([{**_message(message), "finish_reason": finish} for message in response.messages])


def system_instructions(instructions: str) -> str:
    """``gen_ai.system_instructions``: the instructions as one text part."""
    return json_text([{"type": "text", "content": instructions}])


def tool_result(result: JsonValue) -> str:
    """``gen_ai.tool.call.result``: a string as it is, anything else as compact JSON (as on the wire)."""
    return result if isinstance(result, str) else json_text(result)
