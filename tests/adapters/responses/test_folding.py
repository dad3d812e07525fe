"""The event folder (``folding``): realistic streams and JSON bodies fold the same through both adapters, in
OpenAI's and LiteLLM's dialects, whatever a careless gateway changes, and the updates it streams on the way
fold to exactly what ``get_response`` returns."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.offline.render import call_item, message_item, reasoning_item, sse, stream_events
from adapters.responses.folding import EventFolder
from adapters.responses.to_domain import provider_item as provided
from adapters.responses.to_domain import response_contents
from domain import (
    ChatMessage,
    ChatPort,
    ChatResponse,
    FunctionCallContent,
    MalformedResponseError,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
)
from tests.strategies import model_outputs, output_items, output_texts
from tests.support.gateway import (
    CREATED_AT,
    JSON,
    SSE,
    Recorder,
    adapters_for,
    answer,
    answered_and_streamed,
    assert_folds_to,
    assert_streams_what_it_answers,
    every_way,
    response_document,
)

DIALECTS = ("openai", "litellm")


async def ask(adapter: ChatPort) -> ChatResponse:
    return await adapter.get_response([ChatMessage.user("What happened in the meeting?")])


async def ask_with_history(adapter: ChatPort, previous: ChatResponse) -> ChatResponse:
    return await adapter.get_response([ChatMessage.user("What happened in the meeting?"), *previous.messages])


async def fold_all_ways(
    document: dict[str, Any], *, litellm: bool, **stream_options: Any
) -> list[ChatResponse]:
    """The document through both adapters, served once as an event stream and once as JSON."""
    return [await ask(adapter) for adapter in every_way(document, litellm=litellm, **stream_options)]


async def ask_streamed(events: list[dict[str, Any]]) -> ChatResponse:
    """What the streaming adapter folds ``events`` to."""
    streaming, _ = adapters_for(Recorder([answer(sse(events), SSE)]))
    return await ask(streaming)


def _opening() -> dict[str, Any]:
    return {"type": "response.created", "response": response_document([], status="in_progress")}


def _closing() -> dict[str, Any]:
    return {"type": "response.completed", "response": response_document([])}


def _message_started(item_id: str, text: str) -> list[dict[str, Any]]:
    """A message at output index 0, announced empty, then ``text`` as one delta."""
    started = {"type": "message", "id": item_id, "role": "assistant", "content": []}
    delta = {"output_index": 0, "content_index": 0, "item_id": item_id, "delta": text}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": started},
        {"type": "response.output_text.delta", **delta},
    ]


def three_kinds() -> dict[str, Any]:
    """A Response with reasoning (a summary and a text part), a message and a call."""
    return response_document(
        [
            reasoning_item("rs_1", summary=("plan",), texts=("think",)),
            message_item("m", "hello"),
            call_item("f", "c", "n", "{}"),
        ]
    )


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_text_only_answer_folds_the_same_every_way(dialect: str) -> None:
    litellm = dialect == "litellm"
    response_id = "resp_" + "x" * 395 if litellm else "resp_abc"
    message = message_item("msg_1", "The team agreed ", "to ship on Friday.", litellm=litellm)
    document = response_document([message], response_id=response_id, litellm=litellm)

    results = await fold_all_ways(document, litellm=litellm)

    expected_usage = Usage(11, 7, 18, None if litellm else 3, None if litellm else 2)
    # Both parts keep the message item they came in, to send it back as it was.
    item = provided(message)
    for result in results:
        assert result.messages == (
            ChatMessage(
                "assistant", (TextContent("The team agreed ", item), TextContent("to ship on Friday.", item))
            ),
        )
        assert result.text == "The team agreed to ship on Friday."
        assert (result.response_id, result.model_id, result.status) == (
            response_id,
            "gpt-test-2026",
            "completed",
        )
        assert result.created_at == datetime(2025, 11, 24, 16, 0, tzinfo=UTC)
        assert result.created_at.timestamp() == CREATED_AT
        assert result.finish_reason == "stop"
        assert result.usage == expected_usage
    assert all(result == results[0] for result in results)


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_reasoning_summary_and_encrypted_content_come_before_the_text(dialect: str) -> None:
    reasoning = reasoning_item("rs_1", summary=("First I read", " the notes."), encrypted="gAAAA-opaque==")
    said = message_item("msg_1", "Two decisions were made.", litellm=dialect == "litellm")
    document = response_document([reasoning, said], litellm=dialect == "litellm")

    results = await fold_all_ways(document, litellm=dialect == "litellm")

    for result in results:
        (message,) = result.messages
        assert message.contents == (
            ReasoningContent(
                text="First I read\n\n the notes.",
                item_id="rs_1",
                encrypted_content="gAAAA-opaque==",
                summary=("First I read", " the notes."),
                provider_item=provided(reasoning),
            ),
            TextContent("Two decisions were made.", provided(said)),
        )


async def test_raw_reasoning_text_folds_from_its_own_deltas() -> None:
    document = response_document(
        [reasoning_item("rs_1", texts=("step one", "step two")), message_item("m", "4")]
    )

    results = await fold_all_ways(document, litellm=True, terminal_output=False)

    for result in results:
        reasoning = result.messages[0].contents[0]
        assert isinstance(reasoning, ReasoningContent)
        assert (reasoning.text, reasoning.summary) == ("step one\n\nstep two", ())


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_several_function_calls_one_malformed_keep_their_raw_arguments(dialect: str) -> None:
    malformed = '{"owner": "Ana", "task": "write the plan"'
    document = response_document(
        [
            call_item("fc_1", "call_1", "record_action_item", '{"owner":"Ana","task":"plan","due":null}'),
            call_item("fc_2", "call_2", "record_decision", malformed),
            call_item("fc_3", "call_3", "list_participants", ""),
        ],
        litellm=dialect == "litellm",
    )

    results = await fold_all_ways(document, litellm=dialect == "litellm")

    for result in results:
        calls = result.function_calls
        assert [(c.call_id, c.name, c.item_id) for c in calls] == [
            ("call_1", "record_action_item", "fc_1"),
            ("call_2", "record_decision", "fc_2"),
            ("call_3", "list_participants", "fc_3"),
        ]
        assert calls[0].arguments == {"owner": "Ana", "task": "plan", "due": None}
        assert calls[1].raw_arguments == malformed
        assert calls[1].parse_error is not None
        assert calls[1].parse_error.kind == "invalid_json"
        assert calls[2].parse_error is not None
        assert calls[2].parse_error.kind == "empty"
        assert result.finish_reason == "tool_calls"


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_unknown_events_interleaved_are_skipped(dialect: str) -> None:
    litellm = dialect == "litellm"
    document = response_document([message_item("msg_1", "Hello there")], litellm=litellm)
    events = stream_events(document, litellm=litellm)
    noise: list[dict[str, Any]] = [
        {"type": "mystery.event", "delta": "NOT TEXT", "output_index": 0, "content_index": 0},
        {"type": "response.audio.delta", "delta": "AAAA"},
        {"type": "response.output_text.annotation.added", "output_index": 0, "annotation": {"type": "x"}},
        {"type": "keepalive"},
    ]
    interleaved = [event for pair in zip(noise * len(events), events, strict=False) for event in pair]
    clean_result = await ask(adapters_for(Recorder([answer(sse(events, litellm=litellm), SSE)]))[0])

    for adapter in adapters_for(Recorder([answer(sse(interleaved, litellm=litellm), SSE)])):
        result = await ask(adapter)
        assert result.text == "Hello there"
        assert result == clean_result


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_items_only_in_output_item_done_when_completed_output_is_empty(dialect: str) -> None:
    litellm = dialect == "litellm"
    document = response_document(
        [
            reasoning_item("rs_1", summary=("Thinking",), encrypted="enc"),
            message_item("msg_1", "Done."),
            call_item("fc_1", "call_9", "list_steps", "{}"),
        ],
        litellm=litellm,
    )
    body = sse(stream_events(document, litellm=litellm, terminal_output=False), litellm=litellm)
    full = await fold_all_ways(document, litellm=litellm)

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        result = await ask(adapter)
        assert [type(c) for c in result.messages[0].contents] == [
            ReasoningContent,
            TextContent,
            FunctionCallContent,
        ]
        assert result == full[0]


async def test_deltas_alone_fold_when_no_item_finishes() -> None:
    document = response_document(
        [message_item("msg_1", "partial answer"), call_item("fc", "c1", "f", '{"a": 1}')]
    )
    events = [
        e for e in stream_events(document, terminal_output=False) if e["type"] != "response.output_item.done"
    ]
    events = [e for e in events if not e["type"].endswith((".done",)) or e["type"] == "response.completed"]

    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        result = await ask(adapter)
        assert result.text == "partial answer"
        assert [(c.call_id, c.name, c.raw_arguments) for c in result.function_calls] == [
            ("c1", "f", '{"a": 1}')
        ]


async def test_a_finished_call_without_arguments_falls_back_to_its_deltas() -> None:
    document = response_document([call_item("fc", "c1", "f", '{"x": [1, 2]}')])
    events = stream_events(document, terminal_output=False)
    for event in events:
        if event["type"] == "response.output_item.done":
            event["item"] = {k: v for k, v in event["item"].items() if k != "arguments"}
        if event["type"] == "response.function_call_arguments.done":
            event["type"] = "response.function_call_arguments.finished-elsewhere"

    result = await ask_streamed(events)

    assert [c.raw_arguments for c in result.function_calls] == ['{"x": [1, 2]}']


async def test_a_stream_resumed_mid_item_folds_what_follows() -> None:
    document = response_document([message_item("msg_1", "abcdefghij")])
    events = stream_events(document, chunk=2, terminal_output=False)
    resumed = [*[e for e in events if e["type"] == "response.output_text.delta"][2:], events[-1]]

    result = await ask(adapters_for(Recorder([answer(sse(resumed), SSE)]))[0])

    assert result.text == "efghij"
    assert result.response_id == "resp_test"


async def test_usage_absent_is_none() -> None:
    document = response_document([message_item("msg_1", "ok")], usage=None)

    for result in await fold_all_ways(document, litellm=True):
        assert result.usage is None


async def test_provider_items_keep_their_json_and_order() -> None:
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-state"}
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}}
    unknown = {"type": "mystery_item", "id": "my_1", "payload": {"nested": [1, "two", None]}, "flag": True}
    found = message_item("msg_1", "Found it.")
    document = response_document([compaction, search, unknown, found])

    results = await fold_all_ways(document, litellm=False)

    for result in results:
        first, second, third, fourth = result.messages[0].contents
        assert isinstance(first, ProviderItemContent)
        assert isinstance(second, ProviderItemContent)
        assert isinstance(third, ProviderItemContent)
        assert (first.type, first.item_id, json.loads(first.raw_json)) == ("compaction", "cmp_1", compaction)
        assert (second.type, json.loads(second.raw_json)) == ("web_search_call", search)
        assert (third.type, json.loads(third.raw_json)) == ("mystery_item", unknown)
        assert fourth == TextContent("Found it.", provided(found))
    assert all(result == results[0] for result in results)

    recorder = Recorder([answer(json.dumps(response_document([])), JSON)])
    await ask_with_history(adapters_for(recorder)[0], results[0])
    sent_items = json.loads(recorder.requests[0].content)["input"][1:4]
    assert sent_items == [compaction, search, unknown]


async def test_refusal_is_the_assistant_text() -> None:
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    at = {"output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        _opening(),
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.refusal.delta", **at, "delta": "I can't"},
        {"type": "response.refusal.done", **at, "refusal": "I can't help with that."},
        _closing(),
    ]

    streamed = await ask_streamed(events)
    documented = await ask(adapters_for(Recorder([answer(json.dumps(response_document([item])), JSON)]))[1])

    assert streamed.text == documented.text == "I can't help with that."


@pytest.mark.parametrize("status", ["queued", "in_progress"])
async def test_a_final_answer_still_queued_or_in_progress_is_incomplete(status: str) -> None:
    document = response_document([message_item("msg_1", "half an answer")], status=status)

    for adapter in every_way(document):
        result = await ask(adapter)
        assert (result.status, result.finish_reason, result.text) == ("incomplete", None, "half an answer")


@pytest.mark.parametrize("status", ["queued", "in_progress"])
async def test_a_final_answer_still_queued_or_in_progress_with_nothing_in_it_is_malformed(
    status: str,
) -> None:
    document = response_document([], status=status, usage=None)

    for adapter in every_way(document):
        with pytest.raises(MalformedResponseError) as caught:
            await ask(adapter)
        assert caught.value.message == f"the response ended {status} with no output"
        assert caught.value.response_id == "resp_test"


async def test_a_completed_answer_with_no_output_is_still_an_answer() -> None:
    document = response_document([], usage=None)

    for adapter in every_way(document):
        result = await ask(adapter)
        assert (result.status, result.finish_reason, result.messages) == ("completed", "stop", ())


async def test_events_after_the_terminal_event_change_nothing() -> None:
    document = response_document([message_item("msg_1", "final")])
    events = stream_events(document, terminal_output=False)
    late: list[dict[str, Any]] = [
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": " LATE"},
        {"type": "error", "code": "late", "message": "after the end"},
    ]

    result = await ask(adapters_for(Recorder([answer(sse([*events, *late]), SSE)]))[0])

    assert (result.text, result.status) == ("final", "completed")


async def test_a_hosted_tool_item_that_never_finished_keeps_how_it_started() -> None:
    started = {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}
    events: list[dict[str, Any]] = [
        _opening(),
        {"type": "response.output_item.added", "output_index": 0, "item": started},
        {"type": "response.incomplete", "response": response_document([], status="incomplete")},
    ]

    result = await ask_streamed(events)

    (content,) = result.messages[0].contents
    assert isinstance(content, ProviderItemContent)
    assert (content.type, json.loads(content.raw_json)) == ("web_search_call", started)
    assert (result.status, result.finish_reason) == ("incomplete", None)


async def test_a_stream_cut_mid_reasoning_keeps_the_reasoning_in_partial() -> None:
    at = {"output_index": 0, "summary_index": 0, "item_id": "rs_1"}
    events: list[dict[str, Any]] = [
        _opening(),
        {"type": "response.reasoning_summary_text.delta", **at, "delta": "Weighing "},
        {"type": "response.reasoning_summary_text.delta", **at},
        {"type": "response.reasoning_summary_text.delta", **at, "delta": "options"},
    ]

    with pytest.raises(MalformedResponseError) as caught:
        await ask_streamed(events)

    assert caught.value.partial is not None
    (reasoning,) = caught.value.partial.messages[0].contents
    assert reasoning == ReasoningContent("Weighing options", summary=("Weighing options",))


async def test_a_finished_call_without_arguments_or_deltas_has_empty_arguments() -> None:
    bare = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "list_steps"}
    events: list[dict[str, Any]] = [
        _opening(),
        {"type": "response.output_item.done", "output_index": 0, "item": bare},
        _closing(),
    ]

    result = await ask_streamed(events)

    (call,) = result.function_calls
    assert (call.call_id, call.name, call.raw_arguments) == ("call_1", "list_steps", "")
    assert call.parse_error is not None
    assert call.parse_error.kind == "empty"


async def test_done_events_without_their_text_leave_the_deltas_standing() -> None:
    document = three_kinds()
    events = stream_events(document, chunk=2, terminal_output=False)
    for event in events:
        if event["type"] == "response.output_item.done" and event["item"]["type"] != "function_call":
            event["type"] = "response.output_item.lost"
        for field in ("text", "arguments"):
            if event["type"].endswith(".done") and field in event:
                del event[field]

    result = await ask_streamed(events)

    reasoning, text, call = result.messages[0].contents
    assert reasoning == ReasoningContent("plan\n\nthink", item_id="rs_1", summary=("plan",))
    assert text == TextContent("hello")
    assert isinstance(call, FunctionCallContent)
    assert call.raw_arguments == "{}"


async def test_thousands_of_deltas_fold_to_exactly_the_text_they_carry() -> None:
    text = "".join(chr(0x41 + i % 26) + ("\u00e9" if i % 7 == 0 else "") for i in range(3000))
    arguments = json.dumps({"notes": text[:2000]})
    document = response_document(
        [
            reasoning_item("rs_1", summary=(text[::-1],)),
            message_item("m", text),
            call_item("f", "c", "n", arguments),
        ]
    )
    events = [
        e for e in stream_events(document, chunk=1, terminal_output=False) if not e["type"].endswith(".done")
    ]
    events.append({"type": "response.completed", "response": response_document([])})

    result = await ask_streamed(events)

    reasoning, message_text, call = result.messages[0].contents
    assert isinstance(reasoning, ReasoningContent)
    assert reasoning.summary == (text[::-1],)
    assert message_text == TextContent(text)
    assert isinstance(call, FunctionCallContent)
    assert call.raw_arguments == arguments


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_an_item_that_streamed_but_is_missing_from_the_terminal_output_is_kept(dialect: str) -> None:
    litellm = dialect == "litellm"
    reasoning = reasoning_item("rs_1", summary=("Thinking",), encrypted="enc")
    message = message_item("msg_1", "Two decisions.")
    call = call_item("fc_1", "call_1", "record_decision", '{"decision": "ship"}')
    document = response_document([reasoning, message, call], litellm=litellm)
    events = stream_events(document, litellm=litellm)
    # The terminal event lists the reasoning and the call, but not the message that streamed between them.
    events[-1]["response"] = {**document, "output": [reasoning, call]}
    body = sse(events, litellm=litellm)
    (complete, *_) = await fold_all_ways(document, litellm=litellm)

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        result = await ask(adapter)
        assert result.messages == complete.messages
        assert [type(c) for c in result.messages[0].contents] == [
            ReasoningContent,
            TextContent,
            FunctionCallContent,
        ]
        assert result.text == "Two decisions."


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("terminal_output", [True, False])
async def test_two_items_streamed_on_one_output_index_are_both_kept(
    dialect: str, terminal_output: bool
) -> None:
    litellm = dialect == "litellm"
    first = call_item("fc_1", "call_1", "record_decision", '{"decision": "ship"}')
    second = call_item("fc_2", "call_2", "record_decision", '{"decision": "hire"}')
    events = stream_events(response_document([first, second], litellm=litellm), litellm=litellm)
    for event in events:
        if event.get("output_index") == 1:
            event["output_index"] = 0
    if not terminal_output:
        events[-1]["response"] = {**events[-1]["response"], "output": []}
    body = sse(events, litellm=litellm)

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        result = await ask(adapter)
        assert [(c.call_id, c.raw_arguments) for c in result.function_calls] == [
            ("call_1", '{"decision": "ship"}'),
            ("call_2", '{"decision": "hire"}'),
        ]


async def test_a_repeated_done_event_is_one_item_not_two() -> None:
    document = response_document([message_item("msg_1", "once")])
    events = stream_events(document, terminal_output=False)
    done = next(e for e in events if e["type"] == "response.output_item.done")
    late_delta = {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "!"}
    events[-1:-1] = [dict(done), late_delta, dict(done)]

    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        result = await ask(adapter)
        assert result.messages == (ChatMessage("assistant", (TextContent("once", provided(done["item"])),)),)


async def test_an_item_that_never_finished_keeps_what_it_had_when_another_takes_its_index() -> None:
    events = [
        _opening(),
        *_message_started("msg_1", "first, cut"),
        *_message_started("msg_2", "second"),
        {"type": "response.output_item.done", "output_index": 0, "item": message_item("msg_2", "second")},
        _closing(),
    ]

    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        result = await ask(adapter)
        assert [c for m in result.messages for c in m.contents] == [
            # The first never finished: there is no item of the provider's to send back, only its text.
            TextContent("first, cut"),
            TextContent("second", provided(message_item("msg_2", "second"))),
        ]


async def test_a_finished_item_that_is_not_the_one_arriving_leaves_that_one_standing() -> None:
    events = [
        _opening(),
        *_message_started("msg_1", "never finished"),
        {"type": "response.output_item.done", "output_index": 0, "item": call_item("fc_9", "c9", "f", "{}")},
        _closing(),
    ]

    result = await ask_streamed(events)

    text, call = result.messages[0].contents
    assert text == TextContent("never finished")
    assert isinstance(call, FunctionCallContent)
    assert call.call_id == "c9"


async def test_a_repeated_done_without_ids_is_one_item_and_a_different_one_is_two() -> None:
    bare = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "same"}]}
    other = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "other"}]}
    events: list[dict[str, Any]] = [
        _opening(),
        *(
            {"type": "response.output_item.done", "output_index": 0, "item": item}
            for item in (bare, bare, other)
        ),
        _closing(),
    ]

    result = await ask_streamed(events)

    assert result.messages[0].contents == (
        TextContent("same", provided(bare)),
        TextContent("other", provided(other)),
    )


async def test_late_part_events_of_a_finished_item_change_nothing() -> None:
    document = three_kinds()
    events = stream_events(document, chunk=2, terminal_output=False)
    summary_at = {"output_index": 0, "summary_index": 0}
    late: list[dict[str, Any]] = [
        {"type": "response.output_text.done", "output_index": 1, "content_index": 0, "text": "LATE"},
        {"type": "response.refusal.done", "output_index": 1, "content_index": 0, "refusal": "LATE"},
        {"type": "response.reasoning_summary_text.delta", **summary_at, "delta": "LATE"},
        {"type": "response.reasoning_summary_text.done", **summary_at, "text": "LATE"},
        {"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0, "delta": "LATE"},
        {"type": "response.reasoning_text.done", "output_index": 0, "content_index": 0, "text": "LATE"},
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "LATE"},
        {"type": "response.function_call_arguments.done", "output_index": 2, "arguments": "LATE"},
    ]
    events[-1:-1] = late
    clean = await ask_streamed(stream_events(document))

    result = await ask_streamed(events)

    assert result.messages == clean.messages
    assert "LATE" not in repr(result)


# ---------------------------------------------------------------- the updates streamed on the way


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    output=model_outputs(),
    status=st.sampled_from([("completed", None), ("incomplete", "max_output_tokens")]),
    shape=st.sampled_from(["openai", "litellm", "json"]),
    chunk=st.none() | st.integers(min_value=1, max_value=7),
    terminal_output=st.booleans(),
)
async def test_streamed_updates_fold_to_what_get_response_returns(
    output: list[dict[str, Any]],
    status: tuple[str, str | None],
    shape: str,
    chunk: int | None,
    terminal_output: bool,
) -> None:
    litellm = shape == "litellm"
    document = response_document(output, status=status[0], incomplete_reason=status[1], litellm=litellm)
    if shape == "json":
        body, content_type = json.dumps(document), JSON
    else:
        events = stream_events(document, chunk=chunk, litellm=litellm, terminal_output=terminal_output)
        body, content_type = sse(events, litellm=litellm), SSE

    for response, updates in await answered_and_streamed(body, content_type):
        assert_folds_to(updates, response)
        assert updates[-1].status == response.status


async def test_text_arrives_as_pieces_and_a_call_once_whole() -> None:
    document = response_document(
        [message_item("msg_1", "Two decisions were made."), call_item("fc_1", "call_1", "f", '{"a": 1}')]
    )
    body = sse(stream_events(document, chunk=4))

    for response, updates in await answered_and_streamed(body, SSE):
        pieces = [u.text for u in updates if u.text]
        assert len(pieces) > 1
        assert "".join(pieces) == "Two decisions were made."
        calls = [call for u in updates for call in u.function_calls]
        assert [c.raw_arguments for c in calls] == ['{"a": 1}']
        assert updates[0].response_id == "resp_test"
        assert not updates[0].contents
        assert_folds_to(updates, response)


def _with_done_text(events: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    for event in events:
        if event["type"] == "response.output_text.done":
            event["text"] = text
        if event["type"] == "response.output_item.done":
            event["item"] = {**event["item"], "content": [{"type": "output_text", "text": text}]}
    return events


@pytest.mark.parametrize(
    ("done_text", "expected"),
    [
        # A whole form that extends what arrived adds the rest.
        ("Hello there, team.", "Hello there, team."),
        # One that contradicts it is not taken: the caller already has the deltas.
        ("Something else entirely", "Hello there"),
    ],
)
async def test_a_done_text_that_differs_from_the_deltas(done_text: str, expected: str) -> None:
    document = response_document([message_item("msg_1", "Hello there")])
    events = _with_done_text(stream_events(document, chunk=3, terminal_output=False), done_text)

    for response, updates in await answered_and_streamed(sse(events), SSE):
        assert response.text == expected
        assert_folds_to(updates, response)


async def test_a_terminal_output_that_differs_or_holds_items_that_never_streamed() -> None:
    streamed = message_item("msg_1", "Streamed text")
    call = call_item("fc_1", "call_1", "record_decision", '{"decision": "ship"}')
    extra = reasoning_item("rs_9", summary=("late",), encrypted="enc")
    events = stream_events(response_document([streamed, call]), chunk=5)
    rewritten_call = {**call, "arguments": '{"decision": "hold"}'}
    events[-1]["response"] = {
        **events[-1]["response"],
        "output": [extra, message_item("msg_1", "Streamed text, and more"), rewritten_call],
    }

    for response, updates in await answered_and_streamed(sse(events), SSE):
        assert response.text == "Streamed text, and more"
        # The call went out when it finished; the terminal output cannot take it back.
        assert [c.raw_arguments for c in response.function_calls] == ['{"decision": "ship"}']
        # The item only the terminal output holds goes at its place there, index 0, which the message
        # streamed on: the streamed item keeps its place and the newcomer follows it, before the call.
        assert response.messages[0].contents[1].encrypted_content == "enc"  # type: ignore[union-attr]
        assert_folds_to(updates, response)


async def test_an_item_missing_from_the_terminal_output_and_two_on_one_index_are_kept() -> None:
    first = call_item("fc_1", "call_1", "record_decision", '{"decision": "ship"}')
    second = message_item("msg_2", "kept")
    events = stream_events(response_document([first, second]), chunk=2)
    for event in events:
        if event.get("output_index") == 1:
            event["output_index"] = 0
    events[-1]["response"] = {**events[-1]["response"], "output": [first]}

    for response, updates in await answered_and_streamed(sse(events), SSE):
        assert response.text == "kept"
        assert len(response.function_calls) == 1
        assert_folds_to(updates, response)


async def test_a_call_finished_without_arguments_and_reasoning_sealed_by_its_done_item() -> None:
    reasoning = reasoning_item("rs_1", summary=("plan",), encrypted="sealed")
    call = call_item("fc_1", "call_1", "f", '{"x": [1, 2]}')
    events = stream_events(response_document([reasoning, call]), chunk=2, terminal_output=False)
    for event in events:
        if event["type"] == "response.output_item.done" and event["item"]["type"] == "function_call":
            event["item"] = {k: v for k, v in event["item"].items() if k != "arguments"}
        if event["type"] == "response.function_call_arguments.done":
            event["arguments"] = None

    for response, updates in await answered_and_streamed(sse(events), SSE):
        assert [c.raw_arguments for c in response.function_calls] == ['{"x": [1, 2]}']
        assert response.messages[0].contents[0].encrypted_content == "sealed"  # type: ignore[union-attr]
        assert_folds_to(updates, response)


async def test_a_surrogate_pair_split_across_two_deltas_is_one_character_and_never_goes_out_halved() -> None:
    at = {"output_index": 0, "content_index": 0, "item_id": "msg_1"}
    events: list[dict[str, Any]] = [
        _opening(),
        {"type": "response.output_text.delta", **at, "delta": "smile \ud83d"},
        {"type": "response.output_text.delta", **at, "delta": "\ude00 ok"},
        _closing(),
    ]
    # ensure_ascii (the default) writes each half as its own \u escape, as a gateway splitting the pair would.
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events)

    for response, updates in await answered_and_streamed(body, SSE):
        assert response.text == "smile \U0001f600 ok"
        assert [u.text for u in updates if u.text] == ["smile ", "\U0001f600 ok"]
        assert_folds_to(updates, response)


async def test_a_json_answer_streams_its_contents_once_read() -> None:
    message = message_item("msg_1", "whole")
    document = response_document([message, call_item("fc", "c", "f", "{}")])

    for response, updates in await answered_and_streamed(json.dumps(document), JSON):
        assert next(c for u in updates for c in u.contents) == TextContent("whole", provided(message))
        assert_folds_to(updates, response)


@st.composite
def perturbed_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A generated answer's events as a careless gateway might send them: events dropped or sent
    twice, ".done" texts that differ from the deltas, a terminal output reordered, cut or grown."""
    output = draw(model_outputs())
    litellm = draw(st.booleans())
    document = response_document(output, litellm=litellm)
    events = stream_events(document, chunk=draw(st.none() | st.integers(1, 5)), litellm=litellm)
    *body, terminal = events
    perturbed: list[dict[str, Any]] = []
    for event in body:
        action = draw(st.sampled_from(["keep"] * 6 + ["drop", "twice", "retext"]))
        if action == "drop":
            continue
        if action == "retext":
            event = {**event, **{key: draw(output_texts) for key in ("text", "arguments") if key in event}}
        perturbed.append(event)
        if action == "twice":
            perturbed.append(event)
    final_output = draw(st.permutations(document["output"]))
    final_output = final_output[: draw(st.integers(0, len(final_output)))]
    final_output += draw(st.lists(st.integers(0, 50).flatmap(output_items), max_size=2))
    return [*perturbed, {**terminal, "response": {**terminal["response"], "output": final_output}}]


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(events=perturbed_streams())
async def test_even_a_careless_stream_folds_the_same_streamed_or_whole(events: list[dict[str, Any]]) -> None:
    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        await assert_streams_what_it_answers(adapter)


def test_calls_only_the_terminal_output_holds_fold_as_a_document_maps_them() -> None:
    """Items that never streamed, calls among them (the light path), fold in the output's order to
    exactly what the same output gives as a document, across several steps of a heavy event."""
    streamed = message_item("msg_0", "Streamed first")
    events = stream_events(response_document([streamed]), chunk=4)
    hosted = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    output: list[Any] = [streamed]
    for n in range(300):
        output.append(call_item(f"fc_{n}", f"call_{n}", "record_decision", json.dumps({"n": n})))
        if n % 97 == 0:
            output += [hosted | {"id": f"ws_{n}"}, message_item(f"msg_{n + 1}", f"late {n}"), "not an item"]
    events[-1]["response"] = {**events[-1]["response"], "output": output}
    folder = EventFolder(updates=True)
    steps = 0
    for event in events:
        steps += sum(1 for _ in folder.feed_in_steps(event))
    response = folder.result()

    assert steps >= 1  # the terminal event paused at least once: folded in more than one step
    assert list(response.messages[0].contents) == response_contents({"output": output})
    assert [c.raw_arguments for c in response.function_calls] == [json.dumps({"n": n}) for n in range(300)]
    assert folder.item_count == len(output) - 4  # the items that are not objects are left out
    assert_folds_to(folder.out or [], response)
    whole_calls = [u for u in folder.out or [] for c in u.contents if isinstance(c, FunctionCallContent)]
    assert len(whole_calls) == 300  # each call went out once, whole
