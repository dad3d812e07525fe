"""Captured content as the GenAI conventions' JSON messages: every part kept, in order, with its kind; none
of it recorded unless capture is on, and never the API key."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from hypothesis import given

from adapters.offline.render import call_item, message_item
from adapters.redaction import Redactor
from adapters.telemetry.content import input_messages, json_text, output_messages, tool_result
from domain import ChatMessage, ChatResponse, FunctionCallContent, FunctionResultContent, TextContent
from domain.messages import Content, ProviderItemContent, ReasoningContent
from tests.domain.strategies import adapter_shaped_responses
from tests.support.gateway import API_KEY, BASE_URL, Recorder, response_document, served
from tests.support.telemetry import Otel, every_text, real_adapter, traced_summary_agent


def expected_part(content: Content) -> dict[str, object]:
    """The conventions' part for ``content``: what the model sent, its kind named as they name it."""
    match content:
        case TextContent(text=text):
            return {"type": "text", "content": text}
        case ReasoningContent(text=text):
            return {"type": "reasoning", "content": text}
        case FunctionCallContent(call_id=call_id, name=name) if (
            content.is_valid and content.arguments is not None
        ):
            return {"type": "tool_call", "id": call_id, "name": name, "arguments": dict(content.arguments)}
        case FunctionCallContent(call_id=call_id, name=name, raw_arguments=raw):
            # Malformed arguments are shown as the string the model sent.
            return {"type": "tool_call", "id": call_id, "name": name, "arguments": raw}
        case FunctionResultContent(call_id=call_id, result=result):
            return {"type": "tool_call_response", "id": call_id, "response": result}
    return {"type": content.type}


@given(response=adapter_shaped_responses())
def test_output_messages_keep_every_part_in_order_with_its_kind(response: ChatResponse) -> None:
    rendered = json.loads(output_messages(response))

    assert len(rendered) == len(response.messages)
    for message, original in zip(rendered, response.messages, strict=True):
        assert message["role"] == original.role
        assert message["parts"] == [expected_part(content) for content in original.contents]
        reason = response.finish_reason or "stop"
        assert message["finish_reason"] == ("tool_call" if reason == "tool_calls" else reason)


@given(response=adapter_shaped_responses())
def test_input_messages_render_a_conversation_with_tool_results(response: ChatResponse) -> None:
    results = tuple(FunctionResultContent(call.call_id, {"ok": [1, 2]}) for call in response.function_calls)
    conversation = (ChatMessage.user("hi"), *response.messages, ChatMessage("tool", results))

    rendered = json.loads(input_messages(conversation))

    assert [message["role"] for message in rendered] == [message.role for message in conversation]
    assert rendered[-1]["parts"] == [expected_part(result) for result in results]


def test_values_json_cannot_hold_are_written_as_their_text() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    assert json.loads(json_text({"read_only": MappingProxyType({"a": 1}), "when": when})) == {
        "read_only": {"a": 1},
        "when": str(when),
    }
    assert tool_result("as is") == "as is"
    assert tool_result({"n": [1, "é"]}) == '{"n":[1,"é"]}'
    assert json.loads(
        output_messages(ChatResponse((ChatMessage("assistant", (ProviderItemContent("x", "{}"),)),)))
    )[0]["parts"] == [{"type": "x"}]


# ---------------------------------------------------------------- on the spans of a run: only with capture on

MARKERS = ("TRANSCRIPT-MARKER-7f3a", "ARGS-MARKER-91c2", "INSTRUCTION-MARKER-0d4e")


async def run_marked_summary(otel: Otel, *, capture_content: bool) -> None:
    """A summary over a gateway that runs one tool round (a valid and a malformed call), then answers with
    text echoing the API key; the transcript and the arguments carry markers."""
    calls = response_document(
        [
            call_item(
                "fc_1",
                "c1",
                "record_decision",
                '{"decision": "Transcript marker ARGS-MARKER-91c2", "lines": [1]}',
            ),
            call_item("fc_2", "c2", "record_decision", '{"decision": "ARGS-MARKER-91c2'),
        ],
        response_id="resp_1",
    )
    final = response_document(
        [message_item("msg_2", f"Summary; your key is {API_KEY}.")], response_id="resp_2"
    )
    gateway = Recorder([served(calls, streaming=True), served(final, streaming=True)])
    telemetry = otel.telemetry(
        capture_content=capture_content, redactor=Redactor([API_KEY]), base_url=BASE_URL
    )
    agent = traced_summary_agent(real_adapter(gateway, streaming=True), telemetry)
    # The decision's words, "args marker 91c2" among them, are the line's; the marker itself is not.
    await agent.summarize(f"Ana: {MARKERS[0]}, args marker 91c2. Ben: agreed.")


def attributes(otel: Otel, prefix: str) -> list[dict[str, Any]]:
    return [dict(span.attributes or {}) for span in otel.named(prefix)]


async def test_by_default_no_content_and_no_key_reaches_any_attribute_event_or_metric(otel: Otel) -> None:
    await run_marked_summary(otel, capture_content=False)

    texts = list(every_text(otel))
    assert len(otel.spans()) == 5
    for text in texts:
        assert API_KEY not in text
        assert not any(marker in text for marker in MARKERS)
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system_instr")) for key in texts)
    assert "gen_ai.tool.call.arguments" not in texts
    assert "gen_ai.tool.call.result" not in texts


async def test_with_capture_on_content_is_recorded_in_the_conventions_attributes_and_the_key_never(
    otel: Otel,
) -> None:
    await run_marked_summary(otel, capture_content=True)

    assert all(API_KEY not in text for text in every_text(otel))
    first, last = attributes(otel, "chat ")
    sent = json.loads(first["gen_ai.input.messages"])
    assert sent[0]["role"] == "user"
    assert MARKERS[0] in sent[0]["parts"][0]["content"]
    assert json.loads(first["gen_ai.system_instructions"])[0]["type"] == "text"
    answered = json.loads(first["gen_ai.output.messages"])
    assert answered[0]["finish_reason"] == "tool_call"
    assert [part["type"] for part in answered[0]["parts"]] == ["tool_call", "tool_call"]
    assert answered[0]["parts"][0]["arguments"] == {
        "decision": "Transcript marker ARGS-MARKER-91c2",
        "lines": [1],
    }
    assert answered[0]["parts"][1]["arguments"] == '{"decision": "ARGS-MARKER-91c2'
    history = json.loads(last["gen_ai.input.messages"])
    assert [message["role"] for message in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"][0]["type"] == "tool_call_response"
    final = json.loads(last["gen_ai.output.messages"])
    assert final[0]["parts"] == [{"type": "text", "content": "Summary; your key is [REDACTED]."}]
    tools = {tool["gen_ai.tool.call.id"]: tool for tool in attributes(otel, "execute_tool")}
    assert (
        tools["c1"]["gen_ai.tool.call.arguments"]
        == '{"decision": "Transcript marker ARGS-MARKER-91c2", "lines": [1]}'
    )
    assert json.loads(tools["c1"]["gen_ai.tool.call.result"]) == {
        "recorded": "decision",
        "count": 1,
        "lines": [1],
    }
    assert json.loads(tools["c2"]["gen_ai.tool.call.result"])["error"] == "invalid_tool_arguments"
