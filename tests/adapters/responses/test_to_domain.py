"""The one mapping of SDK objects to domain values, on objects the SDK built without validation."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from openai.types.responses import Response, ResponseFunctionToolCall, ResponseUsage

from adapters.responses import to_domain
from adapters.responses.to_domain import created_at, field, finish_reason, item_contents, usage
from domain import ChatMessage, FunctionCallContent, MalformedResponseError, ProviderItemContent, Usage
from domain.arguments import has_surrogate
from tests.support.gateway import JSON, Recorder, adapters_for, answer


def test_a_call_item_missing_its_name_and_arguments_maps_to_empty_strings() -> None:
    item = ResponseFunctionToolCall.construct(type="function_call", call_id="call_1")

    (call,) = item_contents(item)

    assert isinstance(call, FunctionCallContent)
    assert (call.call_id, call.name, call.raw_arguments, call.item_id) == ("call_1", "", "", None)


def test_usage_without_details_keeps_the_counts_it_has() -> None:
    reported = ResponseUsage.construct(input_tokens=12, output_tokens=3)

    assert usage(reported) == Usage(input_tokens=12, output_tokens=3)
    assert usage(None) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (1.5, datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=UTC)),
        (True, None),
        (None, None),
        ("1", None),
    ],
)
def test_created_at_reads_epoch_seconds_only(value: object, expected: datetime | None) -> None:
    assert created_at(value) == expected


@pytest.mark.parametrize(
    ("status", "reason", "has_calls", "expected"),
    [
        ("completed", None, False, "stop"),
        ("completed", None, True, "tool_calls"),
        ("incomplete", "max_output_tokens", True, "length"),
        ("incomplete", "content_filter", False, "content_filter"),
        ("incomplete", "something_new", False, None),
        ("incomplete", None, False, None),
        ("queued", None, False, None),
        ("in_progress", None, True, None),
        ("failed", None, False, None),
    ],
)
def test_finish_reason(status: str, reason: str | None, has_calls: bool, expected: str | None) -> None:
    assert finish_reason(status, reason, has_calls) == expected


NOT_AN_OBJECT = "An output item that is not a JSON object"
UNWRITABLE = "An output item without a type, or not writable back as JSON, was left out"


@pytest.mark.parametrize(
    ("item", "why"),
    [
        (None, "An output item that is not a JSON object (NoneType) was left out"),
        (5, "An output item that is not a JSON object (int) was left out"),
        (
            {"id": "x_1", "payload": 1},
            "An output item without a type, or not writable back as JSON, was left out",
        ),
        (
            {"type": "mystery", "score": float("nan")},
            "An output item without a type, or not writable back as JSON, was left out",
        ),
    ],
)
def test_an_item_that_could_not_go_back_is_left_out_with_a_log_line(
    item: object, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="adapters.responses.to_domain"):
        assert item_contents(item) == []

    assert [record.getMessage() for record in caplog.records] == [why]


def test_a_provider_item_given_as_a_mapping_keeps_its_json() -> None:
    item = {"type": "mystery", "id": "my_1", "nested": [1, "two", {"b": None, "a": ""}]}

    (content,) = item_contents(item)

    assert isinstance(content, ProviderItemContent)
    assert (content.type, content.item_id) == ("mystery", "my_1")
    assert json.loads(content.raw_json) == item
    # Compact, keys sorted at every level: one item reads the same however it arrived.
    assert content.raw_json == '{"id":"my_1","nested":[1,"two",{"a":"","b":null}],"type":"mystery"}'


@pytest.mark.parametrize(
    "item",
    [
        # Issue 21: the SDK's compaction model writes id, encrypted_content, type; this, type first.
        {"type": "compaction", "id": "cmp_0", "encrypted_content": ""},
        {"type": "compaction", "encrypted_content": "", "id": "cmp_1", "created_by": None},
        {
            "type": "web_search_call",
            "status": "completed",
            "id": "ws_0",
            "action": {"type": "search", "query": ""},
        },
        {"type": "custom_tool_call", "input": "", "call_id": "c", "name": "n"},
        {"type": "mcp_list_tools", "tools": [], "server_label": "", "id": "l", "error": None},
        {"type": "some_future_item", "z": [], "a": {"y": None, "x": ""}},
        {
            "type": "message",
            "role": "assistant",
            "id": "m",
            "phase": None,
            "content": [{"text": "", "type": "output_text", "annotations": []}],
        },
        {"type": "reasoning", "summary": [], "id": "r", "encrypted_content": "", "content": []},
        {"type": "function_call", "arguments": "", "name": "", "call_id": "c", "id": None, "status": None},
    ],
    ids=lambda item: item["type"],
)
def test_an_item_makes_the_same_contents_as_a_mapping_and_as_the_sdks_model(item: dict[str, object]) -> None:
    # A heavy body or event is read as the mapping it is, any other through the SDK's models.
    from_mapping = item_contents(item)
    from_model = item_contents(Response.construct(output=[item]).output[0])

    assert from_mapping == from_model
    assert len(from_mapping) == 1


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (ResponseUsage.construct(input_tokens=7), 7),  # an SDK model: its attribute
        ({"input_tokens": 8}, 8),  # a mapping (what the SDK leaves a dict): its key
        (SimpleNamespace(input_tokens=9), 9),  # any other object: its attribute
        ("input_tokens", None),  # a scalar where an object belongs has no fields
        ([1, 2], None),
        (None, None),
        (ResponseUsage.construct(), None),  # a field the provider left out
        ({}, None),
    ],
)
def test_a_field_is_read_from_whatever_shape_the_sdk_handed_over(obj: object, expected: object) -> None:
    assert field(obj, "input_tokens") == expected


def test_a_field_is_read_alike_from_classes_made_at_run_time_and_what_is_kept_of_them_stays_bounded() -> None:
    # Whether a class is an SDK model is kept by class: classes made at run time, more than are kept,
    # are each still read by what they are, and the table does not grow past its bound.
    for n in range(3 * to_domain._TYPES_KEPT // 2):

        class Model(ResponseUsage):
            pass

        class Mapping(dict[str, int]):
            pass

        assert field(Model.construct(input_tokens=n), "input_tokens") == n
        assert field(Mapping(input_tokens=n), "input_tokens") == n
        assert field(Model.construct(), "input_tokens") is None
    assert len(to_domain._IS_MODEL) <= to_domain._TYPES_KEPT


@pytest.mark.parametrize(
    ("value", "holds"),
    [
        ("plain ASCII", False),
        ("café — ✓ 会议", False),
        ("an astral 😀 character", False),
        ("a lone high \ud83d surrogate", True),
        ("a lone low \ude00 surrogate", True),
        ("a split pair \ud83d\ude00 as two code points", True),
        ("\\ud83d escaped is only text", False),
    ],
)
def test_has_surrogate_finds_exactly_the_code_points_utf8_cannot_carry(value: str, holds: bool) -> None:
    assert has_surrogate(value) is holds


async def test_ten_thousand_unusable_items_are_one_warning_with_their_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    output: list[object] = [{}] * 9_999 + [5]
    document = {"object": "response", "id": "resp_1", "status": "completed", "output": output}
    adapter = adapters_for(Recorder([answer(json.dumps(document), JSON)]))[1]

    with caplog.at_level(logging.DEBUG, logger="adapters"), pytest.raises(MalformedResponseError) as raised:
        await adapter.get_response([ChatMessage.user("hi")])

    # None of them could be read: not an empty answer, but one that cannot be read (with what arrived).
    assert str(raised.value) == "none of the response's 10000 output items could be read"
    assert raised.value.partial is not None
    assert raised.value.partial.response_id == "resp_1"
    (record,) = [r for r in caplog.records if "left out" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "10000 output items were left out of one response "
        "(1 not a JSON object, 9999 without a type or not writable back as JSON)"
    )


def test_the_package_logger_has_a_null_handler_so_a_host_without_logging_sees_nothing() -> None:
    import adapters

    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger(adapters.__name__).handlers)
