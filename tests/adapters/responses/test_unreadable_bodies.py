"""A 200 body the mapping cannot read is ``MalformedResponseError`` with what arrived, never an empty answer
that looks complete; a body that only leaves fields out, or gets metadata wrong, still folds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.offline.render import message_item, sse, stream_events
from domain import ChatMessage, MalformedResponseError
from tests.support.gateway import JSON, SSE, Recorder, adapters_for, all_updates, answer, response_document

QUESTION = [ChatMessage.user("Summarize the meeting")]


def _wrong(value: object) -> object:
    """A value of another JSON type than ``value``."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, str):
        return 7
    if isinstance(value, int | float):
        return "7"
    if isinstance(value, list):
        return "items"
    if isinstance(value, dict):
        return ["x"]
    return 3.5


def _document() -> dict[str, Any]:
    return response_document([message_item("msg_1", "We ship on Monday.")])


async def _each_way_raises(body: str, content_type: str, reason: str) -> None:
    for adapter in adapters_for(Recorder([answer(body, content_type)])):
        with pytest.raises(MalformedResponseError, match=reason) as whole:
            await adapter.get_response(QUESTION)
        assert whole.value.partial is not None
        with pytest.raises(MalformedResponseError, match=reason):
            await all_updates(adapter)


@pytest.mark.parametrize("content_type", [JSON, SSE], ids=["labelled-json", "labelled-sse"])
async def test_a_document_whose_every_field_has_the_wrong_type_is_malformed(content_type: str) -> None:
    document = {key: _wrong(value) for key, value in _document().items()}

    await _each_way_raises(json.dumps(document), content_type, "output is a string, not a list")


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("output", {"type": "message"}, "output is a object, not a list"),
        ("output", "items", "output is a string, not a list"),
        ("status", 200, "status is a number, not a string"),
        ("status", ["completed"], "status is a list, not a string"),
        ("output", [5, "x", {}], "none of the response's 3 output items could be read"),
    ],
)
async def test_a_document_whose_answer_cannot_be_read_is_malformed(
    field: str, value: object, reason: str
) -> None:
    document = {**_document(), field: value}

    await _each_way_raises(json.dumps(document), JSON, reason)


@pytest.mark.parametrize(
    ("terminal", "reason"),
    [
        ("the response", "'response.completed' event's response is not an object"),
        (["x"], "'response.completed' event's response is not an object"),
        ({"status": 7, "output": []}, "status is a number, not a string"),
        ({"status": "completed", "output": "items"}, "output is a string, not a list"),
        ({"status": "completed", "output": [1, 2]}, "none of the response's 2 output items could be read"),
    ],
)
async def test_a_stream_whose_terminal_response_cannot_be_read_is_malformed(
    terminal: object, reason: str
) -> None:
    # Nothing streamed: the terminal event alone would say what the answer is.
    events = stream_events(response_document([]))
    events[-1]["response"] = terminal

    await _each_way_raises(sse(events), SSE, reason)


async def test_metadata_of_the_wrong_type_and_fields_left_out_still_fold() -> None:
    # LiteLLM leaves optional fields out and adds keys of its own; metadata of the wrong type reads as absent.
    document = {
        "object": "response",
        "id": 42,
        "model": ["gpt"],
        "created_at": "yesterday",
        "usage": "lots",
        "status": None,
        "output": [message_item("msg_1", "We ship on Monday.")],
        "litellm_extra": {"cost": 1},
    }
    events = stream_events(response_document([message_item("msg_1", "We ship on Monday.")]))
    events[-1]["response"] = {**events[-1]["response"], "id": 42, "usage": "lots", "extra": True}

    for body, content_type in ((json.dumps(document), JSON), (sse(events), SSE)):
        for adapter in adapters_for(Recorder([answer(body, content_type)])):
            response = await adapter.get_response(QUESTION)
            assert response.text == "We ship on Monday."
            assert response.usage is None
