"""The payload builder (``payload``): the request rules, checked on the bytes both adapters actually send,
and whatever a ChatResponse can hold goes out again, encodable, without the builder ever raising for
history."""

from __future__ import annotations

import json
import logging
import types
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai._utils._json import openapi_dumps

from adapters.offline.render import message_item
from adapters.responses import ResponsesPayloadBuilder, ResponsesSettings
from domain import (
    ChatMessage,
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    ReasoningOptions,
    TextContent,
    ToolSpec,
)
from domain.arguments import has_surrogate, mend_surrogates
from tests.support.gateway import JSON, Recorder, adapters_for, answer, every_way, response_document

OK = json.dumps(response_document([message_item("msg_1", "ok")]))
BUILDER = ResponsesPayloadBuilder(ResponsesSettings(model="m", store=True))
# Lone surrogates as the SDK hands them over when a provider escapes one ("\ud800") in its JSON.
lone_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts_with_surrogates = st.lists(st.one_of(st.text(max_size=5), lone_surrogates), max_size=8).map("".join)
MALFORMED = '{"owner": "Ana", "task": "plan the \\u00e9vent", '


def call(raw: str, call_id: str = "call_1") -> FunctionCallContent:
    return FunctionCallContent.parse(
        call_id=call_id, name="record_action_item", raw_arguments=raw, item_id="fc_1"
    )


async def sent(
    messages: list[ChatMessage], options: ChatOptions | None = None, settings: ResponsesSettings | None = None
) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """The JSON body and headers of the request each adapter sent."""
    recorder = Recorder([answer(OK, JSON)])
    for adapter in adapters_for(recorder, settings):
        await adapter.get_response(messages, options)
    return [(json.loads(r.content), dict(r.headers)) for r in recorder.requests]


async def test_every_message_item_is_typed_with_input_or_output_text_parts() -> None:
    messages = [
        ChatMessage.system("Be brief."),
        ChatMessage.developer("Use tools."),
        ChatMessage.user("Summarize."),
        ChatMessage.assistant("Sure."),
    ]

    requests = await sent(messages)

    assert [body.get("stream", False) for body, _ in requests] == [True, False]
    for body, _ in requests:
        assert body["input"] == [
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Be brief."}]},
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Use tools."}],
            },
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summarize."}]},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sure.", "annotations": []}],
            },
        ]


@pytest.mark.parametrize(
    "raw", ['{"owner":"Ana"}', '{ "owner" : "Ana" }\n', MALFORMED, "", "null", "[1]", "\u2028"]
)
async def test_function_calls_go_back_with_their_raw_arguments_byte_for_byte(raw: str) -> None:
    history = [ChatMessage.user("go"), ChatMessage("assistant", (call(raw),))]

    for body, _ in await sent(history):
        item = body["input"][1]
        assert item == {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "record_action_item",
            "arguments": raw,
        }
        assert item["arguments"].encode() == raw.encode()


async def test_the_wrap_policy_wraps_only_malformed_arguments() -> None:
    settings = ResponsesSettings(model="gpt-test", malformed_arguments_in_history="wrap")
    history = [
        ChatMessage("assistant", (call(MALFORMED, "c1"), call('{"ok": true}', "c2"), call("  ", "c3")))
    ]

    for body, _ in await sent(history, settings=settings):
        arguments = [item["arguments"] for item in body["input"]]
        assert [json.loads(a) for a in arguments] == [
            {"INVALID_JSON": MALFORMED},
            {"ok": True},
            {"INVALID_JSON": "  "},
        ]
        assert arguments[1] == '{"ok": true}'


@pytest.mark.parametrize(
    ("result", "output"),
    [
        ("plain text, as is", "plain text, as is"),
        ('{"already": "json"}', '{"already": "json"}'),
        ({"error": "invalid_tool_arguments", "n": 1}, '{"error":"invalid_tool_arguments","n":1}'),
        (types.MappingProxyType({"é": (1, 2)}), '{"é":[1,2]}'),
        ([True, None, 1.5], "[true,null,1.5]"),
        (7, "7"),
        (None, "null"),
    ],
)
async def test_function_results_are_strings_as_they_are_or_compact_json(result: Any, output: str) -> None:
    history = [ChatMessage("tool", (FunctionResultContent("call_1", result),))]

    for body, _ in await sent(history):
        assert body["input"] == [{"type": "function_call_output", "call_id": "call_1", "output": output}]


async def test_reasoning_with_encrypted_content_goes_back_unchanged_and_without_is_left_out() -> None:
    kept = ReasoningContent(
        "Thought.", item_id="rs_1", encrypted_content="gAAA+/opaque==", summary=("Thought.",)
    )
    unusable = ReasoningContent("Gone.", item_id="rs_2")
    history = [ChatMessage("assistant", (kept, unusable, TextContent("Answer.")))]

    for body, _ in await sent(history):
        assert body["input"][0] == {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Thought."}],
            "encrypted_content": "gAAA+/opaque==",
        }
        assert [item["type"] for item in body["input"]] == ["reasoning", "message"]


async def test_stored_reasoning_goes_back_by_id() -> None:
    settings = ResponsesSettings(model="gpt-test", store=True)
    history = [ChatMessage("assistant", (ReasoningContent("t", item_id="rs_9", summary=("t",)),))]

    for body, _ in await sent(history, settings=settings):
        assert body["input"] == [
            {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "t"}]}
        ]
        assert body["store"] is True


async def test_provider_items_such_as_compaction_pass_through_unchanged() -> None:
    raw = '{"type":"compaction","id":"cmp_1","encrypted_content":"state==","extra":{"nested":[1,"x"]}}'
    history = [
        ChatMessage("assistant", (ProviderItemContent("compaction", raw, "cmp_1"),)),
        ChatMessage.user("next"),
    ]

    for body, _ in await sent(history):
        assert body["input"][0] == json.loads(raw)
        assert json.dumps(body["input"][0], separators=(",", ":")) == raw


async def test_contents_keep_their_order_across_item_kinds() -> None:
    history = [ChatMessage("assistant", (TextContent("a"), call("{}"), TextContent("b"), TextContent("c")))]

    for body, _ in await sent(history):
        assert [(i["type"], len(i.get("content", ()))) for i in body["input"]] == [
            ("message", 1),
            ("function_call", 0),
            ("message", 2),
        ]


async def test_tools_and_tool_choice_are_sent_in_the_responses_shape() -> None:
    parameters = {"type": "object", "properties": {"decision": {"type": "string"}}, "required": ["decision"]}
    tools = (ToolSpec("record_decision", "Record one decision.", parameters), ToolSpec("list_participants"))

    for choice, expected in (
        ("required", "required"),
        ("record_decision", {"type": "function", "name": "record_decision"}),
    ):
        for body, _ in await sent([ChatMessage.user("x")], ChatOptions(tools=tools, tool_choice=choice)):
            assert body["tools"] == [
                {
                    "type": "function",
                    "name": "record_decision",
                    "description": "Record one decision.",
                    "parameters": parameters,
                    "strict": True,
                },
                {
                    "type": "function",
                    "name": "list_participants",
                    "description": "",
                    "parameters": {
                        "type": "object",
                        "properties": {},
                        "required": [],
                        "additionalProperties": False,
                    },
                    "strict": True,
                },
            ]
            assert body["tool_choice"] == expected


async def test_reasoning_settings_store_and_include() -> None:
    settings = ResponsesSettings(model="gpt-test", reasoning_effort="low", reasoning_summary="auto")

    for body, _ in await sent([ChatMessage.user("x")], settings=settings):
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]

    overridden = ChatOptions(reasoning=ReasoningOptions(effort="high"), store=True)
    for body, _ in await sent([ChatMessage.user("x")], overridden, settings):
        assert body["reasoning"] == {"effort": "high"}
        assert body["store"] is True

    for body, _ in await sent(
        [ChatMessage.user("x")], ChatOptions(reasoning=ReasoningOptions(effort="none"))
    ):
        assert body["reasoning"] == {"effort": "none"}
        assert "include" not in body

    for body, _ in await sent([ChatMessage.user("x")]):
        assert "reasoning" not in body
        assert "include" not in body
        assert body["store"] is False


async def test_instructions_limits_and_sampling_options() -> None:
    settings = ResponsesSettings(model="gpt-default", max_output_tokens=500)
    options = ChatOptions(
        instructions="You summarize meetings.",
        model="gpt-override",
        temperature=0.2,
        parallel_tool_calls=False,
        metadata={"run": "r1"},
    )

    for body, _ in await sent([ChatMessage.user("x")], options, settings):
        assert (body["model"], body["instructions"], body["max_output_tokens"]) == (
            "gpt-override",
            "You summarize meetings.",
            500,
        )
        assert (body["temperature"], body["parallel_tool_calls"], body["metadata"]) == (
            0.2,
            False,
            {"run": "r1"},
        )

    for body, _ in await sent([ChatMessage.user("x")], ChatOptions(max_output_tokens=64), settings):
        assert (body["model"], body["max_output_tokens"]) == ("gpt-default", 64)
        assert "instructions" not in body


@pytest.mark.parametrize("initiator", ["user", "agent"])
async def test_x_initiator_header_and_extra_headers(initiator: str) -> None:
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Route": "chatgpt"})

    for _, headers in await sent([ChatMessage.user("x")], ChatOptions(initiator=initiator), settings):  # type: ignore[arg-type]  # parametrized with the two valid literals
        assert headers["x-initiator"] == initiator
        assert headers["x-gateway-route"] == "chatgpt"


async def test_extra_body_keys_the_sdk_knows_or_not_all_reach_the_wire() -> None:
    extra = {"litellm_session": {"id": "s1"}, "top_p": 0.5, "prompt_cache_key": "meeting"}

    for body, _ in await sent([ChatMessage.user("x")], ChatOptions(extra_body=types.MappingProxyType(extra))):
        assert (body["litellm_session"], body["top_p"], body["prompt_cache_key"]) == (
            {"id": "s1"},
            0.5,
            "meeting",
        )


def test_the_digest_describes_the_request_without_its_content() -> None:
    secret_text = "Ana's salary is 100k"
    builder = ResponsesPayloadBuilder(ResponsesSettings(model="gpt-test"))
    history = [
        ChatMessage.user(secret_text),
        ChatMessage("assistant", (call(MALFORMED),)),
        ChatMessage("tool", (FunctionResultContent("call_1", secret_text),)),
    ]

    request = builder.build(history, ChatOptions(tools=(ToolSpec("record_decision"),), initiator="agent"))
    digest = request.digest

    assert dict(digest.item_counts) == {"message": 1, "function_call": 1, "function_call_output": 1}
    assert (digest.model, digest.tool_names, digest.initiator) == ("gpt-test", ("record_decision",), "agent")
    assert digest.byte_size == len(
        json.dumps(dict(request.body), separators=(",", ":"), ensure_ascii=False).encode()
    )
    logged = json.dumps(digest.as_log_extra())
    assert secret_text not in repr(request)
    assert "X-Initiator" in repr(request)
    assert secret_text not in logged
    assert "salary" not in repr(digest)
    assert MALFORMED not in logged


def test_text_in_a_tool_message_is_refused() -> None:
    builder = ResponsesPayloadBuilder(ResponsesSettings(model="m"))

    with pytest.raises(ValueError, match="function results only"):
        builder.build([ChatMessage("tool", (TextContent("x"),))])


def test_extra_body_cannot_switch_streaming() -> None:
    builder = ResponsesPayloadBuilder(ResponsesSettings(model="m"))

    with pytest.raises(ValueError, match="cannot set stream"):
        builder.build([ChatMessage.user("x")], ChatOptions(extra_body={"stream": False}))


# ---------------------------------------------------------------- encoding whatever history holds


def arguments_sent(raw: str) -> str:
    item = BUILDER.build([ChatMessage("assistant", (call(raw),))]).body["input"][0]
    arguments: str = item["arguments"]
    return arguments


@given(
    texts_with_surrogates,
    texts_with_surrogates,
    texts_with_surrogates,
    texts_with_surrogates,
    texts_with_surrogates,
)
def test_any_history_the_model_could_write_is_encodable(
    text: str, raw_arguments: str, reasoning: str, result: str, call_id: str
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
                call(raw_arguments, call_id),
            ),
        ),
        ChatMessage("tool", (FunctionResultContent(call_id, result), FunctionResultContent("c", [result]))),
    ]

    request = BUILDER.build(history)

    for stream in (True, False):
        wire = request.wire(stream=stream)
        sent = json.loads(wire.decode("utf-8"))  # strict UTF-8, as it goes on the wire
        assert sent == {"stream": stream, **json.loads(json.dumps(dict(request.body)))}
        (sent_call,) = (item for item in sent["input"] if item["type"] == "function_call")
        assert sent_call["call_id"] == sent["input"][-2]["call_id"] == mend_surrogates(call_id)
    assert len(request.wire(stream=False)) - len(b'"stream":false,') == request.digest.byte_size
    if not has_surrogate(request.wire(stream=False).decode()) and not has_surrogate(call_id):
        # Without an identifier to keep, the SDK's own serializer writes the same body.
        assert openapi_dumps({"stream": False, **request.body}) == request.wire(stream=False)


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


def test_a_lone_surrogate_in_an_identifier_is_kept_and_written_as_its_escape() -> None:
    history = [
        ChatMessage(
            "assistant",
            (
                TextContent("lone \udc00 in text"),
                FunctionCallContent.parse(
                    call_id="call_\ud800", name="t", raw_arguments="{}", item_id="fc_\udfff\ud83d\ude00"
                ),
            ),
        ),
        ChatMessage("tool", (FunctionResultContent("call_\ud800", "ok \ud800"),)),
    ]

    request = BUILDER.build(history)

    message, sent_call, output = request.body["input"]
    assert message["content"][0]["text"] == "lone \ufffd in text"
    assert (sent_call["call_id"], sent_call["id"]) == ("call_\ud800", "fc_\udfff\U0001f600")
    assert (output["call_id"], output["output"]) == ("call_\ud800", "ok \ufffd")
    wire = request.wire(stream=True)
    assert wire.count(b'"call_id":"call_\\ud800"') == 2
    assert b'"id":"fc_\\udfff\xf0\x9f\x98\x80"' in wire
    assert json.loads(wire) == {"stream": True, **request.body}


async def test_a_call_id_with_a_lone_surrogate_goes_back_as_the_provider_sent_it() -> None:
    # The provider escapes a lone surrogate in its JSON; the result must carry the very call id it sent,
    # or the gateway cannot pair it with its call (issue 20). Both adapters, the answer streamed and whole.
    item = {
        "type": "function_call",
        "id": "fc_\ud800",
        "call_id": "call_\udbff\udc00\udfff",
        "name": "record_decision",
        "arguments": '{"a": 1}',
        "status": "completed",
    }
    as_sent = json.loads(json.dumps(item))  # the item as a JSON reader reads the provider's body
    document = response_document([item])
    for adapter in every_way(document, chunk=4):
        response = await adapter.get_response([ChatMessage.user("go")])
        (folded,) = response.function_calls
        assert folded.call_id == "call_\U0010fc00\udfff"  # the pair is one character to any JSON reader

        recorder = Recorder([answer(OK, JSON)])
        follow_up = [
            ChatMessage.user("go"),
            *response.messages,
            ChatMessage("tool", (FunctionResultContent(folded.call_id, "done"),)),
        ]
        for sender in adapters_for(recorder):
            await sender.get_response(follow_up)
        for request in recorder.requests:
            assert request.content.count(b'"call_id":"call_\xf4\x8f\xb0\x80\\udfff"') == 2
            sent_call, output = json.loads(request.content)["input"][1:]
            assert sent_call == as_sent
            assert output == {"type": "function_call_output", "call_id": as_sent["call_id"], "output": "done"}


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


@pytest.mark.parametrize("odd_type", [[], {}, 3, None, "input_image"])
def test_a_kept_message_with_an_odd_part_type_still_goes_back_with_its_texts(odd_type: object) -> None:
    # Found by CI's randomized hostile streams: a part whose "type" is a list raised TypeError
    # (unhashable) when the payload looked the type up; such a part holds no text and goes back as
    # it came, while the text parts take the contents' texts.
    provider = json.dumps(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": odd_type, "text": "raw"}, {"type": "output_text", "annotations": []}],
        }
    )
    history = [
        ChatMessage("assistant", (TextContent("kept", provider_item=provider),)),
        ChatMessage.user("next"),
    ]

    items: list[Any] = list(BUILDER.build(history).body["input"])

    assert items[0]["id"] == "msg_1"
    assert items[0]["content"] == [
        {"type": odd_type, "text": "raw"},
        {"type": "output_text", "annotations": [], "text": "kept"},
    ]
