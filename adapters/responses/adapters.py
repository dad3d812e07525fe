"""The two ChatPorts over the SDK's Responses API: one asks for a stream, one for JSON; both read either."""

from __future__ import annotations

import abc
import json
import logging
import time
from collections.abc import Sequence
from typing import Any, Final, cast

import attrs
import httpx
import openai
from openai.types.responses import Response, ResponseStreamEvent

from adapters.responses.attempts import LISTENER, observed
from adapters.responses.errors import attempts_of, map_error
from adapters.responses.folding import EventFolder
from adapters.responses.mapping import chat_response, provider_failure, raise_if_failed, response_contents
from adapters.responses.payload import RequestDigest, ResponsesPayloadBuilder, ResponsesRequest
from adapters.responses.settings import ResponsesSettings
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatTransportError,
    MalformedResponseError,
    ResponseFailedError,
)

__all__ = ["ResponsesJsonAdapter", "ResponsesSseAdapter"]

_LOGGER: Final = logging.getLogger("adapters.responses")
REQUEST_ID_HEADER: Final = "x-request-id"
_SSE_STARTS: Final = (b"data:", b"event:", b":", b"id:", b"retry:")
# What map_error turns into domain errors; anything else is a bug and propagates as it is.
_MAPPED: Final = (openai.OpenAIError, json.JSONDecodeError, httpx.HTTPError, UnicodeEncodeError, ChatError)


@attrs.define
class _Exchange:
    """What is known about one request so far, for the logs and for the error that may follow.

    It is also the request's attempt listener: each failed attempt is logged as it happens.
    """

    digest: RequestDigest
    logger: logging.Logger
    stream: bool
    folder: EventFolder = attrs.field(factory=EventFolder)
    request_id: str | None = None
    attempts: int = 1
    status_code: int | None = None
    # time.monotonic() at which the request must have its whole answer; None for no deadline.
    deadline: float | None = None

    def seconds_left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def saw(self, response: httpx.Response) -> None:
        self.request_id = response.headers.get(REQUEST_ID_HEADER)
        self.attempts = attempts_of(response.request)
        self.status_code = response.status_code

    def log_extra(self, response_id: str | None = None) -> dict[str, object]:
        return {
            "attempts": self.attempts,
            "status_code": self.status_code,
            "request_id": self.request_id,
            "response_id": response_id,
            "request_digest": self.digest.as_log_extra(),
            "stream": self.stream,
        }

    def attempt_answered(self, request: httpx.Request, response: httpx.Response) -> None:
        # The headers are in even if the body then breaks inside the SDK (a JSON body is read within
        # its retry loop, so the error it raises has no response): keep the latest attempt's id.
        self.request_id = response.headers.get(REQUEST_ID_HEADER, self.request_id)
        if response.is_success:
            return
        self._log_attempt(request, response.status_code, response.headers.get(REQUEST_ID_HEADER), None)

    def attempt_raised(self, request: httpx.Request, error: Exception) -> None:
        self._log_attempt(request, None, None, type(error).__name__)

    def _log_attempt(
        self, request: httpx.Request, status_code: int | None, request_id: str | None, error_type: str | None
    ) -> None:
        attempt = attempts_of(request)
        self.logger.info(
            "Responses attempt %d failed (%s)",
            attempt,
            status_code if status_code is not None else error_type,
            extra={
                "attempt": attempt,
                "status_code": status_code,
                "request_id": request_id,
                "error_type": error_type,
                "request_digest": self.digest.as_log_extra(),
                "stream": self.stream,
            },
        )


def _is_event_stream(content_type: str) -> bool:
    return "text/event-stream" in content_type.lower()


def _is_response_document(data: object) -> bool:
    return isinstance(data, dict) and (
        data.get("object") == "response" or "output" in data or "status" in data
    )


def _from_document(data: dict[str, Any]) -> ChatResponse:
    if not _is_response_document(data):
        error = data.get("error")
        if isinstance(error, dict):
            raise provider_failure(error, "the provider returned an error object")
        raise MalformedResponseError("the JSON body is not a Responses object (no output, status or object)")
    response = Response.construct(**data)
    return raise_if_failed(chat_response(response, response_contents(response)), response)


class _ResponsesAdapter(abc.ABC):
    """What both adapters share: the builder, the error mapping and the diagnostics."""

    _stream: bool

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        settings: ResponsesSettings,
        *,
        logger: logging.Logger | None = None,
    ) -> None:
        # A copy of the client through which each HTTP attempt can be logged; the given one is untouched.
        self._client = observed(client, max_response_bytes=settings.max_response_bytes)
        self._secret = client.api_key if isinstance(client.api_key, str) else None
        self._settings = settings
        self._builder = ResponsesPayloadBuilder(settings)
        self._logger = logger or _LOGGER

    def __repr__(self) -> str:
        # The client holds the API key; a repr names only what is safe to show.
        return f"{type(self).__name__}(model={self._settings.model!r})"

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        """Send the conversation and return the whole answer; raises only ChatError subclasses."""
        request = self._builder.build(messages, options)
        exchange = _Exchange(request.digest, self._logger, self._stream)
        listening = LISTENER.set(exchange)
        try:
            result = await self._exchange(request, exchange)
        except _MAPPED as exc:
            error = map_error(
                exc,
                partial=exchange.folder.partial(),
                request_id=exchange.request_id,
                secret=self._secret,
            )
            self._fill_context(error, exchange)
            self._log_failure(error, exchange)
            if error is exc:
                raise
            if isinstance(exc, openai.APIError) and not isinstance(exc, openai.APIConnectionError):
                # The SDK's exception quotes the provider's body, which may echo credentials.
                raise error from None
            raise error from exc
        finally:
            LISTENER.reset(listening)
        if exchange.attempts > 1:
            self._logger.info(
                "Responses request succeeded after %d attempts",
                exchange.attempts,
                extra=exchange.log_extra(result.response_id),
            )
        return result

    @abc.abstractmethod
    async def _exchange(self, request: ResponsesRequest, exchange: _Exchange) -> ChatResponse:
        """Send ``request`` and fold whatever body comes back, telling ``exchange`` what it saw."""

    def _create_arguments(self, request: ResponsesRequest) -> dict[str, Any]:
        arguments = request.sdk_keywords()
        arguments["extra_headers"] = dict(request.headers)
        extra_body = request.extra_body()
        if extra_body:
            arguments["extra_body"] = extra_body
        return arguments

    async def _fold_body(
        self, body: bytes, content_type: str, http: httpx.Response, exchange: _Exchange
    ) -> ChatResponse:
        """A whole body of either shape: an event stream goes through the folder, JSON the mapping."""
        head = body.lstrip()[:8]
        if _is_event_stream(content_type) or head.startswith(_SSE_STARTS):
            replay = httpx.Response(
                http.status_code, headers=http.headers, content=body, request=http.request
            )
            # The SDK's own stream reader, so that a buffered event stream folds exactly like a live one.
            stream = openai.AsyncStream(
                cast_to=cast(Any, ResponseStreamEvent), response=cast(Any, replay), client=self._client
            )
            feed = exchange.folder.feed
            async for event in stream:
                feed(event)
            return exchange.folder.result()
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise MalformedResponseError(
                "the body is neither a JSON Response nor an event stream", request_id=exchange.request_id
            ) from None
        if not isinstance(data, dict):
            raise MalformedResponseError("the JSON body is not an object", request_id=exchange.request_id)
        return _from_document(data)

    @staticmethod
    def _fill_context(error: ChatError, exchange: _Exchange) -> None:
        if error.request_id is None:
            error.request_id = exchange.request_id
        if error.partial is None:
            error.partial = exchange.folder.partial()
        if error.partial is not None:
            error.response_id = error.response_id or error.partial.response_id
            error.model_id = error.model_id or error.partial.model_id

    def _log_failure(self, error: ChatError, exchange: _Exchange) -> None:
        extra = exchange.log_extra(error.response_id)
        extra["error_type"] = type(error).__name__
        extra["request_id"] = error.request_id
        extra["error_code"] = error.code if isinstance(error, ResponseFailedError) else None
        if isinstance(error, ChatTransportError):
            extra["attempts"] = error.attempts
            extra["status_code"] = error.status_code
        self._logger.warning("Responses request failed: %s", type(error).__name__, extra=extra)


class ResponsesSseAdapter(_ResponsesAdapter):
    """A ChatPort that asks for an event stream (``stream=True``) and folds it as it arrives.

    A JSON Response where a stream was asked for is read as JSON.
    """

    _stream = True

    async def _exchange(self, request: ResponsesRequest, exchange: _Exchange) -> ChatResponse:
        stream = await self._client.responses.create(stream=True, **self._create_arguments(request))
        http = cast(httpx.Response, stream.response)
        exchange.saw(http)
        try:
            content_type = http.headers.get("content-type", "")
            if not _is_event_stream(content_type):
                return await self._fold_body(await http.aread(), content_type, http, exchange)
            folder = exchange.folder
            feed = folder.feed
            async for event in stream:
                feed(event)
            return folder.result()
        finally:
            await stream.close()


class ResponsesJsonAdapter(_ResponsesAdapter):
    """A ChatPort that asks for JSON (``stream=False``).

    An event stream where JSON was asked for (some gateway routes answer that way) goes through
    the same folder as a live stream.
    """

    _stream = False

    async def _exchange(self, request: ResponsesRequest, exchange: _Exchange) -> ChatResponse:
        raw = await self._client.responses.with_raw_response.create(
            stream=False, **self._create_arguments(request)
        )
        http = cast(httpx.Response, raw.http_response)
        exchange.saw(http)
        return await self._fold_body(http.content, http.headers.get("content-type", ""), http, exchange)
