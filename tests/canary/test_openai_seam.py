"""One canary per private use of the OpenAI SDK (``adapters/responses/sdk_seam.py``): each fails, naming
what it relied on, when a release of the SDK changes it (``make canary`` runs them on the newest)."""

from __future__ import annotations

import importlib
import json
import logging
import typing
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Annotated, Any

import httpx
import openai
import pydantic
import pytest
from openai.types.responses import ResponseStreamEvent, ResponseTextDeltaEvent
from typing_extensions import TypeAliasType

from adapters.responses import sdk_seam
from adapters.responses.event_types import STREAM_EVENT
from tests.support.gateway import API_KEY, SSE, Recorder, answer, client_for, mocked, sdk_over


def _constants() -> Any:
    return importlib.import_module("openai._constants")


def test_the_retry_delays_are_the_sdks() -> None:
    constants = _constants()
    seen = (sdk_seam.INITIAL_RETRY_DELAY, sdk_seam.MAX_RETRY_DELAY, sdk_seam.MAX_RETRY_AFTER)
    shipped = (constants.INITIAL_RETRY_DELAY, constants.MAX_RETRY_DELAY, constants.MAX_RETRY_AFTER_DELAY)
    assert seen == shipped, "openai._constants: the SDK's back-off changed; http_front vetoes retries by it"


async def test_each_attempt_says_how_many_retries_came_before_it() -> None:
    recorder = Recorder([answer("{}", status=500), answer("{}", status=500), answer("{}")])
    client = client_for(recorder, max_retries=2)
    await client.post("/responses", cast_to=httpx.Response, body={})
    counts = [request.headers.get(sdk_seam.RETRY_COUNT_HEADER) for request in recorder.requests]
    assert counts == ["0", "1", "2"], f"{sdk_seam.RETRY_COUNT_HEADER}: the SDK no longer counts its attempts"


async def test_the_raw_response_header_leaves_the_body_unread() -> None:
    assert _constants().RAW_RESPONSE_HEADER == sdk_seam.RAW_RESPONSE_HEADER, "openai._constants renamed it"
    client = client_for(Recorder([answer('{"id": "resp_1"}')]))
    raw = await client.post(
        "/responses",
        cast_to=openai.BaseModel,
        body={},
        options={"headers": {sdk_seam.RAW_RESPONSE_HEADER: "stream"}},
    )
    assert isinstance(raw, openai.AsyncAPIResponse), "the raw-response header no longer returns the response"
    await raw.close()


async def test_the_bearer_auth_option_sends_the_key_as_a_bearer_token_only() -> None:
    assert "security" in openai.RequestOptions.__annotations__, "openai.RequestOptions lost `security`"
    recorder = Recorder([answer("{}")])
    client = sdk_over(mocked(recorder), api_key=API_KEY)
    options = sdk_seam.bearer_auth_options({"x-initiator": "user"})
    await client.post("/responses", cast_to=httpx.Response, body={}, options=options)
    sent = recorder.requests[0].headers
    assert sent["authorization"] == f"Bearer {API_KEY}", "security.bearer_auth no longer sends the key"
    assert sent["x-initiator"] == "user"


def test_the_client_keeps_its_http_client_as_client() -> None:
    http = mocked(Recorder([answer("{}")]))
    assert sdk_seam.http_client_of(sdk_over(http)) is http, (
        "AsyncOpenAI._client is not the HTTP client any more"
    )


def test_the_request_loggers_are_the_sdks_modules() -> None:
    for name in sdk_seam.LIBRARY_LOGGERS:
        module = importlib.import_module(name)
        logger = getattr(module, "log", None)
        if isinstance(logger, logging.Logger):
            assert logger.name == name, f"{name} logs on {logger.name}, which the redacting filter misses"
    assert importlib.import_module("openai._base_client").log.name == "openai._base_client"


class _Keeping:
    """The SDK's decoder, keeping every event whose data opens with a marker as the mapping it is."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kept_last = False

    def keeps(self, data: object) -> bool:
        return self.kept_last and isinstance(data, dict)

    async def aiter_bytes(self, iterator: Any) -> Any:
        async for sse in self.inner.aiter_bytes(iterator):
            self.kept_last = '"keep"' in sse.data
            yield sse


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events)


def _delta(text: str, **extra: object) -> dict[str, Any]:
    return {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": text,
        "logprobs": [],
        "sequence_number": 1,
        **extra,
    }


async def test_the_stream_reads_through_the_decoder_and_builds_what_it_does_not_keep() -> None:
    response = httpx.Response(
        200, headers={"content-type": SSE}, content=_sse(_delta("a"), _delta("b", keep=1))
    )
    client = client_for(Recorder([answer("{}")]))
    decoders: list[_Keeping] = []

    def decoder(inner: Any) -> _Keeping:
        decoders.append(_Keeping(inner))
        return decoders[0]

    stream = sdk_seam.event_stream(client, response, STREAM_EVENT, decoder)
    events = [event async for event in stream]
    assert len(decoders) == 1, "AsyncStream no longer asks its client for _make_sse_decoder()"
    assert isinstance(events[0], ResponseTextDeltaEvent), "_process_response_data no longer builds events"
    assert events[1] == _delta("b", keep=1), "AsyncStream no longer builds events with _process_response_data"


async def test_an_event_parsed_already_is_read_through_its_json() -> None:
    class Parsed:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def keeps(self, data: object) -> bool:
            return False

        async def aiter_bytes(self, iterator: Any) -> Any:
            async for sse in self.inner.aiter_bytes(iterator):
                yield sdk_seam.parsed_event(sse, _delta("from the parse"))

    response = httpx.Response(200, headers={"content-type": SSE}, content=_sse(_delta("on the wire")))
    stream = sdk_seam.event_stream(client_for(Recorder([answer("{}")])), response, STREAM_EVENT, Parsed)
    events = [event async for event in stream]
    assert [event.delta for event in events] == ["from the parse"], "AsyncStream no longer reads sse.json()"


async def test_the_streams_reader_is_a_generator_it_keeps() -> None:
    response = httpx.Response(200, headers={"content-type": SSE}, content=_sse(_delta("a"), _delta("b")))
    stream = sdk_seam.event_stream(client_for(Recorder([answer("{}")])), response, STREAM_EVENT)
    async for _ in stream:
        break
    await stream.close()
    assert await sdk_seam.close_reader(stream), "AsyncStream._iterator is gone: the last event stays held"


def test_the_event_union_is_marked_with_its_discriminator() -> None:
    assert typing.get_origin(ResponseStreamEvent) is Annotated, "ResponseStreamEvent is no longer Annotated"
    _, *metadata = typing.get_args(ResponseStreamEvent)
    assert sdk_seam.discriminator_of(metadata) == "type", "the union's PropertyInfo(discriminator=) changed"
    # Typing by tag still applies: the SDK's union is not used as it is.
    assert isinstance(STREAM_EVENT, TypeAliasType)
    assert STREAM_EVENT is not ResponseStreamEvent
    with pytest.raises(pydantic.ValidationError) as raised:
        pydantic.TypeAdapter(STREAM_EVENT).validate_python({"type": "response.no_such_event"})
    assert [error["type"] for error in raised.value.errors()] == ["union_tag_invalid"]


class _Model(pydantic.BaseModel):
    name: str = "n"
    when: datetime | None = None


def test_values_json_has_no_form_for_are_written_as_the_sdks_encoder_writes_them() -> None:
    encoder = importlib.import_module("openai._utils._json")
    value = {"at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "model": _Model(when=datetime(2026, 1, 1))}
    ours = json.dumps(
        value, default=sdk_seam.json_default, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()
    assert ours == encoder.openapi_dumps(value), "openai._utils._json writes these values otherwise now"


def _frames(events: list[Any]) -> list[tuple[object, ...]]:
    return [(sse.event, sse.data, sse.id, sse.retry) for sse in events]


async def test_the_decoder_frames_chunk_by_chunk_as_its_aiter_bytes_does() -> None:
    body = (
        b'event: response.output_text.delta\r\ndata: {"a": 1}\r\n\r\n: a comment\n'
        b"id: 7\rretry: 30\rdata: one\rdata: two\r\r"
        b'data: {"b": 2}\n\ndata: [DONE]\n\ndata: left without a line break'
    )
    for size in (1, 2, 3, 7, len(body)):
        chunks = [body[start : start + size] for start in range(0, len(body), size)]

        async def read(chunks: list[bytes] = chunks) -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk

        client = client_for(Recorder([answer("{}")]))
        shipped = [sse async for sse in sdk_seam.sse_decoder(client).aiter_bytes(read())]
        framing = sdk_seam.framer(sdk_seam.sse_decoder(client))
        assert framing is not None, "openai._streaming: SSEDecoder._decode_lines or _SSELineDecoder is gone"
        framed = [sse for chunk in chunks for sse in framing.feed(chunk)] + list(framing.finish())
        assert _frames(framed) == _frames(shipped), "the SDK's decoder no longer frames a chunk this way"
        assert len(shipped) == 4
