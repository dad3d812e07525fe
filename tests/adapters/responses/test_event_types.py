"""The stream's events, typed by the SDK as its union told which field names the class, come out exactly as
typed by the SDK's own union: recorded, rendered from recorded documents, spoilt, or not events at all."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import httpx
import httpx2
import openai
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import ResponseStreamEvent

from adapters.offline.render import stream_events
from adapters.responses.chat_adapters import _HEAVY_BRACKETS, TypedEvents, _brackets, _Decoding
from adapters.responses.event_types import STREAM_EVENT, tagged, typed
from adapters.responses.sdk_seam import event_stream
from tests.conformance.hostile import Fragments, base_documents, render_stream, spoil, wrong_values
from tests.conformance.test_corpus import ABSENT, CORPUS, ENTRIES
from tests.support.gateway import SSE


@functools.cache
def _client() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)


def _typed(body: bytes, event_type: Any, *, as_the_adapter: bool = False) -> tuple[list[Any], str | None]:
    """The events of ``body`` as the SDK's stream reader types them as ``event_type`` (the adapter's
    own reader, ``openai.AsyncStream``, with a client that is never asked to send anything), and the
    error that ended the reading, if one did. With ``as_the_adapter``, read as the adapter reads them:
    through its decoder, which types each event from its text (``typed``) and leaves the SDK what that
    refuses."""

    async def read() -> tuple[list[Any], str | None]:
        response = httpx.Response(200, content=body, headers={"content-type": SSE})
        stream: openai.AsyncStream[Any] = (
            event_stream(_client(), response, event_type, lambda inner: _Decoding(inner, 2**30))
            if as_the_adapter
            else openai.AsyncStream(cast_to=event_type, response=typing.cast(Any, response), client=_client())
        )
        events: list[Any] = []
        try:
            async for event in stream:
                # The adapter's decoder hands the events it typed over a read at a time, as a list.
                events.extend(event if as_the_adapter and type(event) is TypedEvents else [event])
        except Exception as error:  # what ended the reading is compared, whatever it is
            return events, f"{type(error).__name__}: {error}"
        return events, None

    return asyncio.run(read())


def _differences(left: object, right: object, at: str = "event") -> Iterator[str]:
    """Where ``left`` and ``right`` differ: class, fields set, extra fields, or any value at any depth."""
    if type(left) is not type(right):
        yield f"{at}: {type(left).__name__} against {type(right).__name__}"
    elif isinstance(left, pydantic.BaseModel):
        assert isinstance(right, pydantic.BaseModel)
        if left.model_fields_set != right.model_fields_set:
            yield f"{at}: fields set {sorted(left.model_fields_set)} against {sorted(right.model_fields_set)}"
        yield from _differences(left.__dict__, right.__dict__, at)
        yield from _differences(left.__pydantic_extra__, right.__pydantic_extra__, f"{at} (extra)")
    elif isinstance(left, dict):
        assert isinstance(right, dict)
        if list(left) != list(right):
            yield f"{at}: keys {list(left)} against {list(right)}"
        for key in left.keys() & right.keys():
            yield from _differences(left[key], right[key], f"{at}.{key}")
    elif isinstance(left, list | tuple):
        assert isinstance(right, list | tuple)
        if len(left) != len(right):
            yield f"{at}: {len(left)} items against {len(right)}"
        for index, (one, other) in enumerate(zip(left, right, strict=False)):
            yield from _differences(one, other, f"{at}[{index}]")
    elif isinstance(left, float) and math.isnan(left):
        assert isinstance(right, float)
        if not math.isnan(right):
            yield f"{at}: nan against {right!r}"
    elif left != right:
        yield f"{at}: {left!r} against {right!r}"


def assert_typed_alike(body: bytes) -> int:
    """Every event of ``body`` the same typed every way (the SDK's union as shipped, by its tag, and as
    the adapter reads the stream), and the reading ended alike; returns how many events there were."""
    by_sdk, sdk_ended = _typed(body, ResponseStreamEvent)
    for other_way in (_typed(body, STREAM_EVENT), _typed(body, STREAM_EVENT, as_the_adapter=True)):
        by_tag, tag_ended = other_way
        assert sdk_ended == tag_ended
        assert len(by_sdk) == len(by_tag)
        for position, (one, other) in enumerate(zip(by_sdk, by_tag, strict=True)):
            if type(other) is dict and isinstance(one, pydantic.BaseModel):
                # A heavy event (more brackets than _HEAVY_BRACKETS, in strings too) goes to the folder as
                # the mapping it is: it holds what the SDK builds its event from.
                assert _brackets(json.dumps(other)) > _HEAVY_BRACKETS
                other = _as_the_sdk_builds(other)
            differences = list(_differences(one, other, f"event {position}"))
            assert not differences, differences
    return len(by_sdk)


def _as_the_sdk_builds(data: dict[str, Any]) -> Any:
    """``data`` built as the SDK's stream reader builds each event's parsed data."""
    response = httpx2.Response(200, headers={"content-type": SSE})
    return _client()._process_response_data(
        data=data, cast_to=typing.cast(Any, ResponseStreamEvent), response=response
    )


class _Mark:
    """The SDK's PropertyInfo as far as it matters here: the field it names."""

    def __init__(self, discriminator: str | None) -> None:
        self.discriminator = discriminator


class _A(pydantic.BaseModel):
    type: Literal["a"]


class _B(pydantic.BaseModel):
    type: Literal["b", "c"]


class _Loose(pydantic.BaseModel):
    type: str


class _AlsoA(pydantic.BaseModel):
    type: Literal["a"]


class _Defaulted(pydantic.BaseModel):
    type: Literal["e"] = "e"


class _Aliased(pydantic.BaseModel):
    kind: Literal["d"] = pydantic.Field(alias="type")


@pytest.mark.parametrize(
    "event_type",
    [
        _A,
        typing.Union[_A, _B],  # noqa: UP007  # the SDK's spelling: no mark at all
        Annotated[typing.Union[_A, _B], "a note"],  # noqa: UP007
        Annotated[typing.Union[_A, _B], _Mark(None)],  # noqa: UP007
        Annotated[_A, _Mark("type")],
        Annotated[typing.Union[_A, _Loose], _Mark("type")],  # noqa: UP007  # a class without a literal
        Annotated[typing.Union[_A, _AlsoA], _Mark("type")],  # noqa: UP007  # two classes for one value
        Annotated[typing.Union[_A, _Aliased], _Mark("type")],  # noqa: UP007  # the field under another name
        # An event without a type would be a _Defaulted to the union as shipped, and nothing by its tag.
        Annotated[typing.Union[_A, _Defaulted], _Mark("type")],  # noqa: UP007
        Annotated[typing.Union[_A, dict[str, Any]], _Mark("type")],  # noqa: UP007  # not a model
    ],
)
def test_a_union_pydantic_could_not_tell_apart_is_left_as_it_is(event_type: Any) -> None:
    assert tagged(event_type) is event_type


def test_a_marked_union_of_literals_is_validated_by_its_tag() -> None:
    marked = Annotated[_A | _B, _Mark("type")]
    by_tag = tagged(marked)
    adapter = pydantic.TypeAdapter(by_tag)
    assert type(adapter.validate_python({"type": "c"})) is _B
    with pytest.raises(pydantic.ValidationError) as raised:
        adapter.validate_python({"type": "z"})
    assert [error["type"] for error in raised.value.errors()] == ["union_tag_invalid"]
    # The SDK's mark stays beside pydantic's, for the SDK's construction of what does not validate.
    assert typing.get_args(by_tag.__value__)[1] is typing.get_args(marked)[1]


def _sse_entries() -> list[dict[str, Any]]:
    return [entry for entry in ENTRIES if entry["content_type"].startswith("text/event-stream")]


@ABSENT
@pytest.mark.parametrize("entry", _sse_entries(), ids=[entry["file"] for entry in _sse_entries()])
def test_every_recorded_event_is_typed_alike(entry: dict[str, Any]) -> None:
    assert assert_typed_alike((CORPUS / entry["file"]).read_bytes()) > 0


def _json_entries() -> list[dict[str, Any]]:
    return [
        entry
        for entry in ENTRIES
        if entry["content_type"] == "application/json" and entry["expect"]["kind"] == "response"
    ]


@ABSENT
def test_every_recorded_document_streamed_as_events_is_typed_alike() -> None:
    # The recorded Responses (messages, reasoning, calls, hosted tools) as the events that would carry them.
    # Every other one in LiteLLM's dialect; deltas of 40 characters keep it to a few thousand events.
    counted = 0
    for number, entry in enumerate(_json_entries()):
        document, litellm = json.loads((CORPUS / entry["file"]).read_bytes()), number % 2 == 1
        events = stream_events(document, chunk=40, litellm=litellm, terminal_output=True, terminal=True)
        counted += assert_typed_alike(render_stream(events, Fragments(), litellm=litellm))
    assert counted > len(_json_entries()) * 3


@st.composite
def _spoilt_streams(draw: st.DrawFn) -> bytes:
    litellm = draw(st.booleans())
    document = draw(base_documents(litellm=litellm))
    events: Any = stream_events(document, chunk=5, litellm=litellm, terminal_output=True, terminal=True)
    fragments = Fragments()
    events = spoil(draw, events, fragments, [], max_changes=6)
    events = events if isinstance(events, list) else [events]
    # Events that are not objects at all, or objects of no known type, among them.
    extra = draw(st.lists(wrong_values | st.fixed_dictionaries({"type": wrong_values}), max_size=3))
    return render_stream([*events, *extra], fragments, litellm=litellm, ascii_only=draw(st.booleans()))


@given(_spoilt_streams())
def test_spoilt_events_are_typed_alike(body: bytes) -> None:
    assert_typed_alike(body)


@pytest.mark.parametrize(
    "data",
    [
        '{"type": "response.output_text.delta", "delta": "\\ud800"}',  # a lone surrogate: json.loads reads it
        '{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, '
        '"delta": "a", "logprobs": [], "sequence_number": 1, "error": {"message": "no"}}',  # the SDK raises
        '{"type": "no.such.event"}',
        "[DONE]",
        "[1, 2]",
        '{"type": "response.output_text.delta", "delta": "a"',
    ],
)
def test_what_typing_from_the_text_refuses_is_left_to_the_sdk(data: str) -> None:
    assert typed(data) is None


def test_an_event_typed_from_its_text_is_the_sdks_class() -> None:
    data = (
        '{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, '
        '"delta": "a", "logprobs": [], "sequence_number": 1, "obfuscation": "xyz"}'
    )
    event = typed(data)
    built = openai.types.responses.ResponseTextDeltaEvent.model_validate(json.loads(data))
    assert type(event) is type(built)
    assert not list(_differences(event, built))


@pytest.mark.parametrize("name", ["thread.message.delta", "response.output_text.delta", "error", None])
def test_an_event_named_as_the_sdk_reads_it_apart_is_typed_alike(name: str | None) -> None:
    data = (
        '{"type": "response.output_text.delta", "item_id": "m", "output_index": 0, "content_index": 0, '
        '"delta": "a", "logprobs": [], "sequence_number": 1}'
    )
    named = "" if name is None else f"event: {name}\n"
    assert assert_typed_alike(f"{named}data: {data}\n\n".encode()) == 1
