"""The one Responses body renderer: any output, in either dialect, against the SDK's own (strict) models."""

from __future__ import annotations

import json
import typing
from typing import Any

import pydantic
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent

from adapters.offline.render import response_document, sse, stream_events, usage
from tests.strategies import model_outputs

# The SDK's event models by their ``type``, so a failure names the one model the event should match.
EVENT_MODELS: dict[str, type[pydantic.BaseModel]] = {
    typing.get_args(model.model_fields["type"].annotation)[0]: model
    for model in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}
TEXT_DELTAS = {
    "response.output_text.delta": "content_index",
    "response.reasoning_summary_text.delta": "summary_index",
    "response.reasoning_text.delta": "content_index",
}
chunks = st.none() | st.integers(min_value=1, max_value=8)
statuses = st.sampled_from(["completed", "incomplete", "failed"])


def document_of(output: list[dict[str, Any]], status: str, litellm: bool) -> dict[str, Any]:
    return response_document(
        output,
        response_id="resp_render",
        model="gpt-render",
        created_at=1_700_000_000,
        status=status,
        usage=usage(12, 5, cached_tokens=2, reasoning_tokens=1, litellm=litellm),
        error={"code": "server_error", "message": "boom"} if status == "failed" else None,
        incomplete_reason="max_output_tokens" if status == "incomplete" else None,
    )


def texts_of(item: dict[str, Any]) -> dict[tuple[str, int], str]:
    """Each text an item streams, by the delta event that carries it and the part's index."""
    if item["type"] == "message":
        parts = [("response.output_text.delta", part["text"]) for part in item["content"]]
    elif item["type"] == "reasoning":
        parts = [("response.reasoning_summary_text.delta", part["text"]) for part in item["summary"]]
        parts += [("response.reasoning_text.delta", part["text"]) for part in item.get("content", ())]
    elif item["type"] == "function_call":
        parts = [("response.function_call_arguments.delta", item["arguments"])]
    else:
        parts = []
    indexed: dict[tuple[str, int], str] = {}
    for kind, text in parts:
        index = sum(1 for key in indexed if key[0] == kind)
        indexed[kind, index] = text
    return indexed


@given(model_outputs(), statuses, chunks)
def test_openai_events_and_documents_validate_strictly_and_are_numbered(
    output: list[dict[str, Any]], status: str, chunk: int | None
) -> None:
    document = document_of(output, status, litellm=False)

    events = stream_events(document, chunk=chunk)

    Response.model_validate(document, strict=True)
    for event in events:
        EVENT_MODELS[event["type"]].model_validate(event, strict=True)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert events[-1] == {
        "type": f"response.{status}",
        "response": document,
        "sequence_number": len(events) - 1,
    }


@given(model_outputs(), chunks, st.booleans())
def test_the_deltas_of_every_part_add_up_to_its_text(
    output: list[dict[str, Any]], chunk: int | None, litellm: bool
) -> None:
    events = stream_events(document_of(output, "completed", litellm), chunk=chunk, litellm=litellm)

    streamed: dict[tuple[int, str, int], str] = {}
    for event in events:
        if event["type"] in TEXT_DELTAS or event["type"] == "response.function_call_arguments.delta":
            index = event.get(TEXT_DELTAS.get(event["type"], ""), 0)
            key = (event["output_index"], event["type"], index)
            streamed[key] = streamed.get(key, "") + event["delta"]
            assert chunk is None or len(event["delta"]) <= chunk
    expected = {
        (position, kind, index): text
        for position, item in enumerate(output)
        for (kind, index), text in texts_of(item).items()
    }
    assert streamed == expected


@given(model_outputs(), st.booleans())
def test_a_stream_is_framed_in_its_dialect(output: list[dict[str, Any]], litellm: bool) -> None:
    events = stream_events(document_of(output, "completed", litellm), litellm=litellm)

    frames = sse(events, litellm=litellm).split("\n\n")

    assert frames.pop() == ""
    if litellm:
        assert frames.pop() == "data: [DONE]"
    decoded = []
    for frame in frames:
        *named, data = frame.split("\n")
        event = json.loads(data.removeprefix("data: "))
        assert named == ([] if litellm else [f"event: {event['type']}"])
        decoded.append(event)
    assert decoded == events
    assert all(("model" in event) is litellm for event in events)
    text_deltas = [event for event in events if event["type"] == "response.output_text.delta"]
    assert all(("logprobs" in event) is not litellm for event in text_deltas)
