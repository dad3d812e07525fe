"""Failover through the container on real sockets: each failing kind, both adapters, never after a streamed
update, every target failing, and no target's key anywhere (errors, logs, the other gateways, spans)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any, Final

import pytest
from dependency_injector import providers

from adapters.container import Container
from adapters.failover import failed_targets
from adapters.offline.render import message_item, sse, stream_events
from domain import ChatError, ChatMessage, ChatResponse, ChatTransportError
from tests.support.gateway import response_document
from tests.support.local_server import LocalServer, Received, Sender, serve
from tests.support.telemetry import Otel, every_text

PRIMARY_KEY: Final = "sk-primary-4b1d5e7a9c"
FALLBACK_KEY: Final = "sk-fallback-8e2f6a0c3d"
SECOND_KEY: Final = "sk-second-1a3c5e7g9i"
ANSWER: Final = "The fallback answered."
HALF: Final = "Half an answer from the primary"
MESSAGES: Final = (ChatMessage.user("Summarize the meeting."),)
# LiteLLM's proxy for a model it does not serve (route_llm_request.ProxyModelNotFoundError, as its
# exception handler writes it); tests/integration/gateway/test_failover.py asks a real proxy.
LITELLM_UNKNOWN_MODEL: Final = {
    "error": {
        "message": "/responses: Invalid model name passed in model=gpt-9. "
        "Call `/v1/models` to view available models for your key.",
        "type": "None",
        "param": "None",
        "code": "400",
    }
}
STREAMING: Final = pytest.mark.parametrize("use_streaming", [True, False], ids=["sse", "json"])


def _key(request: Received) -> str:
    return request.headers.get("authorization", "").removeprefix("Bearer ")


def _echo(status: int, request: Received) -> bytes:
    """An error body that quotes the caller's key back, as a hostile gateway would."""
    return json.dumps({"error": {"message": f"refused key {_key(request)}", "type": "server_error"}}).encode()


def _answer_events(text: str, model: str) -> list[dict[str, Any]]:
    document = response_document([message_item("msg_1", text)], response_id="resp_ok", model=model)
    return stream_events(document)


async def _answering(request: Received, sender: Sender) -> None:
    """A gateway that answers; an event stream or JSON, as asked."""
    body = json.loads(request.body)
    model = str(body.get("model"))
    if body.get("stream"):
        await sender.whole(
            200, sse(_answer_events(ANSWER, model)).encode(), {"content-type": "text/event-stream"}
        )
        return
    document = response_document([message_item("msg_1", ANSWER)], response_id="resp_ok", model=model)
    await sender.whole(200, json.dumps(document).encode(), {"content-type": "application/json"})


def _failing(kind: str):  # type: ignore[no-untyped-def]  # a handler for serve()
    async def handler(request: Received, sender: Sender) -> None:
        if kind == "503":
            await sender.whole(503, _echo(503, request), {"content-type": "application/json"})
        elif kind == "500":
            await sender.whole(500, _echo(500, request), {"content-type": "application/json"})
        elif kind == "429 past the deadline":
            headers = {"content-type": "application/json", "retry-after": "3600"}
            await sender.whole(429, _echo(429, request), headers)
        elif kind == "404 route":
            await sender.whole(404, b'{"detail": "Not Found"}', {"content-type": "application/json"})
        elif kind == "400 unknown model":
            await sender.whole(
                400, json.dumps(LITELLM_UNKNOWN_MODEL).encode(), {"content-type": "application/json"}
            )
        elif kind == "stalled":
            await sender.silent_until_gone()
        else:  # pragma: no cover - a kind this module does not know
            raise AssertionError(kind)

    return handler


KINDS: Final = ["503", "500", "429 past the deadline", "404 route", "400 unknown model", "stalled", "refused"]


@contextlib.contextmanager
def _refusing_port() -> Iterator[str]:
    """A base URL on 127.0.0.1 whose port is bound but not listening: every connection is refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/v1"


@contextlib.asynccontextmanager
async def _primary(kind: str) -> AsyncIterator[tuple[str, list[Received]]]:
    """The failing primary's base URL and the requests it received (none for a refused connection)."""
    if kind == "refused":
        with _refusing_port() as base_url:
            yield base_url, []
        return
    async with serve(_failing(kind)) as server:
        yield server.base_url, server.received


@contextlib.asynccontextmanager
async def _container(
    primary: str,
    fallbacks: list[dict[str, Any]],
    *,
    use_streaming: bool,
    otel: Otel | None = None,
    **agent: Any,
) -> AsyncIterator[Container]:
    container = Container()
    container.environ.override(providers.Object({"FALLBACK_KEY": FALLBACK_KEY}))
    container.config.from_dict(
        {
            "agent": {
                "base_url": primary,
                "api_key": PRIMARY_KEY,
                "model": "gpt-primary",
                "use_streaming": use_streaming,
                "max_retries": 0,
                "timeout_seconds": 1.0,
                "deadline_seconds": 20.0,
                "telemetry": otel is not None,
                "fallbacks": fallbacks,
                **agent,
            }
        }
    )
    if otel is not None:
        container.tracer_provider.override(providers.Object(otel.tracer_provider))
        container.meter_provider.override(providers.Object(otel.meter_provider))
    try:
        yield container
    finally:
        await container.aclose()
        container.reset_override()


def _fallback(server: LocalServer, **more: Any) -> dict[str, Any]:
    return {"base_url": server.base_url, "model": "gpt-fallback", "api_key_env": "FALLBACK_KEY", **more}


async def _ask(container: Container, *, stream: bool) -> ChatResponse:
    chat = container.chat()
    if stream:
        return ChatResponse.from_updates([update async for update in chat.get_streaming_response(MESSAGES)])
    return await chat.get_response(MESSAGES)


@STREAMING
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", KINDS)
async def test_each_failing_kind_goes_on_to_the_fallback(
    kind: str, stream: bool, use_streaming: bool
) -> None:
    # With retries left, a 429 whose Retry-After would outlast the deadline is not waited for: the
    # primary is asked once and the fallback at once.
    retries = 2 if kind == "429 past the deadline" else 0
    async with (
        serve(_answering) as fallback,
        _primary(kind) as (primary, received),
        _container(
            primary, [_fallback(fallback)], use_streaming=use_streaming, max_retries=retries
        ) as container,
    ):
        answer = await _ask(container, stream=stream)
    assert (answer.text, answer.served_by, answer.model_id) == (ANSWER, "fallback-1", "gpt-fallback")
    assert len(received) == (0 if kind == "refused" else 1)
    # The fallback got its own key and model, and none of the primary's.
    [asked] = fallback.received
    assert _key(asked) == FALLBACK_KEY
    assert json.loads(asked.body)["model"] == "gpt-fallback"
    assert PRIMARY_KEY not in json.dumps(asked.headers)


@STREAMING
async def test_a_stream_that_handed_an_update_is_never_sent_elsewhere(use_streaming: bool) -> None:
    handed = asyncio.Event()
    events = _answer_events(HALF, "gpt-primary")
    first_delta = next(i for i, e in enumerate(events) if e["type"] == "response.output_text.delta")
    first_text = events[first_delta]["delta"]

    async def breaks_after_the_first_text(request: Received, sender: Sender) -> None:
        await sender.start(200, {"content-type": "text/event-stream"})
        await sender.body(sse(events[: first_delta + 1]).encode())
        # The caller has the text: returning mid-body drops the connection.
        async with asyncio.timeout(10):
            await handed.wait()

    async with (
        serve(_answering) as fallback,
        serve(breaks_after_the_first_text) as primary,
        _container(primary.base_url, [_fallback(fallback)], use_streaming=use_streaming) as container,
    ):
        received: list[str] = []

        async def read() -> None:
            async for update in container.chat().get_streaming_response(MESSAGES):
                received.append(update.text)
                handed.set()

        with pytest.raises(ChatTransportError) as raised:
            await read()
    assert first_text
    assert "".join(received) == first_text
    assert raised.value.partial is not None
    assert raised.value.partial.text == first_text
    assert fallback.received == []
    assert failed_targets(raised.value) == ()


@STREAMING
async def test_every_target_failing_gives_the_last_error_with_every_attempt_and_no_key(
    use_streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        serve(_failing("503")) as primary,
        serve(_failing("500")) as first,
        serve(_failing("503")) as second,
    ):
        fallbacks = [
            _fallback(first),
            {"base_url": second.base_url, "model": "gpt-second", "api_key": SECOND_KEY, "name": "second"},
        ]
        with Otel() as otel:
            async with _container(
                primary.base_url, fallbacks, use_streaming=use_streaming, otel=otel
            ) as container:
                with caplog.at_level(logging.DEBUG), pytest.raises(ChatTransportError) as raised:
                    await container.chat().get_response(MESSAGES)
            spans = every_text(otel)
    error = raised.value
    assert error.status_code == 503
    assert [tried.name for tried in failed_targets(error)] == ["primary", "fallback-1", "second"]
    assert [getattr(tried.error, "status_code", None) for tried in failed_targets(error)] == [503, 500, 503]
    for name in ("primary", "fallback-1", "second"):
        assert f"{name}: ChatTransportError: HTTP" in error.message
    # Each gateway echoed the key it was sent: none is in the error, its causes, the logs or the spans.
    assert {_key(r) for r in primary.received} | {_key(r) for r in first.received} | {
        _key(r) for r in second.received
    } == {PRIMARY_KEY, FALLBACK_KEY, SECOND_KEY}
    shown = [str(error), repr(error)]
    link: BaseException | None = error
    while link is not None:
        shown += [str(link), repr(link)]
        link = link.__cause__ or link.__context__
    for tried in failed_targets(error):
        shown += [str(tried.error), repr(tried.error), repr(tried)]
    shown += [record.getMessage() for record in caplog.records]
    shown += [repr(vars(record)) for record in caplog.records]
    shown += list(spans)
    for key in (PRIMARY_KEY, FALLBACK_KEY, SECOND_KEY):
        assert not [text for text in shown if key in text]


@STREAMING
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_span_names_the_target_that_answered(use_streaming: bool, stream: bool) -> None:
    async with serve(_answering) as fallback, serve(_failing("503")) as primary:
        with Otel() as otel:
            async with _container(
                primary.base_url, [_fallback(fallback, name="backup")], use_streaming=use_streaming, otel=otel
            ) as container:
                answer = await _ask(container, stream=stream)
            [span] = otel.named("chat ")
    assert answer.served_by == "backup"
    attributes = dict(span.attributes or {})
    assert attributes["meeting_agents.failover.target"] == "backup"
    assert attributes["meeting_agents.failover.failed_targets"] == 1
    assert attributes["server.port"] == fallback.port
    [event] = [event for event in span.events if event.name == "failover"]
    assert dict(event.attributes or {}) == {
        "meeting_agents.failover.target": "primary",
        "error.type": "ChatTransportError",
    }


async def test_the_deadline_covers_every_target_together() -> None:
    # The primary stalls: its idle timeout (1 s) ends it, then the second stalls until the deadline
    # of the whole request (2.5 s) ends it; the third is never asked.
    async with (
        serve(_failing("stalled")) as primary,
        serve(_failing("stalled")) as first,
        serve(_answering) as third,
    ):
        fallbacks = [
            _fallback(first, timeout_seconds=30.0),
            {"base_url": third.base_url, "model": "m", "api_key": SECOND_KEY},
        ]
        async with _container(
            primary.base_url, fallbacks, use_streaming=True, deadline_seconds=2.5
        ) as container:
            with pytest.raises(ChatError) as raised:
                await container.chat().get_response(MESSAGES)
    assert [tried.name for tried in failed_targets(raised.value)] == ["primary", "fallback-1"]
    assert third.received == []
