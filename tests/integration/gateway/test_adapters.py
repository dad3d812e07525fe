"""Both Responses adapters through a real LiteLLM proxy: text, tool calls, malformed calls, failures."""

from __future__ import annotations

import json
import uuid
from typing import Any, NamedTuple

import openai
import pytest

from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from application import GuardedToolInvoker
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatTransportError,
    FunctionCallContent,
    FunctionResultContent,
    ToolSpec,
)
from tests.integration.gateway.proxy import MASTER_KEY
from tests.integration.gateway.support import Gateway, sdk_client
from tests.support.doubles import RecordingTools
from tests.support.local_server import ADAPTERS, AdapterType
from tests.support.upstreams import MALFORMED_ARGUMENTS, TEXT_REPLY, RecordedRequest

pytestmark = pytest.mark.gateway


CURRENT_TIME = ToolSpec(
    name="current_time",
    description="The current time in a time zone.",
    parameters={
        "type": "object",
        "properties": {"zone": {"type": "string"}, "format": {"type": ["string", "null"]}},
        "required": ["zone", "format"],
        "additionalProperties": False,
    },
)
TOOLS = ChatOptions(tools=(CURRENT_TIME,))


def _adapter(adapter_type: AdapterType, client: openai.AsyncOpenAI, model: str) -> ChatPort:
    return adapter_type(client, ResponsesSettings(model=model))


def _asked(gateway: Gateway, nonce: str) -> list[RecordedRequest]:
    """The upstream requests that carried this test's nonce, in arrival order."""
    return [r for r in gateway.upstream.requests if r.mentions(nonce)]


def _time_tool() -> RecordingTools:
    """The tool behind the guard: answers ``current_time`` and remembers every call it ran."""
    return RecordingTools(lambda call: {"time": "09:30", "zone": str((call.arguments or {}).get("zone"))})


@ADAPTERS
async def test_text_arrives_whole_with_usage(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    nonce = f"text-{uuid.uuid4()}"
    response = await _adapter(adapter_type, proxy_client, "gw-text").get_response([ChatMessage.user(nonce)])
    assert response.text == TEXT_REPLY
    assert response.finish_reason == "stop"
    assert response.status == "completed"
    assert response.response_id
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        11,
        7,
        18,
    )
    [upstream] = _asked(gateway, nonce)
    # The bridge streams upstream exactly when the client asked for a stream.
    assert bool(upstream.body.get("stream")) is (adapter_type is ResponsesSseAdapter)


class _ToolRound(NamedTuple):
    """One call answered: the first answer and its one call, what the guarded tool ran and gave, the reply."""

    first: ChatResponse
    call: FunctionCallContent
    ran: list[FunctionCallContent]
    result: FunctionResultContent
    second: ChatResponse
    follow_up: list[dict[str, Any]]  # the messages the gateway forwarded upstream with the result


async def _tool_round(chat: ChatPort, gateway: Gateway, question: str, nonce: str) -> _ToolRound:
    """Asks ``question`` with ``nonce``, runs its one call through the guard and sends the result back."""
    history = [ChatMessage.user(f"{question} {nonce}")]
    first = await chat.get_response(history, TOOLS)
    [call] = first.function_calls
    tool = _time_tool()
    result = await GuardedToolInvoker(tool).invoke(call)
    history += [*first.messages, ChatMessage("tool", (result,))]
    second = await chat.get_response(history, TOOLS)
    return _ToolRound(first, call, tool.calls, result, second, _asked(gateway, nonce)[-1].body["messages"])


@ADAPTERS
async def test_a_streamed_tool_call_is_reassembled_and_its_result_accepted(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    chat = _adapter(adapter_type, proxy_client, "gw-tool")

    done = await _tool_round(chat, gateway, "What time is it in Oslo?", f"tool-{uuid.uuid4()}")

    call = done.call
    assert (call.name, call.raw_arguments) == ("current_time", '{"zone": "Europe/Oslo"}')
    assert call.arguments == {"zone": "Europe/Oslo"}
    assert done.first.finish_reason == "tool_calls"
    assert done.ran == [call]
    assert done.second.text == 'Tool said: {"time":"09:30","zone":"Europe/Oslo"}'
    assert done.second.function_calls == ()
    [sent_call] = [m for m in done.follow_up if m.get("tool_calls")]
    assert sent_call["tool_calls"][0]["function"]["arguments"] == '{"zone": "Europe/Oslo"}'


@ADAPTERS
async def test_a_malformed_call_is_guarded_and_its_raw_arguments_go_back_verbatim(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    chat = _adapter(adapter_type, proxy_client, "gw-malformed")

    done = await _tool_round(chat, gateway, "What time is it?", f"malformed-{uuid.uuid4()}")

    call, result = done.call, done.result
    assert call.raw_arguments == MALFORMED_ARGUMENTS
    assert call.parse_error is not None
    assert call.parse_error.kind == "invalid_json"
    assert done.ran == []
    assert result.is_error
    assert isinstance(result.result, dict)
    assert result.result["error"] == "invalid_tool_arguments"
    assert MALFORMED_ARGUMENTS not in json.dumps(result.result)
    # The proxy accepted the verbatim malformed arguments and the model read the guard's answer.
    assert done.second.text.startswith("Tool said: ")
    assert "invalid_tool_arguments" in done.second.text
    [sent_call] = [m for m in done.follow_up if m.get("tool_calls")]
    assert sent_call["tool_calls"][0]["function"]["arguments"] == MALFORMED_ARGUMENTS
    [sent_result] = [m for m in done.follow_up if m.get("role") == "tool"]
    assert sent_result["tool_call_id"] == call.call_id
    assert json.loads(sent_result["content"])["error"] == "invalid_tool_arguments"


@ADAPTERS
@pytest.mark.parametrize("retries", [0, 2], ids=["no-retries", "sdk-retries"])
async def test_an_upstream_500_is_a_typed_transport_error_that_counts_every_attempt(
    gateway: Gateway, adapter_type: AdapterType, retries: int
) -> None:
    """With the SDK's retries (and backoff) the 500 is retried through the proxy, each attempt counted."""
    nonce = f"fail-{uuid.uuid4()}"
    async with sdk_client(gateway.proxy.base_url, max_retries=retries) as client:
        with pytest.raises(ChatTransportError) as caught:
            await _adapter(adapter_type, client, "gw-500").get_response([ChatMessage.user(nonce)])
    assert caught.value.status_code == 500
    assert caught.value.attempts == retries + 1
    assert MASTER_KEY not in repr(caught.value)
    assert MASTER_KEY not in str(caught.value)
    assert len(_asked(gateway, nonce)) == retries + 1
