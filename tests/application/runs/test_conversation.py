"""What each request of a run sends: server-side state, its fallback, and the run's prompt cache key."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    Approve,
    LoopSettings,
    RunFinished,
    ToolLoop,
    ToolRegistry,
    ToolRun,
    dumps,
    loads,
)
from domain import ChatMessage, ChatOptions, ChatTransportError, ToolSpec, Usage
from tests.strategies import loop_scripts
from tests.support.doubles import RecordingTools, meeting_time_tools
from tests.support.examples import examples

USER = (ChatMessage.user("What time is the review?"),)
SERVER = LoopSettings(conversation_state="server")
NOT_FOUND = ChatTransportError(
    "HTTP 400 from the Responses endpoint (previous_response_not_found): Previous response with id "
    "'resp_scripted_1' not found.",
    status_code=400,
)


def _options(chat: ScriptedChat) -> list[ChatOptions]:
    sent = [request.options for request in chat.requests]
    assert all(options is not None for options in sent)
    return [options for options in sent if options is not None]


CALL = ScriptedTurn(calls=(("c1", "meeting_time", "{}"),))
CALL_AGAIN = ScriptedTurn(calls=(("c2", "meeting_time", "{}"),))
ANSWER = ScriptedTurn(text="At ten.")


# ---------------------------------------------------------------- server-side state


async def test_server_state_sends_only_what_is_new_after_a_tool_round() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, ANSWER)
    run = await ToolLoop(chat, SERVER).run(USER, options, tools)

    first, second = chat.requests
    assert first.messages == USER
    assert first.options is not None
    assert first.options.previous_response_id is None
    assert first.options.store is True
    # The second request: the stored answer's id and the tool results alone.
    assert second.options is not None
    assert second.options.previous_response_id == "resp_scripted_1"
    assert second.options.store is True
    assert second.messages == (run.messages[1],)
    assert second.messages[0].role == "tool"
    # The whole history stays with the run either way.
    assert run.messages[0].contents[0] == CALL.response(1).messages[0].contents[0]
    assert run.text == "At ten."


async def test_client_state_sends_the_whole_history_and_never_a_previous_response() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, ANSWER)
    run = await ToolLoop(chat).run(USER, options, tools)
    second = chat.requests[1]
    assert second.messages == (*USER, *run.messages[:2])
    assert all(o.previous_response_id is None and o.store is None for o in _options(chat))


async def test_a_stored_response_the_provider_lost_is_answered_by_the_whole_history_once() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, NOT_FOUND, ANSWER)
    run = await ToolLoop(chat, SERVER).run(USER, options, tools)
    assert run.text == "At ten."
    chained, whole = chat.requests[1:]
    assert chained.options is not None
    assert chained.options.previous_response_id == "resp_scripted_1"
    assert whole.options is not None
    assert whole.options.previous_response_id is None
    assert whole.messages == (*USER, *run.messages[:2])
    # The refused request added nothing to the run.
    assert len(run.responses) == 2


async def test_after_a_resend_the_run_chains_again_from_the_new_response() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, NOT_FOUND, CALL_AGAIN, ANSWER)
    run = await ToolLoop(chat, SERVER).run(USER, options, tools)
    assert run.text == "At ten."
    last = chat.requests[-1]
    assert last.options is not None
    assert last.options.previous_response_id == "resp_scripted_3"
    assert last.messages == (run.messages[-2],)


async def test_the_whole_history_is_never_resent_twice_in_a_row() -> None:
    tools, options = meeting_time_tools()
    # Chained, refused; resent whole, answered; chained again, refused again: that one is raised.
    chat = ScriptedChat(CALL, NOT_FOUND, CALL_AGAIN, NOT_FOUND, ANSWER)
    with pytest.raises(ChatTransportError) as caught:
        await ToolLoop(chat, SERVER).run(USER, options, tools)
    assert caught.value.status_code == 400
    assert len(chat.requests) == 4
    assert chat.remaining == 1


@pytest.mark.parametrize(
    "error",
    [
        ChatTransportError("HTTP 400 from the Responses endpoint: the input is too long", status_code=400),
        ChatTransportError("HTTP 404: previous_response_id", status_code=404),
    ],
    ids=["another-400", "not-a-400"],
)
async def test_other_failures_of_a_chained_request_are_not_resent(error: ChatTransportError) -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, error, ANSWER)
    with pytest.raises(ChatTransportError):
        await ToolLoop(chat, SERVER).run(USER, options, tools)
    assert len(chat.requests) == 2


async def test_the_first_request_is_not_resent_it_has_no_stored_response() -> None:
    chat = ScriptedChat(NOT_FOUND, ANSWER)
    with pytest.raises(ChatTransportError):
        await ToolLoop(chat, SERVER).run(USER, None, RecordingTools())
    assert len(chat.requests) == 1


async def test_a_streamed_run_chains_its_requests_the_same_way() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, ANSWER)
    events = [event async for event in ToolLoop(chat, SERVER).run_events(USER, options, tools)]
    assert events
    assert [o.previous_response_id for o in _options(chat)] == [None, "resp_scripted_1"]


def _approval_tools() -> tuple[ToolRegistry, ChatOptions]:
    tools = ToolRegistry()

    @attrs.frozen
    class Slot:
        time: str

    @tools.tool(description="Move the meeting", needs_approval=True, params=Slot)
    def move(slot: Slot) -> str:
        return f"moved to {slot.time}"

    return tools, ChatOptions(tools=tools.specs)


async def test_a_resumed_run_goes_on_from_the_held_answer_with_the_same_cache_key() -> None:
    tools, options = _approval_tools()
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "move", '{"time": "11:00"}'),)), ANSWER)
    loop = ToolLoop(chat, SERVER)
    paused = await loop.run(USER, options, tools)
    assert paused.state is not None
    state = loads(dumps(paused.state))
    assert state == paused.state
    assert state.run_id is not None
    run = await loop.resume(state, {"c1": Approve()}, tools)
    assert run.text == "At ten."
    before, after = _options(chat)
    assert after.previous_response_id == paused.state.responses[-1].response_id
    assert chat.requests[1].messages == (run.messages[-2],)
    assert after.prompt_cache_key == before.prompt_cache_key


Script = list[tuple[str, list[tuple[str, str]]]]


async def _run_script(
    script: Script, settings: LoopSettings, *, streamed: bool
) -> tuple[ToolRun, ScriptedChat]:
    chat = ScriptedChat(
        *(ScriptedTurn(text=text, calls=[(cid, "a", raw) for cid, raw in calls]) for text, calls in script)
    )
    loop, options = ToolLoop(chat, settings), ChatOptions(tools=(ToolSpec("a"),))
    if not streamed:
        return await loop.run(USER, options, RecordingTools()), chat
    events = [event async for event in loop.run_events(USER, options, RecordingTools())]
    assert isinstance(events[-1], RunFinished)
    return events[-1].result, chat


@settings(max_examples=examples(60))
@given(script=loop_scripts(), streamed=st.booleans())
async def test_server_state_sends_exactly_what_the_stored_chain_lacks_and_runs_as_client_state_does(
    script: Script, streamed: bool
) -> None:
    client_settings = LoopSettings(max_consecutive_tool_errors=100)
    client, client_chat = await _run_script(script, client_settings, streamed=streamed)
    server_settings = attrs.evolve(client_settings, conversation_state="server")
    server, server_chat = await _run_script(script, server_settings, streamed=streamed)

    assert server == client
    for number, (whole, sent) in enumerate(zip(client_chat.requests, server_chat.requests, strict=True)):
        assert sent.options is not None
        assert sent.options.store is True
        if number == 0:
            assert sent.messages == whole.messages
            assert sent.options.previous_response_id is None
            continue
        # What the provider stored (the last request and its answer) and what is sent are the whole history.
        before = client_chat.requests[number - 1].messages
        assert (*before, *client.responses[number - 1].messages, *sent.messages) == whole.messages
        assert sent.options.previous_response_id == client.responses[number - 1].response_id


# ---------------------------------------------------------------- the prompt cache key


async def test_every_request_of_a_run_carries_one_cache_key_named_by_what_the_run_starts_from() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(CALL, ANSWER, CALL, ANSWER, CALL, ANSWER)
    loop = ToolLoop(chat, LoopSettings(prompt_cache_retention="24h"))
    await loop.run(USER, options, tools)
    await loop.run(USER, options, tools)
    await loop.run([ChatMessage.user("Something else entirely.")], options, tools)
    keys = [o.prompt_cache_key for o in _options(chat)]
    assert keys[0] is not None
    assert keys[0] == keys[1]
    # The same start, the same key: a run asked again sends the very requests it sent before.
    assert keys[2] == keys[3] == keys[0]
    assert keys[4] == keys[5]
    assert keys[4] != keys[0]
    assert {o.prompt_cache_retention for o in _options(chat)} == {"24h"}


async def test_a_hosts_own_cache_key_and_retention_win_across_runs() -> None:
    tools, _ = meeting_time_tools()
    options = ChatOptions(
        tools=tools.specs, prompt_cache_key="meeting-summaries", prompt_cache_retention="in_memory"
    )
    chat = ScriptedChat(CALL, ANSWER, ANSWER)
    loop = ToolLoop(chat, LoopSettings(prompt_cache_retention="24h"))
    await loop.run(USER, options, tools)
    await loop.run(USER, options, tools)
    assert {(o.prompt_cache_key, o.prompt_cache_retention) for o in _options(chat)} == {
        ("meeting-summaries", "in_memory")
    }


async def test_a_resumed_run_keeps_its_cache_key_in_client_state_too() -> None:
    tools, options = _approval_tools()
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "move", '{"time": "11:00"}'),)), ANSWER)
    loop = ToolLoop(chat)
    paused = await loop.run(USER, options, tools)
    assert paused.state is not None
    await ToolLoop(chat).resume(loads(dumps(paused.state)), {"c1": Approve()}, tools)
    before, after = _options(chat)
    assert before.prompt_cache_key == after.prompt_cache_key == paused.state.run_id
    assert after.previous_response_id is None


# ---------------------------------------------------------------- the cached share


@pytest.mark.parametrize(
    ("usage", "share"),
    [
        (Usage(input_tokens=1000, cached_input_tokens=250), 0.25),
        (Usage(input_tokens=1000, cached_input_tokens=0), 0.0),
        (Usage(input_tokens=1000), None),
        (Usage(cached_input_tokens=5), None),
        (Usage(input_tokens=0, cached_input_tokens=0), None),
    ],
)
def test_usage_reports_the_share_of_input_read_from_the_cache(usage: Usage, share: float | None) -> None:
    assert usage.cached_share == share


async def test_a_runs_usage_reports_the_cached_share_of_all_its_requests() -> None:
    tools, options = meeting_time_tools()
    chat = ScriptedChat(
        attrs.evolve(CALL, usage=Usage(input_tokens=1000, cached_input_tokens=0)),
        attrs.evolve(ANSWER, usage=Usage(input_tokens=1000, cached_input_tokens=900)),
    )
    run = await ToolLoop(chat).run(USER, options, tools)
    assert run.usage is not None
    assert run.usage.cached_share == 0.45


async def test_a_states_options_keep_the_request_fields_of_this_page_through_a_document() -> None:
    options = ChatOptions(
        response_format={"type": "json_schema", "name": "Plan", "schema": {"type": "object"}, "strict": True},
        previous_response_id="resp_1",
        prompt_cache_key="summaries-v1",
        prompt_cache_retention="24h",
    )
    tools, _ = _approval_tools()
    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "move", '{"time": "11:00"}'),)))
    paused = await ToolLoop(chat).run(USER, attrs.evolve(options, tools=tools.specs), tools)
    assert paused.state is not None
    assert loads(dumps(paused.state)) == paused.state
    assert loads(dumps(paused.state)).options.response_format == options.response_format
