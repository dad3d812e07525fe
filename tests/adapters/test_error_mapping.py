"""The one mapping from openai's exceptions to the domain's errors, walked class by class."""

from __future__ import annotations

import inspect
import json
from typing import Any

import httpx
import openai
import openai._exceptions
import pytest
from openai.types.chat import ChatCompletion

from adapters.redaction import Redactor
from adapters.responses.error_mapping import map_error
from adapters.responses.http_front import attempts_of
from domain import ChatError, ChatResponse, ChatTransportError, MalformedResponseError, ResponseFailedError
from tests.support.gateway import API_KEY

REDACTOR = Redactor([API_KEY])

# Every exception class the SDK exposes, with the domain error it must become. A class the SDK adds
# later fails test_every_openai_exception_class_is_mapped until it is placed here.
EXPECTED: dict[str, type[ChatError]] = {
    "OpenAIError": ChatError,
    "APIError": ResponseFailedError,
    "APIStatusError": ChatTransportError,
    "BadRequestError": ChatTransportError,
    "AuthenticationError": ChatTransportError,
    "OAuthError": ChatTransportError,
    "PermissionDeniedError": ChatTransportError,
    "NotFoundError": ChatTransportError,
    "ConflictError": ChatTransportError,
    "UnprocessableEntityError": ChatTransportError,
    "RateLimitError": ChatTransportError,
    "InternalServerError": ChatTransportError,
    "APIConnectionError": ChatTransportError,
    "APITimeoutError": ChatTransportError,
    "APIResponseValidationError": MalformedResponseError,
    "LengthFinishReasonError": ChatError,
    "ContentFilterFinishReasonError": ChatError,
    "SubjectTokenProviderError": ChatError,
    "WebSocketConnectionClosedError": ChatError,
    "WebSocketQueueFullError": ChatError,
    "_AmbiguousModuleClientUsageError": ChatError,
}
STATUS = {
    "BadRequestError": 400,
    "AuthenticationError": 401,
    "OAuthError": 401,
    "PermissionDeniedError": 403,
    "NotFoundError": 404,
    "ConflictError": 409,
    "UnprocessableEntityError": 422,
    "RateLimitError": 429,
    "InternalServerError": 500,
    "APIStatusError": 418,
}


def openai_exception_classes() -> list[type[openai.OpenAIError]]:
    found: set[type[openai.OpenAIError]] = set()
    for module in (openai, openai._exceptions):
        for value in list(vars(module).values()):
            if isinstance(value, type) and issubclass(value, openai.OpenAIError):
                found.add(value)
    return sorted(found, key=lambda cls: cls.__name__)


def instance_of(cls: type[openai.OpenAIError]) -> openai.OpenAIError:
    """A real instance, built through the class's own constructor."""
    request = httpx.Request(
        "POST", "http://gateway.test/v1/responses", headers={"x-stainless-retry-count": "2"}
    )
    response = httpx.Response(
        STATUS.get(cls.__name__, 502), request=request, headers={"x-request-id": "req_err"}
    )
    body = {"code": "the_code", "message": f"provider says {API_KEY}"}
    values: dict[str, Any] = {
        "message": f"boom {API_KEY}",
        "request": request,
        "response": response,
        "body": body,
        "completion": ChatCompletion.construct(usage=None, choices=[]),
        "unsent_messages": [],
    }
    parameters = inspect.signature(cls.__init__).parameters
    positional = [
        values[name]
        for name, p in parameters.items()
        if name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty and name in values
    ]
    keywords = {
        name: values[name]
        for name, p in parameters.items()
        if p.kind is p.KEYWORD_ONLY and name in values and (p.default is p.empty or name == "completion")
    }
    if not positional and not keywords and any(p.kind is p.VAR_POSITIONAL for p in parameters.values()):
        positional = [f"boom {API_KEY}"]
    return cls(*positional, **keywords)


def test_every_openai_exception_class_is_mapped() -> None:
    classes = openai_exception_classes()
    assert {cls.__name__ for cls in classes} == set(EXPECTED)
    partial = ChatResponse(response_id="resp_p", model_id="m_p")

    for cls in classes:
        error = map_error(instance_of(cls), partial=partial, request_id="req_seen", redactor=REDACTOR)
        assert type(error) is EXPECTED[cls.__name__], cls
        assert (error.partial, error.response_id, error.model_id) == (partial, "resp_p", "m_p"), cls
        assert API_KEY not in str(error), cls
        assert API_KEY not in repr(error), cls


def test_status_errors_carry_status_attempts_request_id_and_the_providers_code() -> None:
    error = map_error(instance_of(openai.RateLimitError), redactor=REDACTOR)

    assert isinstance(error, ChatTransportError)
    assert (error.status_code, error.attempts, error.request_id) == (429, 3, "req_err")
    assert "(the_code)" in error.message
    assert "[REDACTED]" in error.message


def test_an_error_object_inside_a_stream_keeps_its_code() -> None:
    error = map_error(instance_of(openai.APIError), request_id="req_seen", redactor=REDACTOR)

    assert isinstance(error, ResponseFailedError)
    assert (error.code, error.request_id) == ("the_code", "req_seen")
    assert error.message == "provider says [REDACTED]"


def test_connection_errors_have_no_status_and_count_attempts() -> None:
    for cls in (openai.APIConnectionError, openai.APITimeoutError):
        error = map_error(instance_of(cls))
        assert isinstance(error, ChatTransportError)
        assert (error.status_code, error.attempts) == (None, 3)


def test_undecodable_json_and_httpx_failures_are_mapped() -> None:
    decode = json.JSONDecodeError("Expecting value", "data: {", 6)
    request = httpx.Request("GET", "http://gateway.test/")

    assert isinstance(map_error(decode), MalformedResponseError)
    assert "character 6" in map_error(decode).message
    assert "timed out" in map_error(httpx.ReadTimeout("slow", request=request)).message
    assert isinstance(map_error(httpx.RemoteProtocolError("eof", request=request)), ChatTransportError)


def test_a_chat_error_passes_through_unchanged() -> None:
    original = MalformedResponseError("already typed")

    assert map_error(original) is original


@pytest.mark.parametrize(("header", "attempts"), [(None, 1), ("0", 1), ("4", 5), ("many", 1)])
def test_attempts_come_from_the_sdks_retry_count_header(header: str | None, attempts: int) -> None:
    headers = {} if header is None else {"x-stainless-retry-count": header}

    assert attempts_of(httpx.Request("POST", "http://gateway.test/", headers=headers)) == attempts
    assert attempts_of(None) == 1
