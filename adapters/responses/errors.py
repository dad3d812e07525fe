"""The one mapping from what the SDK raises to the domain's ChatError tree.

::

    openai.APIStatusError (400, 401, 429, 500, ...)   -> ChatTransportError(status_code, attempts)
    openai.APITimeoutError, openai.APIConnectionError -> ChatTransportError(status_code=None)
    openai.APIResponseValidationError                 -> MalformedResponseError
    openai.APIError (an error object inside a stream) -> ResponseFailedError(code)
    json.JSONDecodeError (an undecodable data line)   -> MalformedResponseError
    httpx.TimeoutException, httpx.TransportError      -> ChatTransportError (a body read outside the SDK)
    UnicodeEncodeError (a request the SDK cannot encode) -> ChatError
    any other openai.OpenAIError                      -> ChatError
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final, TypedDict

import httpx
import openai

from domain import ChatError, ChatResponse, ChatTransportError, MalformedResponseError, ResponseFailedError

__all__ = ["RETRY_COUNT_HEADER", "attempts_of", "map_error", "safe_text"]

# The SDK stamps each attempt's request with how many retries preceded it.
RETRY_COUNT_HEADER: Final = "x-stainless-retry-count"
_MAX_PROVIDER_TEXT: Final = 300


def attempts_of(request: httpx.Request | None) -> int:
    """How many requests the SDK had sent when ``request`` went out (1 when unknown)."""
    if request is None:
        return 1
    try:
        return int(request.headers.get(RETRY_COUNT_HEADER, "0")) + 1
    except ValueError:
        return 1


def safe_text(text: object, secret: str | None) -> str:
    """Provider text made safe to carry: the API key cut out, the length bounded."""
    value = str(text)
    if secret:
        value = value.replace(secret, "[REDACTED]")
    if len(value) > _MAX_PROVIDER_TEXT:
        value = value[:_MAX_PROVIDER_TEXT] + "..."
    return value


class _Known(TypedDict):
    response_id: str | None
    model_id: str | None
    partial: ChatResponse | None


def _request_of(exc: openai.APIError) -> httpx.Request | None:
    # The SDK types its exceptions with httpx2; with a legacy httpx client they hold httpx objects.
    request = getattr(exc, "request", None)
    return request if isinstance(request, httpx.Request) else None


def _body_field(body: object, name: str) -> str | None:
    if isinstance(body, Mapping):
        value = body.get(name)
        if value is None and isinstance(body.get("error"), Mapping):
            value = body["error"].get(name)
        return value if isinstance(value, str) else None
    return None


def map_error(
    exc: BaseException,
    *,
    partial: ChatResponse | None = None,
    request_id: str | None = None,
    secret: str | None = None,
) -> ChatError:
    """The domain error for ``exc``, carrying ``partial`` and the ids it names.

    ``secret`` (the API key) is removed from any provider text the error quotes.
    """
    response_id = partial.response_id if partial is not None else None
    model_id = partial.model_id if partial is not None else None
    known = _Known(response_id=response_id, model_id=model_id, partial=partial)
    if isinstance(exc, ChatError):
        return exc
    if isinstance(exc, json.JSONDecodeError):
        return MalformedResponseError(
            f"an event's data was not valid JSON (at character {exc.pos})", request_id=request_id, **known
        )
    if isinstance(exc, openai.APIStatusError):
        code = _body_field(exc.body, "code") or _body_field(exc.body, "type")
        message = _body_field(exc.body, "message") or "no message"
        return ChatTransportError(
            f"HTTP {exc.status_code} from the Responses endpoint"
            f"{f' ({code})' if code else ''}: {safe_text(message, secret)}",
            status_code=exc.status_code,
            attempts=attempts_of(_request_of(exc)),
            request_id=exc.request_id or request_id,
            **known,
        )
    if isinstance(exc, openai.APITimeoutError):
        return ChatTransportError(
            "the request to the Responses endpoint timed out",
            attempts=attempts_of(_request_of(exc)),
            request_id=request_id,
            **known,
        )
    if isinstance(exc, openai.APIConnectionError):
        return ChatTransportError(
            "the connection to the Responses endpoint failed",
            attempts=attempts_of(_request_of(exc)),
            request_id=request_id,
            **known,
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return MalformedResponseError(
            "the response body did not match the Responses schema", request_id=request_id, **known
        )
    if isinstance(exc, openai.APIError):
        # An error object inside an event stream, which the SDK raises itself.
        return ResponseFailedError(
            safe_text(_body_field(exc.body, "message") or exc.message, secret),
            code=_body_field(exc.body, "code"),
            request_id=request_id,
            **known,
        )
    if isinstance(exc, httpx.TimeoutException | httpx.TransportError):
        # Raised by httpx directly while the adapter itself reads a body the SDK handed over unread.
        what = "timed out" if isinstance(exc, httpx.TimeoutException) else "connection failed"
        return ChatTransportError(
            f"the Responses endpoint {what} while sending the body",
            request_id=request_id,
            **known,
        )
    if isinstance(exc, UnicodeEncodeError):
        # Text the model once sent as an unpaired surrogate escape cannot go back as UTF-8.
        return ChatError(
            "the request holds text that cannot be encoded as UTF-8 (an unpaired surrogate)",
            request_id=request_id,
            **known,
        )
    if isinstance(exc, openai.OpenAIError):
        return ChatError(
            f"the OpenAI SDK failed: {type(exc).__name__}: {safe_text(exc, secret)}",
            request_id=request_id,
            **known,
        )
    raise TypeError(f"not an error the Responses adapters map: {type(exc).__name__}") from exc
