"""A typed answer through both real adapters: ``text.format`` on the wire, refusals, the 400 fallback."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from adapters.offline.render import message_item, numbered, sse
from application import LoopSettings, OutputRefusedError, RunFinished, ToolLoop, ToolRun, output_schema
from domain import ChatPort
from tests.support.doubles import RecordingTools
from tests.support.gateway import (
    QUESTION,
    SSE,
    Adapter,
    Recorder,
    adapters_for,
    answer,
    response_document,
    served,
)


@attrs.frozen
class Verdict:
    decision: str
    votes: int


ANSWER = '{"decision": "ship", "votes": 3}'
REFUSAL = "I can't help with that."
# What OpenAI answers when a route does not take a schema (the Responses API names the parameter).
FORMAT_REFUSED = {
    "error": {
        "message": "Invalid parameter: 'text.format' of type 'json_schema' is not supported with this model.",
        "type": "invalid_request_error",
        "param": "text.format",
        "code": None,
    }
}


def _refusal_item() -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_refused",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": REFUSAL}],
    }


def _refusal_stream() -> str:
    """The events OpenAI streams for a refusal: the part's own delta and done events."""
    item = _refusal_item()
    document = response_document([item])
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**document, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.content_part.added", **where, "part": {"type": "refusal", "refusal": ""}},
        {"type": "response.refusal.delta", **where, "delta": REFUSAL[:8]},
        {"type": "response.refusal.delta", **where, "delta": REFUSAL[8:]},
        {"type": "response.refusal.done", **where, "refusal": REFUSAL},
        {"type": "response.content_part.done", **where, "part": item["content"][0]},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": document},
    ]
    return sse(numbered(events, model=document["model"]))


async def _run(adapter: ChatPort, *, streamed: bool) -> ToolRun:
    loop = ToolLoop(adapter, LoopSettings())
    if not streamed:
        return await loop.run(QUESTION, None, RecordingTools(), output_type=Verdict)
    events = [event async for event in loop.run_events(QUESTION, None, RecordingTools(), output_type=Verdict)]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    return finished.result


def _each_adapter(recorder: Recorder) -> list[tuple[str, Adapter]]:
    sse_adapter, json_adapter = adapters_for(recorder)
    return [("sse", sse_adapter), ("json", json_adapter)]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "events"])
@pytest.mark.parametrize("body_streams", [True, False], ids=["sse-body", "json-body"])
@pytest.mark.parametrize("which", ["sse", "json"])
async def test_the_schema_goes_as_text_format_and_the_answer_comes_back_typed(
    which: str, body_streams: bool, streamed: bool
) -> None:
    recorder = Recorder([served(response_document([message_item("msg_1", ANSWER)]), streaming=body_streams)])
    adapter = dict(_each_adapter(recorder))[which]
    run = await _run(adapter, streamed=streamed)
    assert run.output == Verdict("ship", 3)
    (body,) = recorder.bodies()
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "Verdict", "schema": output_schema(Verdict), "strict": True}
    }


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "events"])
@pytest.mark.parametrize("body_streams", [True, False], ids=["sse-body", "json-body"])
@pytest.mark.parametrize("which", ["sse", "json"])
async def test_a_refusal_part_raises_output_refused(which: str, body_streams: bool, streamed: bool) -> None:
    body = (
        answer(_refusal_stream(), SSE)
        if body_streams
        else answer(json.dumps(response_document([_refusal_item()])))
    )
    recorder = Recorder([body])
    adapter = dict(_each_adapter(recorder))[which]
    with pytest.raises(OutputRefusedError) as caught:
        await _run(adapter, streamed=streamed)
    assert caught.value.refusal == REFUSAL
    assert len(recorder.requests) == 1


@pytest.mark.parametrize("which", ["sse", "json"])
async def test_a_gateway_400_naming_text_format_is_answered_by_the_prompted_mode(which: str) -> None:
    recorder = Recorder(
        [
            answer(json.dumps(FORMAT_REFUSED), status=400),
            served(response_document([message_item("msg_1", ANSWER)]), streaming=which == "sse"),
        ]
    )
    adapter = dict(_each_adapter(recorder))[which]
    run = await _run(adapter, streamed=False)
    assert run.output == Verdict("ship", 3)
    assert run.output_mode == "prompted"
    first, second = recorder.bodies()
    assert "text" in first
    assert "text" not in second
    assert json.dumps(output_schema(Verdict), separators=(",", ":")) in second["instructions"]
    assert first["input"] == second["input"]
