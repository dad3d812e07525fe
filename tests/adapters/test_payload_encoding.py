"""Whatever a ChatResponse can hold goes out again: the payload builder never raises for history."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai._utils._json import openapi_dumps

from adapters.responses import ResponsesPayloadBuilder, ResponsesSettings
from domain import (
    ChatMessage,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
)
from tests.support.gateway import JSON, Recorder, adapters_for, answer, message_item, response_document

OK = json.dumps(response_document([message_item("msg_1", "ok")]))
BUILDER = ResponsesPayloadBuilder(ResponsesSettings(model="m", store=True))
# Lone surrogates as the SDK hands them over when a provider escapes one ("\ud800") in its JSON.
lone_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts_with_surrogates = st.lists(st.one_of(st.text(max_size=5), lone_surrogates), max_size=8).map("".join)


def call(raw: str) -> FunctionCallContent:
    return FunctionCallContent.parse(call_id="call_1", name="record_decision", raw_arguments=raw)


def arguments_sent(raw: str) -> str:
    item = BUILDER.build([ChatMessage("assistant", (call(raw),))]).body["input"][0]
    arguments: str = item["arguments"]
    return arguments


@given(texts_with_surrogates, texts_with_surrogates, texts_with_surrogates, texts_with_surrogates)
def test_any_history_the_model_could_write_is_encodable(
    text: str, raw_arguments: str, reasoning: str, result: str
) -> None:
    history = [
        ChatMessage.user(text),
        ChatMessage(
            "assistant",
            (
                ReasoningContent(
                    reasoning, item_id="rs_1", summary=(reasoning,), encrypted_content=reasoning
                ),
                TextContent(text),
                call(raw_arguments),
            ),
        ),
        ChatMessage("tool", (FunctionResultContent("call_1", result), FunctionResultContent("c", [result]))),
    ]

    request = BUILDER.build(history)

    # The SDK's own serializer, which encodes to UTF-8 strictly.
    openapi_dumps(dict(request.body)).decode("utf-8")


@pytest.mark.parametrize(
    ("raw", "sent", "meaning"),
    [
        ('{"a": "\ud800"}', '{"a": "\\ud800"}', {"a": "\ud800"}),
        ('{"\udfff": 1}', '{"\\udfff": 1}', {"\udfff": 1}),
        # A pair split across two deltas is the character the model wrote.
        ('{"a": "\ud83d\ude00"}', '{"a": "\U0001f600"}', {"a": "\U0001f600"}),
        ('{"a": "ok"}', '{"a": "ok"}', {"a": "ok"}),
    ],
)
def test_arguments_keep_their_meaning_when_a_surrogate_cannot_be_encoded(
    raw: str, sent: str, meaning: dict[str, Any]
) -> None:
    arguments = arguments_sent(raw)

    assert arguments == sent
    assert json.loads(arguments) == meaning


def test_a_split_surrogate_pair_in_text_is_joined_and_a_lone_one_replaced() -> None:
    request = BUILDER.build([ChatMessage.assistant("smile \ud83d\ude00, lone \udc00.")])

    (part,) = request.body["input"][0]["content"]
    assert part["text"] == "smile \U0001f600, lone \ufffd."


def test_tool_results_as_json_keep_their_meaning() -> None:
    request = BUILDER.build([ChatMessage("tool", (FunctionResultContent("c", {"k": "\ud800"}),))])

    output = request.body["input"][0]["output"]
    assert output == '{"k":"\\ud800"}'
    assert json.loads(output) == {"k": "\ud800"}


@pytest.mark.parametrize(
    "raw_json",
    ["[1]", "null", "5", '"text"', "{cut", '{"x": NaN}', '{"x": Infinity}', "[" * 100_000 + "]" * 100_000],
)
def test_a_provider_item_that_cannot_go_back_is_left_out_and_logged(
    raw_json: str, caplog: pytest.LogCaptureFixture
) -> None:
    history = [
        ChatMessage("assistant", (ProviderItemContent("odd", raw_json), TextContent("kept"))),
        ChatMessage.user("next"),
    ]

    with caplog.at_level(logging.WARNING, logger="adapters.responses.payload"):
        request = BUILDER.build(history)

    items: list[Any] = list(request.body["input"])
    assert [item["type"] for item in items] == ["message", "message"]
    assert items[0]["content"][0]["text"] == "kept"
    assert [r.getMessage() for r in caplog.records] == [
        "A provider item whose JSON is not an object was left out of the request"
    ]


async def test_a_history_with_lone_surrogates_is_sent_by_both_adapters() -> None:
    recorder = Recorder([answer(OK, JSON)])
    history = [ChatMessage.user("a\ud800"), ChatMessage("assistant", (call('{"a": "\udbff"}'),))]

    for adapter in adapters_for(recorder):
        response = await adapter.get_response(history)
        assert response.text == "ok"
    for request in recorder.requests:
        body = json.loads(request.content)
        assert body["input"][0]["content"][0]["text"] == "a\ufffd"
        assert body["input"][1]["arguments"] == '{"a": "\\udbff"}'


def _circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _deep() -> list[Any]:
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    return nested


@pytest.mark.parametrize("result", [_circular(), _deep()], ids=["circular", "100k deep"])
def test_a_tool_result_json_cannot_write_goes_as_an_error_object(
    result: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.responses.payload"):
        request = BUILDER.build([ChatMessage("tool", (FunctionResultContent("c", result),))])

    assert request.body["input"][0]["output"] == '{"error":"unwritable_tool_result"}'
    assert [r.getMessage() for r in caplog.records] == [
        "A tool result that cannot be written as JSON was sent as an error object"
    ]


def test_a_tool_result_json_has_no_form_for_goes_as_its_text() -> None:
    when = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
    result = cast(Any, {"when": when})

    request = BUILDER.build([ChatMessage("tool", (FunctionResultContent("c", result),))])

    assert request.body["input"][0]["output"] == '{"when":"2026-11-30 09:30:00+00:00"}'
