"""Captured content as the GenAI conventions' JSON messages: every part kept, in order, with its kind."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError
from types import MappingProxyType

import pytest
from hypothesis import given

from adapters.scripted import ScriptedChat
from adapters.telemetry import InstrumentedChat, Telemetry
from adapters.telemetry import instruments as telemetry_instruments
from adapters.telemetry.content import input_messages, json_text, output_messages, tool_result
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
)
from tests.adapters.telemetry_support import Otel
from tests.domain.strategies import adapter_shaped_responses, usages


def expected_part(content: Content) -> dict[str, object]:
    if isinstance(content, TextContent):
        return {"type": "text", "content": content.text}
    if isinstance(content, ReasoningContent):
        return {"type": "reasoning", "content": content.text}
    if isinstance(content, FunctionCallContent):
        arguments = dict(content.arguments) if content.is_valid and content.arguments is not None else None
        return {
            "type": "tool_call",
            "id": content.call_id,
            "name": content.name,
            "arguments": arguments if arguments is not None else content.raw_arguments,
        }
    if isinstance(content, FunctionResultContent):
        return {"type": "tool_call_response", "id": content.call_id, "response": content.result}
    return {"type": content.type}


@given(response=adapter_shaped_responses())
def test_output_messages_keep_every_part_in_order_with_its_kind(response: ChatResponse) -> None:
    rendered = json.loads(output_messages(response))

    assert len(rendered) == len(response.messages)
    for message, original in zip(rendered, response.messages, strict=True):
        assert message["role"] == original.role
        assert message["parts"] == [expected_part(content) for content in original.contents]
        reason = response.finish_reason or "stop"
        assert message["finish_reason"] == ("tool_call" if reason == "tool_calls" else reason)


@given(response=adapter_shaped_responses())
def test_input_messages_render_a_conversation_with_tool_results(response: ChatResponse) -> None:
    results = tuple(FunctionResultContent(call.call_id, {"ok": [1, 2]}) for call in response.function_calls)
    conversation = (ChatMessage.user("hi"), *response.messages, ChatMessage("tool", results))

    rendered = json.loads(input_messages(conversation))

    assert [message["role"] for message in rendered] == [message.role for message in conversation]
    assert rendered[-1]["parts"] == [expected_part(result) for result in results]


def test_values_json_cannot_hold_are_written_as_their_text() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    assert json.loads(json_text({"read_only": MappingProxyType({"a": 1}), "when": when})) == {
        "read_only": {"a": 1},
        "when": str(when),
    }
    assert tool_result("as is") == "as is"
    assert tool_result({"n": [1, "é"]}) == '{"n":[1,"é"]}'
    assert json.loads(
        output_messages(ChatResponse((ChatMessage("assistant", (ProviderItemContent("x", "{}"),)),)))
    )[0]["parts"] == [{"type": "x"}]


@given(usage=usages)
async def test_token_attributes_appear_exactly_for_the_counts_the_provider_reported(
    usage: Usage | None,
) -> None:
    otel = Otel()
    chat = InstrumentedChat(ScriptedChat(ChatResponse(usage=usage)), otel.telemetry(), model="m")

    await chat.get_response([ChatMessage.user("hi")])

    (span,) = otel.spans()
    found = dict(span.attributes or {})
    counts = (
        {"input": None, "output": None}
        if usage is None
        else {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
        }
    )
    assert found.get("gen_ai.usage.input_tokens") == counts["input"]
    assert found.get("gen_ai.usage.output_tokens") == counts["output"]
    recorded = {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum for p in otel.points("gen_ai.client.token.usage")
    }
    assert recorded == {kind: count for kind, count in counts.items() if count is not None}
    otel.shutdown()


@pytest.fixture
def otel() -> Iterator[Otel]:
    recorded = Otel()
    yield recorded
    recorded.shutdown()


async def test_an_inner_stream_without_aclose_still_ends_the_span(otel: Otel) -> None:
    class Plain:
        """An async iterator that is not a generator: nothing to close."""

        def __init__(self) -> None:
            self.left = [
                ChatResponseUpdate((TextContent("hi"),), item_index=0, part_index=0, finish_reason="stop")
            ]

        def __aiter__(self) -> Plain:
            return self

        async def __anext__(self) -> ChatResponseUpdate:
            if not self.left:
                raise StopAsyncIteration
            return self.left.pop()

    class PlainStreaming:
        async def get_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> ChatResponse:
            return ChatResponse()

        def get_streaming_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> AsyncIterator[ChatResponseUpdate]:
            return Plain()

    chat = InstrumentedChat(PlainStreaming(), otel.telemetry(), model="m")

    assert [u.text async for u in chat.get_streaming_response([ChatMessage.user("hi")])] == ["hi"]
    (span,) = otel.spans()
    assert dict(span.attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)


def test_telemetry_works_from_a_source_tree_that_was_never_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(telemetry_instruments, "version", not_installed)

    telemetry = Telemetry(base_url="https://gateway.example/v1")

    assert repr(telemetry) == "Telemetry(capture_content=False, server='gateway.example':443)"
    assert telemetry.server_attributes() == {"server.address": "gateway.example", "server.port": 443}
