"""What a streamed answer holds while the next event is read: the folder holds the text once, as the
string of the last event that repeated it whole (the one the SDK still holds while it parses the
next), never a second copy beside it, and taking those strings never changes what it folds to; the
reader does not keep the body's first read for as long as the stream lasts."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.offline.render import message_item, reasoning_item, sse, stream_events
from adapters.responses.folding import EventFolder
from domain import ChatResponse, ChatResponseUpdate, ReasoningContent, TextContent
from tests.strategies import model_outputs, output_texts
from tests.support.gateway import (
    QUESTION,
    SSE,
    Recorder,
    adapters_for,
    no_collection_mid_parse,
    response_document,
)

_PART_DONE = ("response.content_part.done", "response.reasoning_summary_part.done")


def _parsed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each event as the SDK hands it over: parsed from its own JSON, so every string is its own."""
    return [json.loads(json.dumps(event)) for event in events]


def _held_text(folder: EventFolder) -> str:
    partial = folder.partial()
    assert partial is not None
    (content,) = partial.messages[0].contents
    assert isinstance(content, TextContent)
    return content.text


def _whole_text(event: dict[str, Any]) -> str | None:
    """The message text an event repeats whole, or None for one that does not."""
    kind = event["type"]
    if kind == "response.output_text.done":
        return str(event["text"])
    if kind == "response.content_part.done":
        return str(event["part"]["text"])
    if kind == "response.output_item.done":
        return str(event["item"]["content"][0]["text"])
    if kind == "response.completed":
        return str(event["response"]["output"][0]["content"][0]["text"])
    return None


@pytest.mark.parametrize("updates", [False, True])
def test_the_text_is_held_as_the_string_of_the_last_event_that_repeated_it(updates: bool) -> None:
    text = "The meeting agreed to ship on Friday. \u2713 " * 40
    events = _parsed(stream_events(response_document([message_item("msg_1", text)]), chunk=7))
    folder = EventFolder(updates=updates)
    wholes = 0
    for event in events:
        folder.feed(event)
        whole = _whole_text(event)
        if whole is not None:
            wholes += 1
            assert whole == text
            # The very string the event carries: the one it replaced is let go.
            assert _held_text(folder) is whole
    assert wholes == 4  # output_text.done, content_part.done, output_item.done, response.completed
    result = folder.result()
    assert result.text == text
    assert result.messages[0].contents[0].text is _whole_text(events[-1])  # type: ignore[union-attr]


def test_a_reasoning_summary_is_held_as_its_finished_part_string() -> None:
    summary = "First the budget, then the launch date. " * 30
    document = response_document([reasoning_item("rs_1", summary=(summary,))])
    events = _parsed(stream_events(document, chunk=5, terminal_output=False))
    folder = EventFolder()
    part_string = None
    for event in events:
        if event["type"] == "response.output_item.done":
            # Stop before the finished item, whose own string would be taken next.
            break
        folder.feed(event)
        if event["type"] == "response.reasoning_summary_part.done":
            part_string = event["part"]["text"]
    assert part_string == summary
    partial = folder.partial()
    assert partial is not None
    (reasoning,) = partial.messages[0].contents
    assert isinstance(reasoning, ReasoningContent)
    assert reasoning.summary[0] is part_string


def _message_events(*deltas: str, part: Any) -> list[dict[str, Any]]:
    at = {"output_index": 0, "content_index": 0, "item_id": "msg_1"}
    started = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return [
        {"type": "response.output_item.added", "output_index": 0, "item": started},
        *({"type": "response.output_text.delta", **at, "delta": delta} for delta in deltas),
        {"type": "response.content_part.done", **at, "part": part},
    ]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "output_text", "text": "hello there, everyone"},  # more than arrived
        {"type": "output_text", "text": "hello"},  # less
        {"type": "output_text", "text": "jello there"},  # other text
        {"type": "output_text", "text": None},
        {"type": "refusal", "refusal": "hello there"},
        {"type": "reasoning_text", "text": "hello there"},
        {"text": "hello there"},
        "hello there",
        None,
    ],
)
def test_a_finished_part_that_does_not_repeat_the_text_changes_nothing(part: Any) -> None:
    with_part = EventFolder(updates=True)
    without = EventFolder(updates=True)
    for event in _parsed(_message_events("hello", " there", part=part)):
        with_part.feed(event)
        if event["type"] != "response.content_part.done":
            without.feed(event)
    assert with_part.partial() == without.partial()
    assert with_part.out == without.out
    assert _held_text(with_part) == "hello there"


def test_a_finished_part_repeating_a_surrogate_pair_the_deltas_split_is_not_taken() -> None:
    # The deltas hold the pair as two code points; the part's JSON joins them into one character.
    events = _message_events(
        "smile \ud83d", "\ude00", part={"type": "output_text", "text": "smile \U0001f600"}
    )
    folder = EventFolder(updates=True)
    for event in events:
        folder.feed(event)
    assert _held_text(folder) == "smile \U0001f600"


@pytest.mark.parametrize("index", [1, None, "0", True])
def test_a_finished_part_that_cannot_be_placed_starts_no_item(index: Any) -> None:
    part = {"type": "output_text", "text": "hello"}
    event = {"type": "response.content_part.done", "output_index": index, "content_index": 0, "part": part}
    folder = EventFolder(updates=True)
    folder.feed(event)
    assert folder.partial() is None
    assert folder.out == []


_PART_TEXTS = st.one_of(st.none(), output_texts, st.integers())


@st.composite
def streams_with_finished_parts(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A generated answer's events, with each finished part's text kept, changed, cut, grown or of
    another type; and the same events without the finished parts."""
    document = response_document(draw(model_outputs()), litellm=draw(st.booleans()))
    events = _parsed(stream_events(document, chunk=draw(st.none() | st.integers(1, 5))))
    for event in events:
        if event["type"] not in _PART_DONE:
            continue
        text = event["part"].get("text")
        change = draw(st.sampled_from(["keep", "keep", "other", "cut", "grow", "type", "index"]))
        if change == "other":
            event["part"]["text"] = draw(_PART_TEXTS)
        elif change == "cut" and isinstance(text, str):
            event["part"]["text"] = text[: draw(st.integers(0, len(text)))]
        elif change == "grow" and isinstance(text, str):
            event["part"]["text"] = text + draw(output_texts)
        elif change == "type":
            event["part"]["type"] = draw(
                st.sampled_from(["output_text", "refusal", "summary_text", "reasoning_text"])
            )
        elif change == "index":
            event["output_index"] = draw(st.integers(0, 5))
    return events, [event for event in events if event["type"] not in _PART_DONE]


def _fold(events: list[dict[str, Any]]) -> tuple[ChatResponse, list[ChatResponseUpdate]]:
    folder = EventFolder(updates=True)
    for event in events:
        folder.feed(event)
    return folder.result(), folder.out or []


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(streams=streams_with_finished_parts())
def test_finished_parts_never_change_what_a_stream_folds_to(
    streams: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    with_parts, without = streams
    response, updates = _fold(with_parts)
    expected, expected_updates = _fold(without)
    assert response == expected
    assert updates == expected_updates
    assert [c.raw_arguments for c in response.function_calls] == [
        c.raw_arguments for c in expected.function_calls
    ]


@pytest.mark.parametrize("updates", [False, True])
def test_no_second_copy_of_the_text_is_held_while_the_next_whole_form_is_read(updates: bool) -> None:
    """Read as the SDK reads (the event handed over last stays alive while the next is parsed), the
    memory in use when each event has just been parsed is at most the two events' strings and one
    piece of the text the folder keeps: never a third copy of a long text."""
    text = "".join(f"item {n} agreed \u2713; " for n in range(12_000))  # about 200k characters, 2 bytes each
    events = stream_events(response_document([message_item("msg_1", text)]), chunk=64)
    lines = [json.dumps(event) for event in events]
    size = len(text) * 2
    folder = EventFolder(updates=updates)
    highest = 0
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        last: object = None
        for line in lines:
            event = json.loads(line)
            highest = max(highest, tracemalloc.get_traced_memory()[0] - start)
            folder.feed(event)
            if folder.out is not None:
                folder.out = []  # handed over, as the adapters do
            last = event
            del event
        del last
    finally:
        tracemalloc.stop()
    # Two copies are the SDK's (the last event's and the new one's); a third would be ours.
    assert 2 * size < highest < 2.5 * size
    assert folder.result().text == text


class _PaddedFirst(httpx.AsyncByteStream):
    """An event stream whose first read is a long comment (padding some gateways send to get past a
    buffering proxy), then its events a few hundred bytes a read; notes the memory in use above
    ``start`` when the last read is asked for."""

    def __init__(self, padding: int, events: bytes) -> None:
        self._padding = padding
        self._events = events
        self.start = 0
        self.in_use_at_the_end: int | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b": " + b"." * self._padding + b"\n\n"
        events = self._events
        for at in range(0, len(events), 256):
            if at + 256 >= len(events):
                self.in_use_at_the_end = tracemalloc.get_traced_memory()[0] - self.start
            yield events[at : at + 256]


@pytest.mark.parametrize("which", ["sse", "json"])
async def test_the_first_read_is_not_held_while_the_rest_of_the_stream_is_read(which: str) -> None:
    padding = 512 * 1024
    events = sse(stream_events(response_document([message_item("msg_1", "Ship on Friday.")]))).encode()
    warming, body = _PaddedFirst(0, events), _PaddedFirst(padding, events)
    answers = [
        httpx.Response(200, headers={"content-type": SSE}, stream=stream) for stream in (warming, body)
    ]
    sse_adapter, json_adapter = adapters_for(Recorder(list(answers)))
    adapter = sse_adapter if which == "sse" else json_adapter
    # Once before measuring: the SDK builds its validators for the events the first time it meets them.
    await adapter.get_response(QUESTION)
    tracemalloc.start()
    try:
        body.start = tracemalloc.get_traced_memory()[0]
        response = await adapter.get_response(QUESTION)
    finally:
        tracemalloc.stop()
    assert response.text == "Ship on Friday."
    assert body.in_use_at_the_end is not None
    # Everything else in use then (the SDK, the folder, the events) is a few dozen KiB.
    assert body.in_use_at_the_end < padding // 4


@pytest.mark.parametrize("which", ["sse", "json"])
async def test_the_sdk_reader_lets_go_of_the_last_event_once_the_answer_returns(which: str) -> None:
    """With the garbage collector paused, what stays in use once the answer has returned is the answer
    and what the folder, waiting for the collector, still holds: not the SDK reader's last event too,
    whose data repeats the whole text once more. Its generators are closed, each letting go of the
    next as the loop runs the finalizers (a few turns); left suspended, only the collector could."""
    text = "".join(f"item {n} agreed; " for n in range(12_000))  # about 200k characters, 1 byte each
    events = stream_events(response_document([message_item("msg_1", text)]), chunk=512)
    body = sse(events).encode()
    answers = [httpx.Response(200, headers={"content-type": SSE}, content=body) for _ in range(2)]
    sse_adapter, json_adapter = adapters_for(Recorder(list[Any](answers)))
    adapter = sse_adapter if which == "sse" else json_adapter
    await adapter.get_response(QUESTION)  # the SDK's validators built before measuring
    bound = 2.5 * len(text)
    with no_collection_mid_parse():
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            response = await adapter.get_response(QUESTION)
            in_use = tracemalloc.get_traced_memory()[0] - start
            for _ in range(100):
                if in_use < bound:
                    break
                await asyncio.sleep(0)  # a turn of the loop, not a wait: the finalizers run in it
                in_use = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
    assert response.text == text
    assert in_use < bound
