"""ScriptedChat: plays its script (whole or streamed) in order, records requests, fails loudly at its end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedRequest, ScriptedTurn, ScriptExhaustedError
from domain import ChatMessage, ChatOptions, ChatPort, ChatResponse, ChatResponseUpdate, TextContent, Usage
from domain.errors import ChatTransportError


def test_the_fake_satisfies_the_chat_port() -> None:
    # mypy --strict checks the assignment: a fake that drifted from ChatPort fails the build.
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


async def collect(updates: AsyncIterator[ChatResponseUpdate]) -> list[ChatResponseUpdate]:
    return [update async for update in updates]


@given(
    text=st.text(max_size=40),
    calls=st.lists(
        st.tuples(st.text(min_size=1, max_size=5), st.just("f"), st.text(max_size=12)), max_size=3
    ),
)
async def test_a_streamed_turn_folds_to_what_get_response_returns(
    text: str, calls: list[tuple[str, str, str]]
) -> None:
    turn = ScriptedTurn(text=text, calls=calls, usage=Usage(1, 2, 3))

    updates = await collect(ScriptedChat(turn).get_streaming_response([ChatMessage.user("hi")]))

    assert ChatResponse.from_updates(updates) == await ScriptedChat(turn).get_response(
        [ChatMessage.user("hi")]
    )
    assert "".join(update.text for update in updates) == text
    assert [c.raw_arguments for u in updates for c in u.function_calls] == [raw for _, _, raw in calls]


async def test_a_streamed_turn_is_text_in_pieces_then_each_call_whole_then_the_metadata() -> None:
    chat = ScriptedChat(
        ScriptedTurn(text="Let me look at it.", calls=[("c1", "list_steps", "{}"), ("c2", "f", '{"a"')])
    )

    updates = await collect(chat.get_streaming_response([]))

    first, *middle, last = updates
    assert (first.response_id, first.model_id, first.contents) == ("resp_scripted_1", "scripted", ())
    texts = [u.text for u in middle if u.text]
    assert len(texts) > 1
    assert "".join(texts) == "Let me look at it."
    assert [[c.call_id for c in u.function_calls] for u in middle if u.function_calls] == [["c1"], ["c2"]]
    assert (last.status, last.finish_reason, last.contents) == ("completed", "tool_calls", ())


async def test_a_stream_is_recorded_when_asked_for_even_if_never_read() -> None:
    chat = ScriptedChat(ScriptedTurn(text="a"))
    options = ChatOptions(initiator="agent")

    stream = chat.get_streaming_response([ChatMessage.user("one")], options)

    assert chat.requests == (ScriptedRequest((ChatMessage.user("one"),), options, stream=True),)
    assert chat.remaining == 0
    await collect(stream)


async def test_a_scripted_error_raises_from_the_stream_after_its_partial() -> None:
    partial = ChatResponse(messages=(ChatMessage.assistant("half an ans"),), response_id="r1")
    failure = ChatTransportError("timed out", partial=partial)
    chat = ScriptedChat(failure, ChatTransportError("down"))

    seen: list[ChatResponseUpdate] = []

    async def read_all() -> None:
        async for update in chat.get_streaming_response([]):
            seen.append(update)

    with pytest.raises(ChatTransportError) as caught:
        await read_all()
    assert caught.value is failure
    assert ChatResponse.from_updates(seen) == partial

    with pytest.raises(ChatTransportError, match="down"):
        await collect(chat.get_streaming_response([]))


async def test_running_out_of_script_raises_from_the_stream() -> None:
    chat = ScriptedChat()
    stream = chat.get_streaming_response([])
    with pytest.raises(ScriptExhaustedError, match="request 1 arrived but the script has only 0 turn"):
        await collect(stream)


async def test_leaving_a_stream_early_closes_it_and_stops_playing() -> None:
    chat = ScriptedChat(ScriptedTurn(text="a long answer in pieces"))
    stream = chat.get_streaming_response([])
    assert isinstance(stream, AsyncGenerator)

    first = await anext(stream)
    await stream.aclose()

    assert first.response_id == "resp_scripted_1"
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_stream_lets_other_tasks_run_between_updates() -> None:
    chat = ScriptedChat(ScriptedTurn(text="abcdef"))
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    updates = await collect(chat.get_streaming_response([]))
    task.cancel()

    assert ticks >= len(updates) - 1
