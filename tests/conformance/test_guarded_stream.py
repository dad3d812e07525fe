"""End to end: a malformed call streamed through the real SSE adapter is refused and echoed verbatim."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.offline.render import call_item, message_item, sse, stream_events
from adapters.responses import ResponsesSseAdapter
from application import LoopSettings, SummaryAgent, WorkflowEditorAgent
from domain import Workflow, WorkflowStep
from tests.strategies import MARKER, malformed_argument_strings
from tests.support.gateway import SSE, Recorder, adapters_for, answer, response_document

TRANSCRIPT = "[00:00] Ann: We ship Monday.\n[00:01] Bob: Agreed.\n"


def streamed(
    output: list[dict[str, Any]], response_id: str, *, litellm: bool = False, chunk: int = 3
) -> httpx.Response:
    document = response_document(output, response_id=response_id)
    return answer(sse(stream_events(document, chunk=chunk, litellm=litellm), litellm=litellm), SSE)


def input_items(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in body["input"] if item.get("type") == kind]


def sse_adapter(recorder: Recorder) -> ResponsesSseAdapter:
    streaming, _ = adapters_for(recorder)
    return streaming


@pytest.mark.parametrize("litellm", [False, True], ids=["openai-dialect", "litellm-dialect"])
async def test_a_streamed_malformed_call_is_guarded_and_goes_back_verbatim(litellm: bool) -> None:
    malformed = '{"decision": "Ship on Monday", "' + MARKER + '": tru'
    recorder = Recorder(
        [
            streamed(
                [
                    call_item("fc_1", "call_bad", "record_decision", malformed),
                    call_item("fc_2", "call_ok", "list_participants", "{}"),
                ],
                "resp_1",
                litellm=litellm,
            ),
            streamed([message_item("msg_1", "We ship Monday.")], "resp_2", litellm=litellm),
        ]
    )

    summary = await SummaryAgent(sse_adapter(recorder), LoopSettings()).summarize(TRANSCRIPT)

    assert summary.decisions == ()
    assert summary.text == "We ship Monday."
    assert [(r.call.call_id, r.guarded) for r in summary.tool_calls] == [
        ("call_bad", True),
        ("call_ok", False),
    ]
    first, follow_up = recorder.bodies()
    assert [r.headers["X-Initiator"] for r in recorder.requests] == ["user", "agent"]
    calls = input_items(follow_up, "function_call")
    assert [(c["call_id"], c["arguments"]) for c in calls] == [("call_bad", malformed), ("call_ok", "{}")]
    outputs = input_items(follow_up, "function_call_output")
    assert [o["call_id"] for o in outputs] == ["call_bad", "call_ok"]
    refused = json.loads(outputs[0]["output"])
    assert refused["error"] == "invalid_tool_arguments"
    assert MARKER not in outputs[0]["output"]
    assert json.loads(outputs[1]["output"]) == {"participants": ["Ann", "Bob"]}
    assert len(first["tools"]) == 3


@settings(max_examples=25)
@given(raw=malformed_argument_strings, chunk=st.integers(min_value=1, max_value=64))
async def test_any_malformed_streamed_arguments_never_run_a_zero_parameter_tool(raw: str, chunk: int) -> None:
    # Deeply nested inputs run to tens of thousands of characters: stream them in fewer, larger deltas.
    chunk = max(chunk, len(raw) // 16)
    recorder = Recorder(
        [
            streamed([call_item("fc_1", "call_1", "list_steps", raw)], "resp_1", chunk=chunk),
            streamed([message_item("msg_1", "Nothing changed.")], "resp_2"),
        ]
    )
    workflow = Workflow("w", (WorkflowStep("a", "A", "task"),))

    edit = await WorkflowEditorAgent(sse_adapter(recorder), LoopSettings()).edit(workflow, "look")

    (record,) = edit.tool_calls
    assert record.guarded
    assert record.call.raw_arguments == raw
    assert isinstance(record.result.result, dict)
    assert record.result.result["error"] == "invalid_tool_arguments"
    follow_up = recorder.bodies()[1]
    (sent,) = input_items(follow_up, "function_call")
    assert sent["arguments"] == raw
    (output,) = input_items(follow_up, "function_call_output")
    assert MARKER not in output["output"]
    assert edit.workflow == workflow
