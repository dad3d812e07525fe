"""InstrumentedChat: one CLIENT span and the GenAI metrics per request, whole or streamed, over fakes and
over the real adapters (each HTTP attempt an event); a stream's span lasts as long as the stream, says how
it ended and when it first answered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, StatusCode

from adapters.offline.render import message_item
from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import InstrumentedChat, Telemetry, instrument_chat, instrument_http_client
from adapters.telemetry.instruments import TEXT_LIMIT
from domain import ChatMessage, ChatOptions, ChatPort, ChatResponse, ChatResponseUpdate, TextContent, Usage
from domain.errors import ChatError, ChatTransportError, MalformedResponseError, ResponseFailedError
from tests.domain.strategies import usages
from tests.support.doubles import NoAclose, WholeAnswers
from tests.support.gateway import BASE_URL, Recorder, answer, response_document, served
from tests.support.telemetry import MODEL, Otel, real_adapter

ASK = (ChatMessage.user("hi"),)


def attributes(otel: Otel) -> dict[str, object]:
    (span,) = otel.spans()
    return dict(span.attributes or {})


async def ask(chat: ChatPort, *, streamed: bool) -> ChatResponse:
    """The answer to ``ASK``, asked for whole or read to its end as a stream."""
    if not streamed:
        return await chat.get_response(ASK)
    return ChatResponse.from_updates([update async for update in chat.get_streaming_response(ASK)])


class Endless:
    """A streaming chat that yields text pieces until closed, and says whether it was closed."""

    def __init__(self, first: asyncio.Event | None = None) -> None:
        self.closed = False
        self.first = first

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        raise NotImplementedError

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        try:
            yield ChatResponseUpdate(
                (TextContent("piece"),), item_index=0, part_index=0, response_id="resp_endless"
            )
            if self.first is not None:
                self.first.set()
            while True:
                await asyncio.sleep(0)
                yield ChatResponseUpdate((TextContent("piece"),), item_index=0, part_index=0)
        finally:
            self.closed = True


# ---------------------------------------------------------------- the span and the metrics of a request


async def assert_usage_is_recorded(usage: Usage | None) -> None:
    """Token attributes and histogram points exist exactly for the counts the provider reported."""
    with Otel() as otel:
        chat = InstrumentedChat(
            ScriptedChat(ChatResponse(model_id="scripted", usage=usage)), otel.telemetry(), model=MODEL
        )

        await chat.get_response(ASK)

        found = attributes(otel)
        counts = {
            "input": None if usage is None else usage.input_tokens,
            "output": None if usage is None else usage.output_tokens,
        }
        assert found.get("gen_ai.usage.input_tokens") == counts["input"]
        assert found.get("gen_ai.usage.output_tokens") == counts["output"]
        cost = None if usage is None else usage.cost_usd
        assert found.get("gen_ai.usage.cost") == cost
        assert [
            (p.value, dict(p.attributes or {})["gen_ai.request.model"])
            for p in otel.sums("gen_ai.client.cost")
        ] == ([] if cost is None else [(cost, MODEL)])
        points = {
            dict(p.attributes or {})["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")
        }
        assert {kind: (p.sum, p.count) for kind, p in points.items()} == {
            kind: (count, 1) for kind, count in counts.items() if count is not None
        }
        for point in points.values():
            assert dict(point.attributes or {})["gen_ai.operation.name"] == "chat"
            assert dict(point.attributes or {})["gen_ai.request.model"] == MODEL
            assert dict(point.attributes or {})["gen_ai.response.model"] == "scripted"


@given(
    input_tokens=st.integers(min_value=0, max_value=10**9),
    output_tokens=st.integers(min_value=0, max_value=10**9),
)
async def test_usage_attributes_and_token_histograms_match_the_response_usage(
    input_tokens: int, output_tokens: int
) -> None:
    await assert_usage_is_recorded(Usage(input_tokens, output_tokens, input_tokens + output_tokens))


@given(usage=usages)
async def test_token_attributes_appear_exactly_for_the_counts_the_provider_reported(
    usage: Usage | None,
) -> None:
    await assert_usage_is_recorded(usage)


async def test_options_name_the_request_model_and_limits(otel: Otel) -> None:
    chat = InstrumentedChat(ScriptedChat(ScriptedTurn(text="ok")), otel.telemetry(), model=MODEL)
    options = ChatOptions(model="gpt-other", max_output_tokens=64, temperature=0.5)

    await chat.get_response(ASK, options)

    (span,) = otel.spans()
    assert span.name == "chat gpt-other"
    assert attributes(otel)["gen_ai.request.model"] == "gpt-other"
    assert attributes(otel)["gen_ai.request.max_tokens"] == 64
    assert attributes(otel)["gen_ai.request.temperature"] == 0.5
    assert "usage" not in repr(attributes(otel))
    assert otel.points("gen_ai.client.token.usage") == []


PARTIAL = ScriptedTurn(text="half", usage=Usage(5, 1, 6), response_id="resp_cut").response(1)


@pytest.mark.parametrize(
    ("error", "streamed"),
    [
        (
            ResponseFailedError(
                "the provider failed", code="server_error", partial=PARTIAL, response_id="resp_cut"
            ),
            False,
        ),
        (MalformedResponseError("the stream ended before a terminal event", partial=PARTIAL), True),
    ],
    ids=["provider-failed", "stream-cut"],
)
async def test_a_failed_request_marks_its_span_and_keeps_what_had_arrived(
    otel: Otel, error: ChatError, streamed: bool
) -> None:
    chat = InstrumentedChat(ScriptedChat(error), otel.telemetry(), model=MODEL)

    with pytest.raises(ChatError) as raised:
        await ask(chat, streamed=streamed)

    assert raised.value is error
    (span,) = otel.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == type(error).__name__
    found = attributes(otel)
    assert found["error.type"] == type(error).__name__
    assert found["gen_ai.response.id"] == "resp_cut"
    assert found["gen_ai.usage.input_tokens"] == 5
    assert "http.response.status_code" not in found


async def test_an_error_that_is_not_a_chat_error_still_ends_the_span(otel: Otel) -> None:
    chat = InstrumentedChat(ScriptedChat(), otel.telemetry(), model=MODEL)

    with pytest.raises(AssertionError):
        await chat.get_response([ChatMessage.user("one request more than scripted")])

    assert attributes(otel)["error.type"] == "ScriptExhaustedError"
    assert "gen_ai.response.id" not in attributes(otel)
    assert repr(chat) == f"InstrumentedChat({chat.inner!r})"


# ---------------------------------------------------------------- real adapters: each HTTP attempt an event


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_real_adapter_request_after_a_retry_is_one_span_with_one_event_per_attempt(
    otel: Otel, streaming: bool, streamed: bool
) -> None:
    document = response_document(
        [message_item("msg_1", "Done", " and dusted.")], response_id="resp_real", usage=(11, 7)
    )
    recorder = Recorder(
        [answer('{"error": {"message": "busy"}}', status=503), served(document, streaming=streaming)]
    )
    adapter = real_adapter(recorder, streaming=streaming, max_retries=1)
    chat = instrument_chat(adapter, otel.telemetry(base_url=BASE_URL), model=MODEL)

    response = await ask(chat, streamed=streamed)

    assert response.text == "Done and dusted."
    (span,) = otel.spans()
    found = attributes(otel)
    assert found["gen_ai.response.id"] == "resp_real"
    assert found["gen_ai.response.model"] == "gpt-test-2026"
    assert found["gen_ai.response.finish_reasons"] == ("stop",)
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (11, 7)
    assert (found["server.address"], found["server.port"]) == ("gateway.test", 80)
    assert isinstance(found.get("gen_ai.response.time_to_first_chunk"), float) is streamed
    assert [dict(event.attributes or {}) for event in span.events if event.name == "http.attempt"] == [
        {"attempt": 1, "http.request.resend_count": 0, "http.response.status_code": 503},
        {"attempt": 2, "http.request.resend_count": 1, "http.response.status_code": 200},
    ]
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_real_adapter_request_that_fails_marks_its_span_and_its_last_attempt(
    otel: Otel, streaming: bool
) -> None:
    recorder = Recorder([httpx.ConnectError("refused"), httpx.ConnectError("refused")])
    chat = InstrumentedChat(
        real_adapter(recorder, streaming=streaming, max_retries=1), otel.telemetry(), model=MODEL
    )

    with pytest.raises(ChatTransportError):
        await chat.get_response(ASK)

    (span,) = otel.spans()
    assert span.status.status_code is StatusCode.ERROR
    assert attributes(otel)["error.type"] == "ChatTransportError"
    assert [dict(event.attributes or {}) for event in span.events if event.name == "http.attempt"] == [
        {"attempt": 1, "http.request.resend_count": 0, "error.type": "no_response"},
        {"attempt": 2, "http.request.resend_count": 1, "error.type": "ChatTransportError"},
    ]


async def test_the_attempt_hooks_are_added_once_and_ignore_requests_no_chat_span_traces(otel: Otel) -> None:
    recorder = Recorder([answer("{}")])
    client = httpx.AsyncClient(transport=httpx.MockTransport(recorder))
    assert instrument_http_client(instrument_http_client(client)) is client
    assert len(client.event_hooks["request"]) == len(client.event_hooks["response"]) == 1

    response = await client.get("http://gateway.test/health")

    assert response.status_code == 200
    assert otel.spans() == ()
    await client.aclose()


# ---------------------------------------------------------------- a streamed request


async def test_a_chat_with_only_whole_answers_is_traced_streaming_each_answer_whole(otel: Otel) -> None:
    whole = ScriptedTurn(text="Ship it on Monday.", response_id="resp_whole")
    # Its stream reads its own get_response, which is not traced a second time.
    chat = instrument_chat(WholeAnswers(ScriptedChat(whole)), otel.telemetry(), model=MODEL)
    assert type(chat) is InstrumentedChat

    updates = [update async for update in chat.get_streaming_response(ASK)]

    assert updates == list(whole.response(1).to_updates())
    assert attributes(otel)["gen_ai.response.id"] == "resp_whole"
    assert "gen_ai.response.time_to_first_chunk" in attributes(otel)


async def test_a_whole_stream_is_one_span_with_the_same_attributes_as_the_json_path(otel: Otel) -> None:
    turn = ScriptedTurn(text="Ship it on Monday.", usage=Usage(12, 5, 17), response_id="resp_7")
    chat = InstrumentedChat(ScriptedChat(turn, turn), otel.telemetry(), model=MODEL)

    streamed_answer = await ask(chat, streamed=True)
    await chat.get_response(ASK)

    assert streamed_answer.text == "Ship it on Monday."
    streamed, whole = otel.spans()
    assert streamed.kind is SpanKind.CLIENT
    assert streamed.name == whole.name == f"chat {MODEL}"
    found = dict(streamed.attributes or {})
    first_chunk = found.pop("gen_ai.response.time_to_first_chunk")
    assert isinstance(first_chunk, float)
    assert 0 <= first_chunk <= (streamed.end_time - streamed.start_time) / 1e9  # type: ignore[operator]
    assert found == dict(whole.attributes or {})
    assert found["gen_ai.usage.input_tokens"] == 12
    assert found["gen_ai.response.id"] == "resp_7"
    assert found["gen_ai.response.finish_reasons"] == ("stop",)
    assert len(otel.points("gen_ai.client.operation.time_to_first_chunk")) == 1
    assert otel.points("gen_ai.client.operation.duration")[0].count == 2


async def test_captured_output_of_a_stream_is_the_folded_answer(otel: Otel) -> None:
    chat = InstrumentedChat(
        ScriptedChat(ScriptedTurn(text="Ship it on Monday.")),
        otel.telemetry(capture_content=True),
        model=MODEL,
    )

    await ask(chat, streamed=True)

    assert json.loads(str(attributes(otel)["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Ship it on Monday."}],
            "finish_reason": "stop",
        }
    ]


async def test_an_abandoned_stream_ends_its_span_and_closes_the_inner_stream(otel: Otel) -> None:
    inner = Endless()
    chat = InstrumentedChat(inner, otel.telemetry(), model=MODEL)

    updates = chat.get_streaming_response(ASK)
    async for _ in updates:
        break
    assert otel.spans() == ()
    await updates.aclose()  # type: ignore[attr-defined]

    assert inner.closed
    (span,) = otel.spans()
    assert [event.name for event in span.events] == ["stream.abandoned"]
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes or {})["gen_ai.response.id"] == "resp_endless"


async def test_a_cancelled_stream_ends_its_span_as_cancelled_and_closes_the_inner_stream(otel: Otel) -> None:
    first = asyncio.Event()
    inner = Endless(first)
    chat = InstrumentedChat(inner, otel.telemetry(), model=MODEL)

    async def consume() -> None:
        async for _ in chat.get_streaming_response(ASK):
            await asyncio.sleep(0)

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert inner.closed
    assert attributes(otel)["error.type"] == "CancelledError"


async def test_a_chat_whose_stream_cannot_even_start_marks_the_span(otel: Otel) -> None:
    class Broken(Endless):
        def get_streaming_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> AsyncIterator[ChatResponseUpdate]:
            raise RuntimeError("no stream today")

    chat = InstrumentedChat(Broken(), otel.telemetry(), model=MODEL)

    with pytest.raises(RuntimeError, match="no stream today"):
        await anext(chat.get_streaming_response(ASK))

    assert attributes(otel)["error.type"] == "RuntimeError"
    assert chat.inner.__class__ is Broken


async def test_an_inner_stream_without_aclose_still_ends_the_span(otel: Otel) -> None:
    chat = InstrumentedChat(NoAclose(ScriptedChat(ScriptedTurn(text="hi"))), otel.telemetry(), model="m")

    assert "".join([u.text async for u in chat.get_streaming_response(ASK)]) == "hi"
    assert attributes(otel)["gen_ai.response.finish_reasons"] == ("stop",)


async def test_without_an_sdk_a_stream_passes_through_whole() -> None:
    telemetry = Telemetry(
        tracer_provider=trace.NoOpTracerProvider(), meter_provider=metrics.NoOpMeterProvider()
    )
    turn = ScriptedTurn(text="Ship it on Monday.", usage=Usage(1, 2, 3))
    chat = InstrumentedChat(ScriptedChat(turn), telemetry, model=MODEL)

    assert await ask(chat, streamed=True) == turn.response(1)


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_gateway_strings_reach_spans_and_metrics_cut_to_a_bounded_length(
    otel: Otel, streamed: bool
) -> None:
    """A hostile gateway's 5 MB response id and 1 MB model id: 200 requests once held 195 MB of them."""
    huge = ChatResponse(
        (ChatMessage.assistant("ok"),),
        response_id="r" * 5_000_000,
        model_id="m" * 1_000_000,
        status="completed",
    )
    chat = InstrumentedChat(ScriptedChat(huge), otel.telemetry(), model=MODEL)

    await ask(chat, streamed=streamed)

    found = attributes(otel)
    assert found["gen_ai.response.id"] == "r" * TEXT_LIMIT + "..."
    assert found["gen_ai.response.model"] == "m" * TEXT_LIMIT + "..."
    (point,) = otel.points("gen_ai.client.operation.duration")
    assert point.attributes is not None
    assert len(str(point.attributes["gen_ai.response.model"])) == TEXT_LIMIT + 3
