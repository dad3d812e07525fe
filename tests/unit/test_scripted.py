"""ScriptedChat: plays its script in order, records requests, and fails loudly when it runs out."""

from __future__ import annotations

import pytest

from adapters.scripted import ScriptedChat, ScriptedRequest, ScriptedTurn, ScriptExhaustedError
from domain import ChatMessage, ChatOptions, ChatPort, ChatResponse, ChatTransportError, TextContent, Usage


def test_the_fake_satisfies_the_port() -> None:
    port: ChatPort = ScriptedChat()
    assert isinstance(port, ScriptedChat)


async def test_a_turn_becomes_the_response_an_adapter_would_return() -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            text="Let me look.",
            calls=[("c1", "list_steps", ""), ("c2", "add_step", '{"name": "x"')],
            usage=Usage(1, 2, 3),
            response_id="resp_1",
        )
    )

    response = await chat.get_response([ChatMessage.user("hi")])

    (message,) = response.messages
    assert message.role == "assistant"
    assert message.contents[0] == TextContent("Let me look.")
    first, second = response.function_calls
    assert (first.call_id, first.name, first.raw_arguments) == ("c1", "list_steps", "")
    assert first.parse_error is not None
    assert first.parse_error.kind == "empty"
    assert second.raw_arguments == '{"name": "x"'
    assert second.parse_error is not None
    assert second.parse_error.kind == "invalid_json"
    assert (response.response_id, response.finish_reason, response.usage) == (
        "resp_1",
        "tool_calls",
        Usage(1, 2, 3),
    )


async def test_a_text_turn_stops_and_gets_a_numbered_id() -> None:
    chat = ScriptedChat(ScriptedTurn(text="a"), ScriptedTurn(text="b"))
    await chat.get_response([])
    second = await chat.get_response([])
    assert (second.text, second.finish_reason, second.response_id) == ("b", "stop", "resp_scripted_2")


async def test_requests_are_recorded_as_sent() -> None:
    chat = ScriptedChat(ScriptedTurn(text="a"), ScriptedTurn(text="b"))
    options = ChatOptions(initiator="agent")
    conversation = [ChatMessage.user("one")]

    await chat.get_response(conversation)
    conversation.append(ChatMessage.assistant("later"))
    await chat.get_response(conversation, options)

    assert chat.requests == (
        ScriptedRequest((ChatMessage.user("one"),), None),
        ScriptedRequest((ChatMessage.user("one"), ChatMessage.assistant("later")), options),
    )
    assert chat.remaining == 0


async def test_ready_responses_are_returned_and_errors_raised() -> None:
    ready = ChatResponse(messages=(ChatMessage.assistant("as is"),), response_id="r")
    failure = ChatTransportError("down", status_code=503)
    chat = ScriptedChat(ready, failure)

    assert await chat.get_response([]) is ready
    with pytest.raises(ChatTransportError) as caught:
        await chat.get_response([])
    assert caught.value is failure


async def test_running_out_of_script_is_a_loud_test_failure() -> None:
    chat = ScriptedChat(ScriptedTurn(text="only"))
    await chat.get_response([])
    with pytest.raises(ScriptExhaustedError, match="request 2 arrived but the script has only 1 turn"):
        await chat.get_response([])
    assert len(chat.requests) == 2
    assert issubclass(ScriptExhaustedError, AssertionError)
