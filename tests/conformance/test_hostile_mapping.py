"""Any JSON value in any field: the mapping and the folder give typed values or a finding, never a crash."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, cast

import attrs
from hypothesis import given
from hypothesis import strategies as st
from openai._models import construct_type
from openai._utils._json import openapi_dumps
from openai.types.responses import Response, ResponseStreamEvent

from adapters.responses import ResponsesPayloadBuilder, ResponsesSettings
from adapters.responses.error_mapping import ProviderFailureError, UnreadableResponseError
from adapters.responses.folding import EventFolder
from adapters.responses.to_domain import chat_response, created_at, item_contents, response_contents
from domain import ChatMessage, ChatResponse, Content, ProviderItemContent, Usage

BUILDER = ResponsesPayloadBuilder(ResponsesSettings(model="m", store=True))

# Whatever a JSON parser can hand over, including what Python's accepts beyond strict JSON.
wild_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(10**400), 2**63])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e300, -1e300, 1_764_000_000])
    | st.text(max_size=6)
    | st.sampled_from(["\ud800", "message", "function_call", "reasoning", "output_text", "completed"])
)
wild: st.SearchStrategy[Any] = st.recursive(
    wild_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=4,
)
ITEM_FIELDS = (
    "type",
    "id",
    "call_id",
    "name",
    "arguments",
    "content",
    "summary",
    "encrypted_content",
    "status",
)
EVENT_TYPES = (
    "response.created",
    "response.in_progress",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.refusal.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
)
EVENT_FIELDS = (
    "output_index",
    "content_index",
    "summary_index",
    "item_id",
    "delta",
    "text",
    "arguments",
    "refusal",
    "item",
    "response",
    "code",
    "message",
)
RESPONSE_FIELDS = ("id", "model", "status", "created_at", "output", "usage", "incomplete_details", "error")


def fields_of(names: tuple[str, ...], values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(names), values, max_size=len(names))


item_types = st.sampled_from(["message", "function_call", "reasoning", "web_search_call"])
items: st.SearchStrategy[Any] = wild_scalars | st.builds(
    lambda fields, kind: {**fields, "type": kind}, fields_of(ITEM_FIELDS, wild), item_types | wild_scalars
)


@st.composite
def responses(draw: st.DrawFn) -> dict[str, Any]:
    response = draw(fields_of(RESPONSE_FIELDS, wild))
    if draw(st.booleans()):
        response["output"] = draw(st.lists(items, max_size=3))
    return response


@st.composite
def events(draw: st.DrawFn) -> Any:
    event = draw(fields_of(EVENT_FIELDS, wild_scalars))
    event["type"] = draw(st.sampled_from(EVENT_TYPES) | wild)
    if draw(st.booleans()):
        event["output_index"] = draw(st.integers(0, 2))
    extra = draw(st.sampled_from(["none", "item", "response"]))
    if extra == "item":
        event["item"] = draw(items)
    elif extra == "response":
        event["response"] = draw(responses())
    return event


def assert_typed(response: ChatResponse) -> None:
    assert isinstance(response.response_id, str | None)
    assert isinstance(response.model_id, str | None)
    assert isinstance(response.status, str | None)
    assert isinstance(response.created_at, datetime | None)
    assert response.finish_reason in (None, "stop", "tool_calls", "length", "content_filter")
    assert isinstance(response.usage, Usage | None)
    if response.usage is not None:
        assert all(isinstance(count, int | None) for count in attrs.astuple(response.usage))


def assert_goes_out_again(contents: list[Content]) -> None:
    for content in contents:
        if isinstance(content, ProviderItemContent):
            assert isinstance(json.loads(content.raw_json), dict)
            assert content.type
    request = BUILDER.build([ChatMessage.user("go"), ChatMessage("assistant", tuple(contents))])
    openapi_dumps(dict(request.body)).decode("utf-8")


@given(responses())
def test_any_response_document_maps_to_typed_values(document: dict[str, Any]) -> None:
    try:
        response = Response.construct(**document)
    except (OverflowError, ValueError):
        # The SDK's own construction gives up on some numbers; the adapters' firewall maps that.
        return
    contents = response_contents(response)

    result = chat_response(response, contents)

    assert_typed(result)
    assert_goes_out_again(contents)


@given(items)
def test_any_output_item_maps_to_contents_that_go_out_again(item: Any) -> None:
    try:
        response = Response.construct(output=[item])
    except (OverflowError, ValueError):
        return
    (built,) = response.output

    assert_goes_out_again(item_contents(built))


@given(wild)
def test_created_at_is_a_datetime_or_none_for_any_value(value: Any) -> None:
    assert isinstance(created_at(value), datetime | None)


@given(st.lists(events(), max_size=8))
def test_any_event_sequence_folds_to_a_response_or_a_finding(sequence: list[Any]) -> None:
    try:
        built = [construct_type(type_=cast(Any, ResponseStreamEvent), value=event) for event in sequence]
    except (OverflowError, ValueError):
        # The SDK itself cannot build such an event (an integer too large for a float field): the
        # adapters turn that into a typed error on the wire, which test_hostile_gateway checks.
        return
    folder = EventFolder()
    try:
        for event in built:
            folder.feed(event)
        result = folder.result()
    except (ProviderFailureError, UnreadableResponseError) as finding:
        partial = finding.partial
        assert partial is None or isinstance(partial, ChatResponse)
        if partial is not None:
            assert_typed(partial)
        return
    assert_typed(result)
    assert_goes_out_again([content for message in result.messages for content in message.contents])
