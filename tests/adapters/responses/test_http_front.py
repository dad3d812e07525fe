"""The HTTP front (``http_front``): the adapters watch each attempt through a copy of the client, leaving the
given one as it was, count attempts from the SDK's retry header, and decode each body once, capped after
decompression."""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import json
import logging
import time
import zlib
from types import SimpleNamespace
from typing import Any, cast

import httpx
import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.offline.render import message_item, sse, stream_events
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from adapters.responses.http_front import ResponseTooLargeError, attempts_of, observed
from domain import ChatError, ChatMessage, ChatTransportError, MalformedResponseError
from tests.support.bombs import stacked_gzip_bomb
from tests.support.gateway import (
    API_KEY,
    BASE_URL,
    JSON,
    SSE,
    Pieces,
    Recorder,
    adapters_for,
    answer,
    assert_shows_no_key,
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


# ---------------------------------------------------------------- retry waits against the deadline


def _http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


def _rate_limited(**wait: str) -> httpx.Response:
    # No retry-after-ms unless a case gives one: the header under test is the only wait the answer asks.
    return httpx.Response(
        429,
        json={"error": {"message": "slow down", "type": "rate_limit", "code": "rate_limited"}},
        headers={"x-request-id": "req_limited", **wait},
    )


# A wait the front cannot read is the SDK's own back-off (half a second before the first retry): within
# a deadline of seconds, so the answer is asked for again. One it reads as longer than the time left is
# vetoed: the 429 comes back at once, where the SDK would have slept into the deadline.
@pytest.mark.parametrize(
    ("wait", "retried"),
    [
        ({"retry-after": "in a while"}, True),
        ({"retry-after-ms": "soon"}, True),
        ({"retry-after": "Fri, 31 Dec 99999999999 23:59:59 GMT"}, True),
        ({"retry-after": "PAST"}, True),
        ({"retry-after": "FUTURE"}, False),
        ({"retry-after-ms": "soon", "retry-after": "FUTURE"}, False),
        ({"retry-after-ms": "3000"}, False),
    ],
    ids=[
        "words",
        "ms-words",
        "overflowing-date",
        "past",
        "future",
        "ms-words-then-future",
        "ms-past-deadline",
    ],
)
async def test_a_retry_wait_is_read_as_the_sdk_reads_it_and_vetoed_past_the_deadline(
    wait: dict[str, str], retried: bool
) -> None:
    dated = {
        name: _http_date(-60) if value == "PAST" else _http_date(60) if value == "FUTURE" else value
        for name, value in wait.items()
    }
    recorder = Recorder([_rate_limited(**dated)])
    within = ResponsesSettings(model="gpt-test", deadline_seconds=2.0)
    adapter = adapters_for(recorder, within, max_retries=1)[1]

    with pytest.raises(ChatTransportError) as caught:
        await adapter.get_response([ChatMessage.user("hi")])

    # Retried, the second 429 ends it (no retry left); vetoed, the first comes back at once. Neither is
    # the deadline's error, which a wait that was begun past the deadline would have ended in.
    assert caught.value.status_code == 429
    assert "deadline" not in caught.value.message
    assert caught.value.attempts == (2 if retried else 1)
    assert len(recorder.requests) == (2 if retried else 1)


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (httpx.ConnectError("refused"), "the connection to the Responses endpoint failed"),
        (httpx.ConnectTimeout("no handshake"), "the request to the Responses endpoint timed out"),
    ],
    ids=["connect-error", "connect-timeout"],
)
async def test_a_failed_attempt_whose_back_off_would_pass_the_deadline_fails_at_once(
    raised: httpx.TransportError, message: str
) -> None:
    def failing(request: httpx.Request) -> httpx.Response:
        raised.request = request
        raise raised

    recorder = Recorder([failing])
    # Shorter than the SDK's first back-off (at least 0.375 s): no retry could be waited for.
    within = ResponsesSettings(model="gpt-test", deadline_seconds=0.3)

    for adapter in adapters_for(recorder, within, max_retries=3):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response([ChatMessage.user("hi")])
        assert caught.value.message == message
        assert (caught.value.status_code, caught.value.attempts) == (None, 1)
        assert_shows_no_key(caught.value)

    assert len(recorder.requests) == 2


async def test_outside_any_adapter_the_front_leaves_every_retry_to_the_sdk() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    unavailable = answer("{}", JSON, 503)
    recorder = Recorder([refuse, unavailable, answer(OK, JSON)])
    client = observed(client_for(recorder, max_retries=2), max_response_bytes=1 << 20)

    # No request of an adapter is current: no deadline to weigh a wait against, nothing told.
    response = await client.responses.create(model="m", input="outside any adapter")

    assert response.id == "resp_test"
    assert [request.headers["x-stainless-retry-count"] for request in recorder.requests] == ["0", "1", "2"]


# ---------------------------------------------------------------- the SDK's own httpx2 client as the original


async def test_an_httpx2_original_is_fronted_like_a_legacy_one_headers_cookies_and_body() -> None:
    requests: list[httpx2.Request] = []

    def gateway(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        body = gzip.compress(OK.encode())
        headers = {"content-type": JSON, "content-encoding": "gzip", "set-cookie": "session=abc; Path=/"}
        return httpx2.Response(200, headers=headers, content=body)

    http_client = httpx2.AsyncClient(
        transport=httpx2.MockTransport(gateway),
        headers={"X-Team": "meetings", "accept-encoding": "br, zstd, gzip"},
        cookies={"team": "meetings"},
    )
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=BASE_URL, http_client=http_client, max_retries=0)
    adapter = ResponsesSseAdapter(client, ResponsesSettings(model="gpt-test"))

    first = await adapter.get_response([ChatMessage.user("hi")])
    second = await adapter.get_response([ChatMessage.user("again")])

    assert (first.text, second.text) == ("ok", "ok")
    assert [request.headers["x-team"] for request in requests] == ["meetings", "meetings"]
    assert requests[0].headers["accept-encoding"] == "gzip, deflate"
    assert requests[0].headers["cookie"] == "team=meetings"
    assert sorted(requests[1].headers["cookie"].split("; ")) == ["session=abc", "team=meetings"]
    # The answer's cookie went into the original client's jar, once.
    assert [cookie.name for cookie in http_client.cookies.jar].count("session") == 1
    assert observed(client, max_response_bytes=1 << 20)._client is not http_client
    assert not http_client.is_closed


def test_a_client_without_an_httpx_client_is_refused_when_the_adapter_is_built() -> None:
    not_the_sdk = cast(openai.AsyncOpenAI, SimpleNamespace(api_key=API_KEY, _client=object()))

    with pytest.raises(TypeError) as caught:
        ResponsesSseAdapter(not_the_sdk, ResponsesSettings(model="gpt-test"))

    assert "HTTP client is a object" in str(caught.value)
    assert API_KEY not in str(caught.value)


def _held_by_zlib_at_the_end(head: bytes) -> tuple[bytes, bytes]:
    """``head`` padded with spaces to just past 64 KiB, and its raw deflate coding, such that zlib,
    asked for 64 KiB, has read every byte of the coding and still holds the last bytes of the body."""
    for extra in range(1, 1024):
        body = head + b" " * (64 * 1024 + extra - len(head))
        coder = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        # The padding in a block of its own: its last match runs across the 64 KiB mark.
        coded = coder.compress(head) + coder.flush(zlib.Z_FULL_FLUSH) + coder.compress(body[len(head) :])
        coded += coder.flush()
        probe = zlib.decompressobj(-zlib.MAX_WBITS)
        probe.decompress(coded, 64 * 1024)
        if not probe.unconsumed_tail and not probe.eof:
            return body, coded
    raise AssertionError("no padding left zlib holding output once its input ran out")


async def test_the_bytes_zlib_still_holds_when_the_body_ends_are_handed_on() -> None:
    body, coded = _held_by_zlib_at_the_end(OK.encode())
    recorder = Recorder([lambda _: streamed(Pieces(coded), JSON, encoding="deflate")])
    front = observed(client_for(recorder), max_response_bytes=1 << 20)._client

    response = await front.get(f"{BASE_URL}/responses/resp_test")

    assert len(response.content) == len(body)
    assert response.content == body
    assert "content-encoding" not in response.headers


async def test_the_bytes_zlib_still_holds_when_the_body_ends_count_against_the_cap() -> None:
    body, coded = _held_by_zlib_at_the_end(OK.encode())
    recorder = Recorder([lambda _: streamed(Pieces(coded), JSON, encoding="deflate")])
    # Room for the first 64 KiB piece, not for what zlib hands over at the end.
    front = observed(client_for(recorder), max_response_bytes=64 * 1024)._client

    with pytest.raises(ResponseTooLargeError) as caught:
        await front.get(f"{BASE_URL}/responses/resp_test")

    assert caught.value.limit == 64 * 1024
    assert len(body) > 64 * 1024


@pytest.mark.parametrize("shape", sorted(BODIES))
async def test_a_client_observed_for_a_larger_cap_still_gets_the_adapters_cap(shape: str) -> None:
    big = response_document([message_item("msg_1", "x" * 20_000)])
    body = sse(stream_events(big, chunk=100)).encode() if shape == "sse" else json.dumps(big).encode()
    recorder = Recorder([lambda _: streamed(Pieces(body, 500), SSE if shape == "sse" else JSON)])
    # Another adapter's copy, fronted for a cap of 16 MiB, handed in to adapters capped at 8,000 bytes.
    roomy = observed(client_for(recorder), max_response_bytes=1 << 24)
    capped = ResponsesSettings(model="gpt-test", max_response_bytes=8_000)

    for adapter in (ResponsesSseAdapter(roomy, capped), ResponsesJsonAdapter(roomy, capped)):
        with pytest.raises(MalformedResponseError) as caught:
            await adapter.get_response([ChatMessage.user("hi")])
        assert caught.value.message == "the response body exceeded agent.max_response_bytes (8000 bytes)"

    # The roomier copy itself is left as it was: the same body folds through an adapter of its cap.
    roomy_settings = ResponsesSettings(model="gpt-test", max_response_bytes=1 << 24)
    response = await ResponsesSseAdapter(roomy, roomy_settings).get_response([ChatMessage.user("hi")])
    assert response.text == "x" * 20_000
    assert observed(roomy, max_response_bytes=1 << 24) is roomy
    assert observed(roomy, max_response_bytes=8_000)._client is not roomy._client


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
async def test_cookies_set_through_the_front_are_the_original_clients_still_shared(library: str) -> None:
    sent: list[str | None] = []

    def gateway(request: Any) -> Any:
        sent.append(request.headers.get("cookie"))
        headers = {"content-type": JSON, "set-cookie": "session=abc; Path=/"}
        response_type = httpx.Response if library == "httpx" else httpx2.Response
        return response_type(200, headers=headers, content=OK.encode())

    http_client: Any = (
        httpx.AsyncClient(transport=httpx.MockTransport(gateway), cookies={"team": "meetings"})
        if library == "httpx"
        else httpx2.AsyncClient(transport=httpx2.MockTransport(gateway), cookies={"team": "meetings"})
    )
    client = observed(sdk_over(http_client), max_response_bytes=1 << 20)

    # The front is the copy's HTTP client; a jar set on it replaces the one it shares with the original.
    client._client.cookies = {"team": "ops"}
    await client.responses.create(model="m", input="first")
    await client.responses.create(model="m", input="second")
    await http_client.get(f"{BASE_URL}/responses/resp_test")

    assert sent[0] == "team=ops"
    # The answer's cookie, taken by the original into the jar both share, goes out from either.
    assert sorted(str(sent[1]).split("; ")) == sorted(str(sent[2]).split("; ")) == ["session=abc", "team=ops"]
    assert sorted(cookie.name for cookie in client._client.cookies.jar) == ["session", "team"]
