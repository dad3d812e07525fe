"""The one mapping to the domain's errors (``error_mapping``): every exception of openai, httpx, httpx2 and
the standard library, walked class by class, becomes its ChatError, built once, chained through scrubbed
stand-ins, with provider text, ids and what had arrived cut of every secret."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import httpx
import httpx2
import openai
import openai._exceptions
import pytest
from openai.types.chat import ChatCompletion

from adapters.redaction import REDACTED, Redactor
from adapters.responses.error_mapping import (
    MAX_ID,
    DeadlineExceededError,
    LowerLevelError,
    ProviderFailureError,
    UnreadableResponseError,
    map_error,
    scrubbed_cause,
    scrubbed_response,
)
from adapters.responses.http_front import ResponseTooLargeError
from domain import (
    ChatMessage,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
)
from domain.errors import ChatError, ChatTransportError, MalformedResponseError, ResponseFailedError
from tests.support.gateway import API_KEY, REQUEST_ID, assert_shows_no_key

GATEWAY_TOKEN = "gw-token-9f8e7d6c"
REDACTOR = Redactor([API_KEY, GATEWAY_TOKEN])
PARTIAL = ChatResponse(response_id="resp_p", model_id="m_p")
TRANSPORT = ChatTransportError
MALFORMED = MalformedResponseError

# ---------------------------------------------------------------- openai

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


def exception_classes(modules: Iterable[ModuleType], base: type[Exception]) -> list[type[Exception]]:
    """Every subclass of ``base`` the modules expose, in a stable order."""
    found = {
        value
        for module in modules
        for value in list(vars(module).values())
        if isinstance(value, type) and issubclass(value, base)
    }
    return sorted(found, key=lambda cls: (cls.__module__, cls.__name__))


def instance_of(cls: type[Exception]) -> Exception:
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
    classes = exception_classes((openai, openai._exceptions), openai.OpenAIError)
    assert {cls.__name__ for cls in classes} == set(EXPECTED)

    for cls in classes:
        error = map_error(instance_of(cls), partial=PARTIAL, request_id="req_seen", redactor=REDACTOR)
        assert type(error) is EXPECTED[cls.__name__], cls
        assert (error.partial, error.response_id, error.model_id) == (PARTIAL, "resp_p", "m_p"), cls
        assert_shows_no_key(error)


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


# ---------------------------------------------------------------- httpx, httpx2 and the standard library

# Every exception class of httpx (the container's client) and httpx2 (the SDK's own), with the domain
# error it becomes once a successful answer had started. A class the library adds later fails
# test_every_httpx_exception_class_is_mapped until it is placed here.
HTTPX_EXPECTED: dict[str, type[ChatError]] = {
    "HTTPError": MALFORMED,
    "RequestError": MALFORMED,
    "TransportError": TRANSPORT,
    "TimeoutException": TRANSPORT,
    "ConnectTimeout": TRANSPORT,
    "ReadTimeout": TRANSPORT,
    "WriteTimeout": TRANSPORT,
    "PoolTimeout": TRANSPORT,
    "NetworkError": TRANSPORT,
    "ConnectError": TRANSPORT,
    "ReadError": TRANSPORT,
    "WriteError": TRANSPORT,
    "CloseError": TRANSPORT,
    "ProtocolError": TRANSPORT,
    "LocalProtocolError": TRANSPORT,
    "RemoteProtocolError": TRANSPORT,
    "ProxyError": TRANSPORT,
    "UnsupportedProtocol": TRANSPORT,
    "SSEError": TRANSPORT,
    "TooManyRedirects": TRANSPORT,
    "HTTPStatusError": TRANSPORT,
    "DecodingError": MALFORMED,
    "InvalidURL": MALFORMED,
    "CookieConflict": MALFORMED,
    "StreamError": MALFORMED,
    "StreamConsumed": MALFORMED,
    "StreamClosed": MALFORMED,
    "ResponseNotRead": MALFORMED,
    "RequestNotRead": MALFORMED,
}


def httpx_instance(cls: type[Exception]) -> Exception:
    library: Any = httpx if cls.__module__.split(".")[0] == "httpx" else httpx2
    request = library.Request("POST", "http://gateway.test/v1/responses")
    values: dict[str, Any] = {
        "message": f"boom {API_KEY}",
        "request": request,
        "response": library.Response(502, request=request),
    }
    parameters = inspect.signature(cls.__init__).parameters
    positional = [values[name] for name in parameters if name == "message"]
    keywords = {
        name: values[name] for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY and name in values
    }
    return cls(*positional, **keywords)


def test_every_httpx_exception_class_is_mapped() -> None:
    classes = exception_classes((httpx, httpx2), Exception)
    assert {cls.__name__ for cls in classes} == set(HTTPX_EXPECTED)

    for cls in classes:
        exc = httpx_instance(cls)
        after_answer = map_error(exc, partial=PARTIAL, answered=True, redactor=REDACTOR)
        before_answer = map_error(exc, answered=False, redactor=REDACTOR)
        assert type(after_answer) is HTTPX_EXPECTED[cls.__name__], cls
        expected_before = ChatError if HTTPX_EXPECTED[cls.__name__] is MALFORMED else type(after_answer)
        if cls.__name__ == "DecodingError":
            expected_before = MALFORMED
        assert type(before_answer) is expected_before, cls
        assert (after_answer.partial, after_answer.response_id, after_answer.model_id) == (
            PARTIAL,
            "resp_p",
            "m_p",
        )
        cause = scrubbed_cause(exc, REDACTOR)
        assert isinstance(cause, LowerLevelError)
        assert cause.original_type is cls
        for shown in (after_answer, before_answer, cause):
            assert_shows_no_key(shown)


def _unicode_decode_error() -> UnicodeDecodeError:
    try:
        b"data: \xff".decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc
    raise AssertionError("the bytes decoded")


def _recursion_error() -> RecursionError:
    try:
        json.loads("[" * 100_000)
    except RecursionError as exc:
        return exc
    raise AssertionError("the nesting parsed")


STDLIB_CASES: list[tuple[BaseException, type[ChatError], str]] = [
    (_unicode_decode_error(), MALFORMED, "not valid UTF-8"),
    (_recursion_error(), MALFORMED, "nests too deeply"),
    (json.JSONDecodeError(f"Expecting value {API_KEY}", f"data: {API_KEY}", 6), MALFORMED, "character 6"),
    (ResponseTooLargeError(1024), MALFORMED, "agent.max_response_bytes (1024 bytes)"),
    (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), ChatError, "UTF-8"),
    (TypeError(f"odd {API_KEY}"), MALFORMED, "TypeError while folding"),
    (AttributeError("no such field"), MALFORMED, "AttributeError while folding"),
    (OverflowError("timestamp out of range"), MALFORMED, "OverflowError while folding"),
    (ValueError("Exceeds the limit (4300 digits)"), MALFORMED, "ValueError while folding"),
    (KeyError(API_KEY), MALFORMED, "KeyError while folding"),
    (DeadlineExceededError(600.0), TRANSPORT, "no complete answer within agent.deadline_seconds=600 s"),
    (UnreadableResponseError("the JSON body is not an object"), MALFORMED, "the JSON body is not an object"),
    (ProviderFailureError("quota", f"no {API_KEY}", "fallback", None), ResponseFailedError, "no [REDACTED]"),
]


@pytest.mark.parametrize(("exc", "expected", "says"), STDLIB_CASES, ids=lambda value: type(value).__name__)
def test_lower_level_exceptions_become_their_domain_errors(
    exc: BaseException, expected: type[ChatError], says: str
) -> None:
    error = map_error(exc, partial=PARTIAL, request_id=REQUEST_ID, answered=True, redactor=REDACTOR)

    assert type(error) is expected
    assert says in error.message
    assert (error.partial, error.request_id, error.response_id) == (PARTIAL, REQUEST_ID, "resp_p")
    assert_shows_no_key(error)
    cause = scrubbed_cause(exc, REDACTOR)
    if cause is not None:
        assert_shows_no_key(cause)


def test_the_stand_in_chain_follows_the_original_chain_and_keeps_its_traceback() -> None:
    try:
        try:
            raise httpx.ReadError(f"peer said {API_KEY}")
        except httpx.ReadError as inner:
            raise RuntimeError("while folding") from inner
    except RuntimeError as outer:
        cause = scrubbed_cause(outer, REDACTOR)
        traceback = outer.__traceback__

    assert isinstance(cause, LowerLevelError)
    assert cause.original_type is RuntimeError
    assert cause.__traceback__ is traceback
    behind = cause.__cause__
    assert isinstance(behind, LowerLevelError)
    assert behind.original_type is httpx.ReadError
    assert str(behind) == "httpx.ReadError: peer said [REDACTED]"
    assert behind.__cause__ is None


class _MisbehavingDecodeError(json.JSONDecodeError):
    """A decode error whose own attributes raise when read."""

    def __getattribute__(self, name: str) -> Any:
        if name == "pos":
            raise RuntimeError("no position")
        return super().__getattribute__(name)


def test_the_mapping_itself_never_raises() -> None:
    weird = _MisbehavingDecodeError("Expecting value", "data: {", 6)

    error = map_error(weird, partial=PARTIAL, redactor=REDACTOR)

    assert type(error) is ChatError
    assert error.message == "the request failed (_MisbehavingDecodeError)"


def test_ids_an_error_carries_are_bounded() -> None:
    long_ids = ChatResponse(response_id="r" * 100_000, model_id="m" * 100_000)

    error = map_error(TypeError("x"), partial=long_ids, request_id="q" * 100_000, answered=True)

    for value in (error.response_id, error.model_id, error.request_id):
        assert value is not None
        assert MAX_ID <= len(value) <= MAX_ID + 3  # cut, with an ellipsis


def test_a_real_gateways_long_ids_are_kept_whole() -> None:
    # A LiteLLM response id: base64 of the provider, the model and the provider's own id.
    litellm_id = "resp_" + "bGl0ZWxsbTpjdXN0b21fbGxtX3Byb3ZpZGVyOm9wZW5haTttb2RlbF9pZDo" * 8
    arrived = ChatResponse(response_id=litellm_id, model_id="gpt-5.5")

    error = map_error(TypeError("x"), partial=arrived, request_id=litellm_id, answered=True)

    assert error.response_id == error.request_id == litellm_id


# ---------------------------------------------------------------- scrubbing what a provider reported

ECHO = f"key {API_KEY} token {GATEWAY_TOKEN}"


def echoed_partial() -> ChatResponse:
    contents = (
        ReasoningContent(ECHO, item_id=f"rs_{API_KEY}", encrypted_content=ECHO, summary=(ECHO,)),
        TextContent(ECHO),
        FunctionCallContent.parse(call_id=f"call_{API_KEY}", name="f", raw_arguments=json.dumps({"k": ECHO})),
        ProviderItemContent("mystery", json.dumps({"type": "mystery", "echo": ECHO}), item_id=GATEWAY_TOKEN),
    )
    return ChatResponse(
        messages=(ChatMessage("assistant", contents),),
        response_id=f"resp_{API_KEY}",
        model_id=f"model-{GATEWAY_TOKEN}",
        status="failed",
    )


def test_a_failure_the_provider_reported_shows_no_secret_in_any_field() -> None:
    finding = ProviderFailureError(code=ECHO, message=ECHO, fallback="failed", partial=echoed_partial())

    error = map_error(finding, request_id=f"req_{API_KEY}", redactor=REDACTOR)

    assert isinstance(error, ResponseFailedError)
    shown = repr((error, vars(error), error.partial))
    assert API_KEY not in shown
    assert GATEWAY_TOKEN not in shown
    assert error.message == f"key {REDACTED} token {REDACTED}"
    assert (error.code, error.response_id, error.model_id, error.request_id) == (
        f"key {REDACTED} token {REDACTED}",
        f"resp_{REDACTED}",
        f"model-{REDACTED}",
        f"req_{REDACTED}",
    )
    assert error.partial is not None
    reasoning, _, call, item = error.partial.messages[0].contents
    assert isinstance(reasoning, ReasoningContent)
    assert reasoning.encrypted_content is None
    assert isinstance(call, FunctionCallContent)
    assert call.arguments == {"k": f"key {REDACTED} token {REDACTED}"}
    assert isinstance(item, ProviderItemContent)
    assert json.loads(item.raw_json)["echo"] == f"key {REDACTED} token {REDACTED}"


def test_a_partial_without_secrets_is_kept_as_it_arrived() -> None:
    clean = ChatResponse(messages=(ChatMessage.assistant("nothing secret"),), response_id="resp_1")

    assert scrubbed_response(clean, REDACTOR) is clean
    assert scrubbed_response(None, REDACTOR) is None
    assert scrubbed_response(echoed_partial(), Redactor.none()) == echoed_partial()


def test_tool_results_in_what_arrived_are_scrubbed_too() -> None:
    results = (
        FunctionResultContent(f"call_{API_KEY}", {"echo": [ECHO, 3], ECHO: None}),
        FunctionResultContent("call_2", ECHO, is_error=True),
    )
    arrived = ChatResponse(messages=(ChatMessage("tool", results),))

    scrubbed = scrubbed_response(arrived, REDACTOR)

    assert scrubbed is not None
    first, second = scrubbed.messages[0].contents
    hidden = f"key {REDACTED} token {REDACTED}"
    assert first == FunctionResultContent(f"call_{REDACTED}", {"echo": [hidden, 3], hidden: None})
    assert second == FunctionResultContent("call_2", hidden, is_error=True)


@pytest.mark.parametrize("cut", [1, 5, len(API_KEY) // 2, len(API_KEY) - 1])
@pytest.mark.parametrize("code_first", [True, False], ids=["code-then-message", "message-then-code"])
def test_a_key_split_between_a_providers_code_and_message_is_cut_from_both(
    cut: int, code_first: bool
) -> None:
    head, tail = API_KEY[:cut], API_KEY[cut:]
    code, message = (f"bad_{head}", f"{tail} refused") if code_first else (f"{tail}_bad", f"refused {head}")

    error = map_error(ProviderFailureError(code, message, "it failed", None), redactor=REDACTOR)

    assert isinstance(error, ResponseFailedError)
    shown = f"{error.code} {error.message}"
    assert REDACTED in shown
    assert head not in shown or len(head) < 2
    assert tail not in shown or len(tail) < 2


@pytest.mark.parametrize("spelling", [API_KEY.upper(), API_KEY.lower()])
def test_a_key_echoed_in_another_case_is_cut_from_a_status_error(spelling: str) -> None:
    request = httpx2.Request("POST", "http://gateway.test/v1/responses")
    response = httpx2.Response(401, request=request)
    body = {"message": f"Incorrect API key provided: {spelling}", "code": "invalid_api_key"}
    status = openai.AuthenticationError("denied", response=response, body=body)

    error = map_error(status, redactor=REDACTOR)

    assert spelling not in error.message
    assert REDACTED in error.message
