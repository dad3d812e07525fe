"""Streamed requests: the span lasts as long as the stream, says how it ended and when it first answered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence

import pytest
from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, StatusCode

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import InstrumentedChat, Telemetry, instrument_chat
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    MalformedResponseError,
    TextContent,
    Usage,
    updates_of,
)
from tests.adapters.support import BASE_URL, Recorder, answer, message_item, response_document
from tests.adapters.telemetry_support import Otel, real_adapter, served

MODEL = "gpt-test"
ASK = (ChatMessage.user("hi"),)


@pytest.fixture
def otel() -> Iterator[Otel]:
    recorded = Otel()
    yield recorded
    recorded.shutdown()


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


def attributes(otel: Otel) -> dict[str, object]:
    (span,) = otel.spans()
    return dict(span.attributes or {})


async def test_a_chat_with_only_whole_answers_is_traced_streaming_each_answer_whole(otel: Otel) -> None:
    whole = ScriptedTurn(text="Ship it on Monday.", response_id="resp_whole").response(1)

    class WholeOnly:
        """Streams only by reading its answer whole; its get_response is not traced twice."""

        async def get_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> ChatResponse:
            return whole

        def get_streaming_response(
            self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
        ) -> AsyncIterator[ChatResponseUpdate]:
            return updates_of(lambda: self.get_response(messages, options))

    chat = instrument_chat(WholeOnly(), otel.telemetry(), model=MODEL)
    assert type(chat) is InstrumentedChat

    updates = [update async for update in chat.get_streaming_response(ASK)]

    assert updates == list(whole.to_updates())
    found = attributes(otel)
    assert found["gen_ai.response.id"] == "resp_whole"
    assert "gen_ai.response.time_to_first_chunk" in found


async def test_a_whole_stream_is_one_span_with_the_same_attributes_as_the_json_path(otel: Otel) -> None:
    turn = ScriptedTurn(text="Ship it on Monday.", usage=Usage(12, 5, 17), response_id="resp_7")
    chat = InstrumentedChat(ScriptedChat(turn, turn), otel.telemetry(), model=MODEL)

    updates = [update async for update in chat.get_streaming_response(ASK)]
    await chat.get_response(ASK)

    assert ChatResponse.from_updates(updates).text == "Ship it on Monday."
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

    async for _ in chat.get_streaming_response(ASK):
        pass

    output = json.loads(str(attributes(otel)["gen_ai.output.messages"]))
    assert output == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Ship it on Monday."}],
            "finish_reason": "stop",
        }
    ]


async def test_a_stream_that_fails_marks_its_span_and_keeps_what_arrived(otel: Otel) -> None:
    partial = ScriptedTurn(text="half", usage=Usage(4, 1, 5), response_id="resp_cut").response(1)
    failure = MalformedResponseError("the stream ended before a terminal event", partial=partial)
    chat = InstrumentedChat(ScriptedChat(failure), otel.telemetry(), model=MODEL)

    with pytest.raises(MalformedResponseError):
        async for _ in chat.get_streaming_response(ASK):
            pass

    (span,) = otel.spans()
    assert span.status.status_code is StatusCode.ERROR
    found = dict(span.attributes or {})
    assert found["error.type"] == "MalformedResponseError"
    assert found["gen_ai.response.id"] == "resp_cut"
    assert found["gen_ai.usage.input_tokens"] == 4


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
    (span,) = otel.spans()
    assert dict(span.attributes or {})["error.type"] == "CancelledError"


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


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_real_adapter_streamed_after_a_retry_is_one_span_with_its_attempts(
    otel: Otel, streaming: bool
) -> None:
    document = response_document(
        [message_item("msg_1", "Done", " and dusted.")], response_id="resp_s", usage=(9, 4, 13)
    )
    recorder = Recorder(
        [answer('{"error": {"message": "busy"}}', status=503), served(document, streaming=streaming)]
    )
    adapter, _ = real_adapter(recorder, streaming=streaming, max_retries=1)
    chat = instrument_chat(adapter, otel.telemetry(base_url=BASE_URL), model=MODEL)
    assert isinstance(chat, InstrumentedChat)

    updates = [update async for update in chat.get_streaming_response(ASK)]

    assert ChatResponse.from_updates(updates).text == "Done and dusted."
    (span,) = otel.spans()
    found = dict(span.attributes or {})
    assert found["gen_ai.response.id"] == "resp_s"
    assert (found["gen_ai.usage.input_tokens"], found["gen_ai.usage.output_tokens"]) == (9, 4)
    assert isinstance(found["gen_ai.response.time_to_first_chunk"], float)
    assert [dict(e.attributes or {}).get("http.response.status_code") for e in span.events] == [503, 200]


async def test_without_an_sdk_a_stream_passes_through_whole() -> None:
    telemetry = Telemetry(
        tracer_provider=trace.NoOpTracerProvider(), meter_provider=metrics.NoOpMeterProvider()
    )
    turn = ScriptedTurn(text="Ship it on Monday.", usage=Usage(1, 2, 3))
    chat = InstrumentedChat(ScriptedChat(turn), telemetry, model=MODEL)

    updates = [update async for update in chat.get_streaming_response(ASK)]

    assert ChatResponse.from_updates(updates) == turn.response(1)
