"""A ChatPort decorator: one CLIENT span and the GenAI metrics per request, each HTTP attempt as an event."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

import httpx
from opentelemetry import context, trace
from opentelemetry.util.types import AttributeValue

from adapters.telemetry import conventions as c
from adapters.telemetry.content import input_messages, output_messages, system_instructions
from adapters.telemetry.instruments import Telemetry
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    Usage,
)

__all__ = ["InstrumentedChat", "annotate_request", "instrument_chat", "instrument_http_client"]

# The request being traced in this context, for the HTTP client's event hooks.
_REQUEST_KEY: Final = context.create_key("meeting-assistant-agents.chat-request")
ATTEMPT_EVENT: Final = "http.attempt"
# A stream its caller stopped reading before it ended: not an error, but the span says why it is short.
ABANDONED_EVENT: Final = "stream.abandoned"
# error.type of an attempt the HTTP client got no answer for (it raised) when a later one followed.
NO_RESPONSE: Final = "no_response"


class _ChatRequest:
    """One traced request: its span, its start, its metric attributes and the HTTP attempts seen."""

    __slots__ = (
        "answered",
        "attempts",
        "capture_content",
        "context",
        "metadata",
        "metric_attributes",
        "span",
        "started",
        "streamed",
        "telemetry",
        "traced",
        "updates",
    )

    def __init__(self, telemetry: Telemetry, span: trace.Span, metric_attributes: dict[str, AttributeValue]):
        self.telemetry = telemetry
        self.span = span
        self.metric_attributes = metric_attributes
        self.started = time.perf_counter()
        self.attempts = 0
        self.answered = 0
        self.context = context.set_value(_REQUEST_KEY, self, trace.set_span_in_context(span))
        # Without an SDK the span is the API's invalid one: nothing is gained by making it current.
        self.traced = span.get_span_context().is_valid
        # A streamed answer: the metadata its updates gave so far, and the updates themselves only
        # when content is captured (the answer is then folded from them).
        self.streamed = False
        self.metadata: dict[str, Any] = {}
        self.capture_content = telemetry.capture_content
        self.updates: list[ChatResponseUpdate] = []

    # ------------------------------------------------------------ attempts (from the HTTP client's hooks)
    def attempt_started(self) -> None:
        if self.attempts > self.answered:
            self._attempt_event(self.attempts, {c.ERROR_TYPE: NO_RESPONSE})
        self.attempts += 1

    def attempt_answered(self, status_code: int) -> None:
        self.answered = self.attempts
        self._attempt_event(self.attempts, {c.HTTP_RESPONSE_STATUS_CODE: status_code})

    def _attempt_event(self, attempt: int, outcome: dict[str, AttributeValue]) -> None:
        attributes: dict[str, AttributeValue] = {"attempt": attempt, c.HTTP_REQUEST_RESEND_COUNT: attempt - 1}
        self.span.add_event(ATTEMPT_EVENT, {**attributes, **outcome})

    # ------------------------------------------------------------ a streamed answer
    def received(self, update: ChatResponseUpdate) -> None:
        # Run for every piece of a streamed answer: nothing is made for a piece that brings no metadata.
        if not self.streamed:
            self.streamed = True
            waited = time.perf_counter() - self.started
            self.span.set_attribute(c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, waited)
            self.telemetry.time_to_first_chunk.record(waited, self.metric_attributes)
        metadata = update.metadata
        if metadata:
            self.metadata.update(metadata)
        if self.capture_content:
            self.updates.append(update)

    def stream_ended(self) -> None:
        self.succeeded(self._streamed())

    def stream_abandoned(self) -> None:
        self.span.add_event(ABANDONED_EVENT)
        streamed = self._streamed()
        self._describe(streamed)
        self._finish(streamed.usage)

    def _streamed(self) -> ChatResponse:
        if self.updates:
            return ChatResponse.from_updates(self.updates)
        return ChatResponse(**self.metadata)

    # ------------------------------------------------------------ outcome
    def succeeded(self, response: ChatResponse) -> None:
        self._describe(response)
        if self.telemetry.capture_content and self.span.is_recording():
            messages = self.telemetry.content(output_messages(response))
            self.span.set_attribute(c.GEN_AI_OUTPUT_MESSAGES, messages)
        self._finish(response.usage)

    def failed(self, error: BaseException) -> None:
        error_type = type(error).__name__
        if self.attempts > self.answered:
            self._attempt_event(self.attempts, {c.ERROR_TYPE: error_type})
        usage = self.metadata.get("usage")
        if self.streamed:
            self._describe(self._streamed())
        if isinstance(error, ChatError):
            partial = error.partial
            if partial is not None:
                self._describe(partial)
                usage = partial.usage or usage
            self._set_text(c.GEN_AI_RESPONSE_ID, error.response_id)
            self._set_text(c.GEN_AI_RESPONSE_MODEL, error.model_id, metric=True)
            if isinstance(error, ChatTransportError) and error.status_code is not None:
                self.span.set_attribute(c.HTTP_RESPONSE_STATUS_CODE, error.status_code)
        self.span.set_attribute(c.ERROR_TYPE, error_type)
        self.metric_attributes[c.ERROR_TYPE] = error_type
        # The description stays the type: an error's message may quote what the provider echoed.
        self.span.set_status(trace.StatusCode.ERROR, error_type)
        self._finish(usage)

    def _describe(self, response: ChatResponse) -> None:
        self._set_text(c.GEN_AI_RESPONSE_ID, response.response_id)
        model_id = response.model_id
        if model_id is not None:
            shown = self.telemetry.name(model_id)
            self.span.set_attribute(c.GEN_AI_RESPONSE_MODEL, shown)
            self.metric_attributes[c.GEN_AI_RESPONSE_MODEL] = shown
        if response.finish_reason is not None:
            self.span.set_attribute(c.GEN_AI_RESPONSE_FINISH_REASONS, (response.finish_reason,))

    def _set_text(self, key: str, value: str | None, *, metric: bool = False) -> None:
        if value is None:
            return
        text = self.telemetry.text(value)
        self.span.set_attribute(key, text)
        if metric:
            self.metric_attributes[key] = text

    def _finish(self, usage: Usage | None) -> None:
        telemetry, attributes = self.telemetry, self.metric_attributes
        telemetry.operation_duration.record(time.perf_counter() - self.started, attributes)
        if usage is not None:
            for key, token_type, count in (
                (c.GEN_AI_USAGE_INPUT_TOKENS, c.TOKEN_TYPE_INPUT, usage.input_tokens),
                (c.GEN_AI_USAGE_OUTPUT_TOKENS, c.TOKEN_TYPE_OUTPUT, usage.output_tokens),
            ):
                if count is not None:
                    self.span.set_attribute(key, count)
                    telemetry.token_usage.record(count, {**attributes, c.GEN_AI_TOKEN_TYPE: token_type})
            if usage.cost_usd is not None:
                self.span.set_attribute(c.GEN_AI_USAGE_COST, usage.cost_usd)
                telemetry.cost.add(usage.cost_usd, attributes)
            self.span.set_attributes(c.cache_attributes(usage))
        self.span.end()


class InstrumentedChat:
    """A ``ChatPort`` that traces each request of ``inner`` by the GenAI semantic conventions.

    One CLIENT span ``chat {model}`` per request with the request and response model, response id,
    finish reasons, token usage and server; on failure status ERROR and ``error.type`` (the error's
    class name), and the error propagates unchanged. Each HTTP attempt is an ``http.attempt`` event
    (attempt number and status code) when the HTTP client was passed to :func:`instrument_http_client`.
    Records ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``. ``model`` is the
    request model when the options name none.

    The span of ``get_streaming_response`` starts with the call and ends when the stream ends, fails
    (status ERROR and ``error.type``) or is abandoned by its caller (a ``stream.abandoned`` event),
    whichever comes first. It records the time to the first update
    (``gen_ai.response.time_to_first_chunk``, and the ``gen_ai.client.operation.time_to_first_chunk``
    histogram). The span is current only while the inner stream is being read, so what the caller
    does between updates is not inside it.
    """

    def __init__(self, inner: ChatPort, telemetry: Telemetry, *, model: str) -> None:
        self._inner = inner
        self._telemetry = telemetry
        self._model = model
        # What every request's span and metric points start with, made once: the texts are redacted.
        self._attributes: dict[str, AttributeValue] = {
            c.GEN_AI_OPERATION_NAME: c.OPERATION_CHAT,
            c.GEN_AI_PROVIDER_NAME: c.PROVIDER_OPENAI,
            c.GEN_AI_REQUEST_MODEL: telemetry.name(model),
            **telemetry.server_attributes(),
        }

    def __repr__(self) -> str:
        return f"InstrumentedChat({self._inner!r})"

    @property
    def inner(self) -> ChatPort:
        """The ChatPort whose requests are traced."""
        return self._inner

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        request = self._begin(messages, options)
        token = context.attach(request.context)
        try:
            response = await self._inner.get_response(messages, options)
        except BaseException as exc:
            request.failed(exc)
            raise
        finally:
            context.detach(token)
        request.succeeded(response)
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        request = self._begin(messages, options)
        token = context.attach(request.context)
        try:
            updates = self._inner.get_streaming_response(messages, options)
        except BaseException as exc:
            request.failed(exc)
            raise
        finally:
            context.detach(token)
        # Per piece, what the loop needs is looked up once per request.
        following, received = updates.__anext__, request.received
        traced, attach, detach, current = request.traced, context.attach, context.detach, request.context
        try:
            while True:
                step = attach(current) if traced else None
                try:
                    update = await following()
                except StopAsyncIteration:
                    break
                finally:
                    if step is not None:
                        detach(step)
                received(update)
                yield update
        except GeneratorExit:
            request.stream_abandoned()
            raise
        except BaseException as exc:
            request.failed(exc)
            raise
        else:
            request.stream_ended()
        finally:
            close = getattr(updates, "aclose", None)
            if close is not None:
                # Closing the inner stream releases its connection; its own spans and hooks still see ours.
                token = context.attach(request.context)
                try:
                    await close()
                finally:
                    context.detach(token)

    def _begin(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> _ChatRequest:
        """Start the request's span (not yet current) with what is known before it is sent."""
        telemetry = self._telemetry
        attributes = dict(self._attributes)
        if options is not None and options.model:
            attributes[c.GEN_AI_REQUEST_MODEL] = telemetry.name(options.model)
        model = attributes[c.GEN_AI_REQUEST_MODEL]
        span_attributes = dict(attributes)
        if options is not None:
            if options.max_output_tokens is not None:
                span_attributes[c.GEN_AI_REQUEST_MAX_TOKENS] = options.max_output_tokens
            if options.temperature is not None:
                span_attributes[c.GEN_AI_REQUEST_TEMPERATURE] = options.temperature
        span = telemetry.tracer.start_span(
            f"{c.OPERATION_CHAT} {model}", kind=trace.SpanKind.CLIENT, attributes=span_attributes
        )
        if telemetry.capture_content and span.is_recording():
            span.set_attribute(c.GEN_AI_INPUT_MESSAGES, telemetry.content(input_messages(messages)))
            if options is not None and options.instructions:
                span.set_attribute(
                    c.GEN_AI_SYSTEM_INSTRUCTIONS, telemetry.content(system_instructions(options.instructions))
                )
        return _ChatRequest(telemetry, span, attributes)


def annotate_request(attributes: Mapping[str, AttributeValue], *, event: str | None = None) -> None:
    """Tell the span of the request traced in this context what a decorator inside it did:
    ``attributes`` set on it, or added as the event ``event``. Nothing outside a traced request."""
    traced = context.get_value(_REQUEST_KEY)
    if not isinstance(traced, _ChatRequest):
        return
    if event is None:
        traced.span.set_attributes(attributes)
    else:
        traced.span.add_event(event, attributes)


async def _on_request(request: httpx.Request) -> None:
    traced = context.get_value(_REQUEST_KEY)
    if isinstance(traced, _ChatRequest):
        traced.attempt_started()


async def _on_response(response: httpx.Response) -> None:
    traced = context.get_value(_REQUEST_KEY)
    if isinstance(traced, _ChatRequest):
        traced.attempt_answered(response.status_code)


def instrument_http_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """Add the event hooks that turn each HTTP attempt of a traced request into a span event.

    The hooks act only inside a request an :class:`InstrumentedChat` is tracing, so a client the host
    also uses for other traffic is not affected; adding them twice adds them once.
    """
    hooks = client.event_hooks
    if _on_request not in hooks["request"]:
        client.event_hooks = {
            **hooks,
            "request": [*hooks["request"], _on_request],
            "response": [*hooks["response"], _on_response],
        }
    return client


def instrument_chat(inner: ChatPort, telemetry: Telemetry, *, model: str) -> InstrumentedChat:
    """``inner`` with each of its requests, whole or streamed, traced (an :class:`InstrumentedChat`)."""
    return InstrumentedChat(inner, telemetry, model=model)
