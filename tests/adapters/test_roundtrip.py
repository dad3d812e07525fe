"""Property: one model output folds to one ChatResponse every way, and its raw arguments survive."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain import ChatMessage, ChatOptions, ChatResponse, FunctionResultContent
from tests.strategies import model_outputs
from tests.support.gateway import (
    JSON,
    SSE,
    Recorder,
    adapters_for,
    answer,
    response_document,
    sse,
    stream_events,
)


async def fold_everywhere(document: dict[str, Any], body: str) -> list[ChatResponse]:
    results = []
    for served in (answer(body, SSE), answer(json.dumps(document), JSON)):
        for adapter in adapters_for(Recorder([served])):
            results.append(await adapter.get_response([ChatMessage.user("Summarize the meeting")]))
    return results


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    output=model_outputs(),
    chunk=st.integers(min_value=1, max_value=12),
    litellm=st.booleans(),
    terminal_output=st.booleans(),
)
async def test_every_body_shape_folds_to_one_response_and_the_follow_up_keeps_raw_arguments(
    output: list[dict[str, Any]], chunk: int, litellm: bool, terminal_output: bool
) -> None:
    document = response_document(output, litellm=litellm)
    longest = max((len(json.dumps(item)) for item in output), default=0)
    # Very long argument strings still arrive in a bounded number of deltas, to keep examples fast.
    chunk = max(chunk, longest // 200)
    events = stream_events(document, chunk=chunk, litellm=litellm, terminal_output=terminal_output)
    results = await fold_everywhere(document, sse(events, litellm=litellm))

    first = results[0]
    assert all(result == first for result in results)
    calls = [item for item in output if item["type"] == "function_call"]
    assert [(c.call_id, c.name, c.raw_arguments) for c in first.function_calls] == [
        (item["call_id"], item["name"], item["arguments"]) for item in calls
    ]
    texts = [part["text"] for item in output if item["type"] == "message" for part in item["content"]]
    assert first.text == "".join(texts)
    assert first.finish_reason == ("tool_calls" if calls else "stop")

    results_in_history = tuple(FunctionResultContent(c.call_id, "ok") for c in first.function_calls)
    follow_up = [ChatMessage.user("Summarize the meeting"), *first.messages]
    if results_in_history:
        follow_up.append(ChatMessage("tool", results_in_history))
    recorder = Recorder([answer(json.dumps(response_document([])), JSON)])
    for adapter in adapters_for(recorder):
        await adapter.get_response(follow_up, ChatOptions(initiator="agent"))

    for request in recorder.requests:
        sent = json.loads(request.content)
        sent_calls = [item for item in sent["input"] if item["type"] == "function_call"]
        assert [item["arguments"] for item in sent_calls] == [item["arguments"] for item in calls]
        sent_reasoning = [item for item in sent["input"] if item["type"] == "reasoning"]
        assert [item["encrypted_content"] for item in sent_reasoning] == [
            item["encrypted_content"]
            for item in output
            if item["type"] == "reasoning" and "encrypted_content" in item
        ]
        opaque = [item for item in output if item["type"] == "compaction"]
        assert [item for item in sent["input"] if item["type"] == "compaction"] == opaque
        assert request.headers["x-initiator"] == "agent"
