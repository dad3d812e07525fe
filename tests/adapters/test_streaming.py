"""Caller-facing streaming on both adapters: updates that fold to exactly what get_response returns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.responses import ResponsesSettings
from domain import (
    ChatError,
    ChatMessage,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    MalformedResponseError,
    ResponseFailedError,
    TextContent,
)
from tests.adapters.test_corpus import CORPUS
from tests.adapters.test_corpus import ENTRIES as CORPUS_ENTRIES
from tests.strategies import model_outputs, output_items, output_texts
from tests.support.gateway import (
    API_KEY,
    JSON,
    SSE,
    Recorder,
    adapters_for,
    answer,
    call_item,
    message_item,
    reasoning_item,
    response_document,
    sse,
    stream_events,
)

MESSAGES = [ChatMessage.user("What happened in the meeting?")]


async def updates_of(adapter: ChatPort) -> list[ChatResponseUpdate]:
    return [update async for update in adapter.get_streaming_response(MESSAGES)]


async def both_ways(body: str, content_type: str) -> list[tuple[ChatResponse, list[ChatResponseUpdate]]]:
    """Each adapter's get_response and its streamed updates for the same body."""
    results = []
    for adapter in adapters_for(Recorder([answer(body, content_type)])):
        results.append((await adapter.get_response(MESSAGES), await updates_of(adapter)))
    return results


def assert_folds_to(updates: list[ChatResponseUpdate], response: ChatResponse) -> None:
    folded = ChatResponse.from_updates(updates)
    assert folded == response
    # Equal responses could still differ in what equality does not see: the raw arguments must not.
    assert [c.raw_arguments for c in folded.function_calls] == [
        c.raw_arguments for c in response.function_calls
    ]


def test_both_adapters_satisfy_the_chat_port() -> None:
    sse_adapter, json_adapter = adapters_for(Recorder([answer("{}")]))
    # Typed assignments: mypy --strict proves both adapters offer the whole port, get_streaming_response too.
    ports: tuple[ChatPort, ChatPort] = (sse_adapter, json_adapter)
    assert all(callable(port.get_streaming_response) for port in ports)


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

    for response, updates in await both_ways(body, content_type):
        assert_folds_to(updates, response)
        assert updates[-1].status == response.status


async def test_text_arrives_as_pieces_and_a_call_once_whole() -> None:
    document = response_document(
        [message_item("msg_1", "Two decisions were made."), call_item("fc_1", "call_1", "f", '{"a": 1}')]
    )
    body = sse(stream_events(document, chunk=4))

    for response, updates in await both_ways(body, SSE):
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

    for response, updates in await both_ways(sse(events), SSE):
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

    for response, updates in await both_ways(sse(events), SSE):
        assert response.text == "Streamed text, and more"
        # The call went out when it finished; the terminal output cannot take it back.
        assert [c.raw_arguments for c in response.function_calls] == ['{"decision": "ship"}']
        assert response.messages[0].contents[-1].encrypted_content == "enc"  # type: ignore[union-attr]
        assert_folds_to(updates, response)


async def test_an_item_missing_from_the_terminal_output_and_two_on_one_index_are_kept() -> None:
    first = call_item("fc_1", "call_1", "record_decision", '{"decision": "ship"}')
    second = message_item("msg_2", "kept")
    events = stream_events(response_document([first, second]), chunk=2)
    for event in events:
        if event.get("output_index") == 1:
            event["output_index"] = 0
    events[-1]["response"] = {**events[-1]["response"], "output": [first]}

    for response, updates in await both_ways(sse(events), SSE):
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

    for response, updates in await both_ways(sse(events), SSE):
        assert [c.raw_arguments for c in response.function_calls] == ['{"x": [1, 2]}']
        assert response.messages[0].contents[0].encrypted_content == "sealed"  # type: ignore[union-attr]
        assert_folds_to(updates, response)


async def test_a_surrogate_pair_split_across_deltas_never_goes_out_halved() -> None:
    at = {"output_index": 0, "content_index": 0, "item_id": "msg_1"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_document([], status="in_progress")},
        {"type": "response.output_text.delta", **at, "delta": "smile \ud83d"},
        {"type": "response.output_text.delta", **at, "delta": "\ude00 ok"},
        {"type": "response.completed", "response": response_document([])},
    ]
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events)

    for response, updates in await both_ways(body, SSE):
        assert [u.text for u in updates if u.text] == ["smile ", "\U0001f600 ok"]
        assert_folds_to(updates, response)


@pytest.mark.parametrize("status", ["incomplete", "failed"])
async def test_an_incomplete_answer_ends_with_its_status_and_a_failed_one_raises(status: str) -> None:
    document = response_document(
        [message_item("msg_1", "cut")],
        status=status,
        incomplete_reason="max_output_tokens" if status == "incomplete" else None,
        error={"code": "server_error", "message": "boom"} if status == "failed" else None,
    )
    body = sse(stream_events(document))

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        if status == "failed":
            with pytest.raises(ResponseFailedError) as raised:
                await updates_of(adapter)
            assert raised.value.partial is not None
            assert raised.value.partial.text == "cut"
        else:
            updates = await updates_of(adapter)
            assert updates[-1].finish_reason == "length"
            assert ChatResponse.from_updates(updates) == await adapter.get_response(MESSAGES)


async def test_a_stream_cut_before_its_terminal_event_raises_from_the_iterator_with_what_arrived() -> None:
    document = response_document([message_item("msg_1", "half an answer")])
    body = sse(stream_events(document, terminal=False))

    for adapter in adapters_for(Recorder([answer(body, SSE)])):
        seen: list[ChatResponseUpdate] = []

        async def read(adapter: ChatPort = adapter, seen: list[ChatResponseUpdate] = seen) -> None:
            async for update in adapter.get_streaming_response(MESSAGES):
                seen.append(update)

        with pytest.raises(MalformedResponseError) as raised:
            await read()
        assert "".join(u.text for u in seen) == "half an answer"
        assert raised.value.partial is not None
        assert raised.value.partial.text == "half an answer"
        assert isinstance(raised.value, ChatError)


async def test_a_json_answer_streams_its_contents_once_read() -> None:
    document = response_document([message_item("msg_1", "whole"), call_item("fc", "c", "f", "{}")])

    for response, updates in await both_ways(json.dumps(document), JSON):
        assert next(c for u in updates for c in u.contents) == TextContent("whole")
        assert_folds_to(updates, response)


@pytest.mark.skipif(
    not CORPUS_ENTRIES, reason="the recorded corpus is absent (see tests/adapters/test_corpus.py)"
)
@pytest.mark.parametrize("entry", CORPUS_ENTRIES, ids=[entry["file"] for entry in CORPUS_ENTRIES])
async def test_every_recorded_body_streams_to_what_get_response_returns(entry: dict[str, Any]) -> None:
    body = (CORPUS / entry["file"]).read_bytes()

    for adapter in adapters_for(Recorder([answer(body, entry["content_type"], entry["status"])])):
        try:
            response = await adapter.get_response(MESSAGES)
        except ChatError as error:
            with pytest.raises(type(error)):
                await updates_of(adapter)
            continue
        updates = await updates_of(adapter)
        assert_folds_to(updates, response)


def _chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


async def test_a_streamed_body_over_the_cap_is_refused_from_the_iterator_with_what_arrived() -> None:
    document = response_document([message_item("msg_1", "word " * 4_000)])
    body = sse(stream_events(document, chunk=5))
    settings = ResponsesSettings(model="gpt-test", max_response_bytes=len(body) // 2)

    for adapter in adapters_for(Recorder([answer(body, SSE)]), settings):
        with pytest.raises(MalformedResponseError) as raised:
            await updates_of(adapter)
        assert "max_response_bytes" in str(raised.value)


async def test_secrets_a_gateway_echoes_in_a_streamed_failure_reach_no_part_of_the_error() -> None:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response_document([], status="in_progress")},
        {"type": "error", "code": "bad_key", "message": f"key {API_KEY} refused"},
    ]

    for adapter in adapters_for(Recorder([answer(sse(events), SSE)])):
        with pytest.raises(ResponseFailedError) as raised:
            await updates_of(adapter)
        for error in _chain(raised.value):
            assert API_KEY not in str(error)
            assert API_KEY not in repr(error)


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
        try:
            response = await adapter.get_response(MESSAGES)
        except ChatError as error:
            with pytest.raises(type(error)):
                await updates_of(adapter)
            continue
        assert_folds_to(await updates_of(adapter), response)
