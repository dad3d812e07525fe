"""The HTTP front (``http_front``): the adapters watch each attempt through a copy of the client, leaving the
given one as it was, count attempts from the SDK's retry header, and decode each body once, capped after
decompression."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import zlib

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.offline.render import message_item, sse, stream_events
from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from adapters.responses.http_front import attempts_of, observed
from domain import ChatError, ChatMessage, ChatTransportError, MalformedResponseError
from tests.support.bombs import stacked_gzip_bomb
from tests.support.gateway import (
    API_KEY,
    JSON,
    SSE,
    Pieces,
    Recorder,
    adapters_for,
    answer,
    client_for,
    mocked,
    response_document,
    sdk_over,
    streamed,
)

OK = json.dumps(response_document([message_item("msg_1", "ok")]))


async def test_the_original_clients_headers_hooks_and_transport_still_apply() -> None:
    recorder = Recorder([answer(OK, JSON)])
    hooked: list[str] = []

    async def hook(request: httpx.Request) -> None:
        hooked.append(request.url.path)

    http_client = httpx.AsyncClient(
        transport=httpx.MockTransport(recorder),
        headers={"X-Team": "meetings"},
        event_hooks={"request": [hook]},
    )
    client = sdk_over(http_client)
    adapter = ResponsesSseAdapter(client, ResponsesSettings(model="gpt-test"))

    response = await adapter.get_response([ChatMessage.user("hi")])

    assert response.text == "ok"
    assert hooked == ["/v1/responses"]
    (request,) = recorder.requests
    assert request.headers["x-team"] == "meetings"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    original: object = client._client
    assert original is http_client


async def test_the_front_sends_the_original_clients_cookies_and_takes_each_answers_once() -> None:
    setting = answer(OK, JSON)
    setting.headers["set-cookie"] = "session=abc; Path=/"
    recorder = Recorder([setting, answer(OK, JSON)])
    http_client = httpx.AsyncClient(transport=httpx.MockTransport(recorder), cookies={"team": "meetings"})
    adapter = ResponsesSseAdapter(sdk_over(http_client), ResponsesSettings(model="gpt-test"))

    await adapter.get_response([ChatMessage.user("hi")])
    # Set on the host's client after the adapter was built: the front reads the original's own jar.
    http_client.cookies.set("late", "1")
    await adapter.get_response([ChatMessage.user("again")])

    first, second = recorder.requests
    assert first.headers["cookie"] == "team=meetings"
    assert sorted(second.headers["cookie"].split("; ")) == ["late=1", "session=abc", "team=meetings"]
    # The answer's cookie was taken into the original client's jar, once.
    assert [cookie.name for cookie in http_client.cookies.jar].count("session") == 1


def test_observing_twice_wraps_once() -> None:
    client = client_for(Recorder([answer(OK)]))

    once = observed(client, max_response_bytes=1 << 20)

    assert once is not client
    assert observed(once, max_response_bytes=1 << 20) is once


async def test_concurrent_requests_log_only_their_own_attempts(caplog: pytest.LogCaptureFixture) -> None:
    def by_question(request: httpx.Request) -> httpx.Response:
        question = json.loads(request.content)["input"][0]["content"][0]["text"]
        retry = request.headers["x-stainless-retry-count"]
        if question == "flaky" and retry == "0":
            return answer("{}", JSON, 503)
        return answer(OK, JSON)

    adapter, _ = adapters_for(Recorder([by_question]), max_retries=1)

    with caplog.at_level(logging.INFO, logger="adapters.responses"):
        await asyncio.gather(
            adapter.get_response([ChatMessage.user("flaky")]),
            adapter.get_response([ChatMessage.user("steady question")]),
        )

    sizes = sorted({r.__dict__["request_digest"]["byte_size"] for r in caplog.records})
    assert len(caplog.records) == 2
    assert len(sizes) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "Responses attempt 1 failed (503)",
        "Responses request succeeded after 2 attempts",
    ]


async def test_closing_the_adapters_copy_leaves_the_given_client_open() -> None:
    http_client = mocked(Recorder([answer(OK)]))
    client = sdk_over(http_client)

    await observed(client, max_response_bytes=1 << 20).close()

    assert not http_client.is_closed
    response = await observed(client, max_response_bytes=1 << 20).responses.create(
        model="m", input="outside any adapter"
    )
    assert response.id == "resp_test"


# ---------------------------------------------------------------- bodies: decoded once, counted when decoded


def _encoded(data: bytes, coding: str) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    # deflate without the zlib header: servers send both.
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


TEXT = "Decoded once, whatever the label says. " * 40
DOCUMENT = response_document([message_item("msg_1", TEXT)], response_id="resp_zipped")
BODIES = {"sse": sse(stream_events(DOCUMENT)).encode(), "json": json.dumps(DOCUMENT).encode()}
LABELS = ["text/event-stream", "application/json", "text/plain", "application/octet-stream", ""]


@settings(max_examples=60)
@given(
    shape=st.sampled_from(sorted(BODIES)),
    coding=st.sampled_from(["gzip", "deflate", "raw-deflate"]),
    label=st.sampled_from(LABELS),
    chunk=st.integers(min_value=1, max_value=4096),
    streaming=st.booleans(),
)
async def test_a_compressed_body_folds_on_either_adapter_under_any_label(
    shape: str, coding: str, label: str, chunk: int, streaming: bool
) -> None:
    body = _encoded(BODIES[shape], coding)
    encoding = "deflate" if coding == "raw-deflate" else coding
    recorder = Recorder([lambda _: streamed(Pieces(body, chunk), label, encoding=encoding)])
    sse_adapter, json_adapter = adapters_for(recorder)
    adapter = sse_adapter if streaming else json_adapter

    response = await adapter.get_response([ChatMessage.user("hi")])

    assert response.text == TEXT
    assert response.response_id == "resp_zipped"


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_corrupt_compressed_body_is_a_malformed_response(streaming: bool) -> None:
    body = gzip.compress(BODIES["sse"])[:-40] + b"\x00" * 40
    recorder = Recorder([lambda _: streamed(Pieces(body, 512), SSE, encoding="gzip")])
    adapter = adapters_for(recorder)[0 if streaming else 1]

    with pytest.raises(ChatError) as caught:
        await adapter.get_response([ChatMessage.user("hi")])

    assert isinstance(caught.value, MalformedResponseError | ChatTransportError)


LIMIT = 256 * 1024


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("coding", ["identity", "gzip"])
@pytest.mark.parametrize("shape", sorted(BODIES))
async def test_a_body_over_the_cap_is_refused_with_what_had_arrived(
    streaming: bool, coding: str, shape: str
) -> None:
    big = response_document([message_item("msg_1", "z" * (4 * LIMIT))], response_id="resp_big")
    plain = sse(stream_events(big, chunk=4096)).encode() if shape == "sse" else json.dumps(big).encode()
    body = gzip.compress(plain) if coding == "gzip" else plain
    stream = Pieces(body, 16 * 1024)
    recorder = Recorder([streamed(stream, SSE if shape == "sse" else JSON, encoding=coding)])
    adapter = adapters_for(recorder, ResponsesSettings(model="gpt-test", max_response_bytes=LIMIT))[
        0 if streaming else 1
    ]

    with pytest.raises(MalformedResponseError) as caught:
        await adapter.get_response([ChatMessage.user("hi")])

    assert "max_response_bytes" in caught.value.message
    assert stream.closed
    if shape == "sse" and streaming:
        # A live stream keeps what had arrived; the cap cut it before the end.
        assert caught.value.partial is not None
        assert caught.value.partial.response_id == "resp_big"
        assert 0 < len(caught.value.partial.text) < 4 * LIMIT


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_gzip_bomb_stops_at_the_cap(streaming: bool) -> None:
    bomb = gzip.compress(b"data: " + b"0" * (64 * 1024 * 1024), compresslevel=9)
    assert len(bomb) < 100 * 1024
    recorder = Recorder([lambda _: streamed(Pieces(bomb, 16 * 1024), SSE, encoding="gzip")])
    adapter = adapters_for(recorder, ResponsesSettings(model="gpt-test", max_response_bytes=LIMIT))[
        0 if streaming else 1
    ]

    with pytest.raises(MalformedResponseError) as caught:
        await adapter.get_response([ChatMessage.user("hi")])

    assert "max_response_bytes" in caught.value.message


async def test_a_body_over_the_cap_says_the_cap_and_keeps_only_what_arrived_under_it() -> None:
    document = response_document([message_item("msg_1", "x" * 20_000)])
    body = sse(stream_events(document, chunk=100)).encode()
    settings = ResponsesSettings(model="gpt-test", max_response_bytes=8_000)

    for adapter in adapters_for(Recorder([lambda _: streamed(Pieces(body, 500))]), settings):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response([ChatMessage.user("hi")])
        assert caught.value.message == "the response body exceeded agent.max_response_bytes (8000 bytes)"
        assert caught.value.partial is not None
        assert set(caught.value.partial.text) == {"x"}


@pytest.mark.parametrize(("header", "attempts"), [(None, 1), ("0", 1), ("4", 5), ("many", 1)])
def test_attempts_come_from_the_sdks_retry_count_header(header: str | None, attempts: int) -> None:
    headers = {} if header is None else {"x-stainless-retry-count": header}

    assert attempts_of(httpx.Request("POST", "http://gateway.test/", headers=headers)) == attempts
    assert attempts_of(None) == 1


# ---------------------------------------------------------------- coding chains: each coding in turn, bounded


def _chain(data: bytes, codings: list[str]) -> tuple[bytes, str]:
    """``data`` with ``codings`` applied in order, and the Content-Encoding header that says so."""
    for coding in codings:
        data = _encoded(data, coding)
    return data, ", ".join("deflate" if coding == "raw-deflate" else coding for coding in codings)


@settings(max_examples=40)
@given(
    shape=st.sampled_from(sorted(BODIES)),
    codings=st.lists(st.sampled_from(["gzip", "deflate", "raw-deflate"]), min_size=1, max_size=4),
    chunk=st.integers(min_value=1, max_value=4096),
    streaming=st.booleans(),
)
async def test_a_body_under_stacked_codings_folds_each_coding_decoded_once_in_turn(
    shape: str, codings: list[str], chunk: int, streaming: bool
) -> None:
    body, header = _chain(BODIES[shape], codings)
    recorder = Recorder([lambda _: streamed(Pieces(body, chunk), SSE, encoding=header)])
    adapter = adapters_for(recorder)[0 if streaming else 1]

    response = await adapter.get_response([ChatMessage.user("hi")])

    assert response.text == TEXT
    assert response.response_id == "resp_zipped"


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("depth", [2, 3, 4])
async def test_a_stacked_gzip_bomb_of_any_depth_stops_at_the_cap(streaming: bool, depth: int) -> None:
    bomb = stacked_gzip_bomb(256, depth)
    recorder = Recorder(
        [lambda _: streamed(Pieces(bomb, 16 * 1024), SSE, encoding=", ".join(["gzip"] * depth))]
    )
    adapter = adapters_for(recorder, ResponsesSettings(model="gpt-test", max_response_bytes=LIMIT))[
        0 if streaming else 1
    ]

    with pytest.raises(MalformedResponseError) as caught:
        await adapter.get_response([ChatMessage.user("hi")])

    assert "max_response_bytes" in caught.value.message


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize(
    ("header", "named"),
    [
        ("br", "br"),
        ("zstd", "zstd"),
        ("gzip, x-unknown", "x-unknown"),
        ("x-unknown, gzip", "x-unknown"),
        (", ".join(["gzip"] * 5), ", ".join(["gzip"] * 5)),
    ],
)
async def test_a_coding_without_a_bounded_decoder_is_refused_unread(
    streaming: bool, header: str, named: str
) -> None:
    stream = Pieces(gzip.compress(BODIES["sse"]), 512)
    recorder = Recorder([lambda _: streamed(stream, SSE, encoding=header)])
    adapter = adapters_for(recorder)[0 if streaming else 1]

    with pytest.raises(MalformedResponseError) as caught:
        await adapter.get_response([ChatMessage.user("hi")])

    assert f"Content-Encoding {named!r}" in caught.value.message
    assert stream.closed


async def test_requests_ask_only_for_the_codings_decoded_here() -> None:
    recorder = Recorder([answer(OK, JSON)])
    # A host's client that would ask for more (brotli installed, say): the front asks for what it decodes.
    http_client = httpx.AsyncClient(
        transport=httpx.MockTransport(recorder), headers={"accept-encoding": "br, zstd, gzip"}
    )
    adapter = ResponsesSseAdapter(sdk_over(http_client), ResponsesSettings(model="gpt-test"))

    await adapter.get_response([ChatMessage.user("hi")])

    assert recorder.requests[0].headers["accept-encoding"] == "gzip, deflate"
