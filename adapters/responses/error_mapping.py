"""The one mapping from whatever breaks during a request to the domain's ChatError tree.

Everything known when a request fails (what had arrived, the request id, the attempts, the
secrets to cut) goes to :func:`map_error`, which builds the final error once; nothing is set on it
afterwards. What the adapters themselves find wrong while reading a body is raised as a finding
(:class:`ProviderFailureError`, :class:`UnreadableResponseError`, :class:`DeadlineExceededError`)
and mapped here too.

::

    ProviderFailureError (response.failed, an error event, an error document) -> ResponseFailedError(code)
    openai.APIError (an error object inside a stream)  -> ResponseFailedError(code)
    openai.APIStatusError (3xx, 4xx, 5xx)               -> ChatTransportError(status_code, attempts)
    openai.APITimeoutError, openai.APIConnectionError   -> ChatTransportError(status_code=None)
      ... caused by an undecodable compressed body      -> MalformedResponseError
    openai.APIResponseValidationError                   -> MalformedResponseError
    DeadlineExceededError (agent.deadline_seconds passed)    -> ChatTransportError(status_code=None)
    ResponseTooLargeError (agent.max_response_bytes)    -> MalformedResponseError
    UnsupportedCodingError (br, zstd, unknown, too deep) -> MalformedResponseError
    UnreadableResponseError, json.JSONDecodeError,
      UnicodeDecodeError, RecursionError                -> MalformedResponseError
    httpx TimeoutException, TransportError, TooManyRedirects -> ChatTransportError
    httpx HTTPStatusError                               -> ChatTransportError(status_code)
    httpx DecodingError                                 -> MalformedResponseError
    UnicodeEncodeError (a request that cannot be encoded) -> ChatError
    any other openai.OpenAIError                        -> ChatError
    any other Exception: after a response was answered  -> MalformedResponseError
                         before                         -> ChatError
    ChatError                                           -> itself

Provider text (codes, messages, ids) goes through the :class:`Redactor` before it reaches an
error, and the lower-level exception is chained only as a scrubbed stand-in
(:func:`scrubbed_cause`): SDK, httpx and json exceptions keep the provider's bytes in their fields.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from typing import Final, TypedDict

import httpx
import openai

from adapters.redaction import Redactor
from adapters.responses.http_front import (
    MAX_CODINGS,
    RETRY_COUNT_HEADER,
    ResponseTooLargeError,
    UnsupportedCodingError,
    attempts_of,
)
from application.scrubbing import scrubbed, strings
from domain import (
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    MalformedResponseError,
    ProviderItemContent,
    ReasoningContent,
    ResponseFailedError,
    TextContent,
)

__all__ = [
    "MAX_ID",
    "RETRY_COUNT_HEADER",
    "CutShortError",
    "DeadlineExceededError",
    "LowerLevelError",
    "ProviderFailureError",
    "UnreadableResponseError",
    "attempts_of",
    "map_error",
    "scrubbed_cause",
    "scrubbed_response",
]

_MAX_PROVIDER_TEXT: Final = 300
_MAX_PROVIDER_CODE: Final = 100
# LiteLLM's ids are base64 strings several hundred characters long, and an id cut short cannot be
# matched with the gateway's logs: the bound only stops a hostile gateway's megabyte "id".
MAX_ID: Final = 4096
# Stand-ins for a lower-level exception's own causes, at most this many deep.
_MAX_CAUSES: Final = 8
_NONE: Final = Redactor.none()


class ProviderFailureError(Exception):
    """The provider reported that the response failed (``response.failed``, an ``error`` event or
    an error document). ``code`` and ``message`` are as it sent them, of any type; the domain error
    built from it keeps them only if they are strings.
    """

    def __init__(self, code: object, message: object, fallback: str, partial: ChatResponse | None) -> None:
        # The provider's text stays out of the exception's own text: only the mapping shows it, scrubbed.
        super().__init__(fallback)
        self.code = code
        self.message = message
        self.fallback = fallback
        self.partial = partial


class UnreadableResponseError(Exception):
    """A body that cannot be read as a Responses answer; ``reason`` is the adapter's own words."""

    def __init__(self, reason: str, partial: ChatResponse | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.partial = partial


class CutShortError(UnreadableResponseError):
    """A body that ended cleanly before its own end (an event stream with no terminal event, a JSON
    document cut off part way): cut off on its way here, so worth asking for again."""


class DeadlineExceededError(Exception):
    """The request had no complete answer within ``seconds`` (``agent.deadline_seconds``)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within agent.deadline_seconds={seconds:g} s")
        self.seconds = seconds


class LowerLevelError(Exception):
    """Stands in, in a ChatError's ``__cause__`` chain, for the exception that caused it.

    It names the original's type (``original_type``) and carries its text with every secret cut
    out, and the original's traceback; the original itself is not chained because SDK, httpx and
    json exceptions keep the provider's bytes in their fields (``body``, ``doc``, ``object``).
    """

    def __init__(self, original: BaseException, redactor: Redactor) -> None:
        kind = type(original)
        text = redactor.redact(original, limit=_MAX_PROVIDER_TEXT)
        super().__init__(f"{kind.__module__}.{kind.__qualname__}: {text}" if text else kind.__qualname__)
        self.original_type = kind


class _Known(TypedDict):
    response_id: str | None
    model_id: str | None
    request_id: str | None
    partial: ChatResponse | None


def _attribute(obj: object, name: str) -> object:
    """``obj.name``, or None: httpx exceptions raise RuntimeError for a request or response never set."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _request_of(exc: BaseException) -> httpx.Request | None:
    # The SDK types its exceptions with httpx2; with a legacy httpx client they hold httpx objects.
    request = _attribute(exc, "request")
    return request if isinstance(request, httpx.Request) else None


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions behind it (explicit causes first), each once."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not other for other in seen) and len(seen) < 32:
        seen.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return seen


def _httpx_kinds(exc: BaseException) -> frozenset[str]:
    """The httpx (or httpx2) exception classes ``exc`` is an instance of, by name."""
    return frozenset(
        cls.__name__ for cls in type(exc).__mro__ if cls.__module__.split(".")[0] in ("httpx", "httpx2")
    )


def _found(exc: BaseException, test: Callable[[BaseException], bool]) -> BaseException | None:
    return next((link for link in _chain(exc) if test(link)), None)


def _body_field(body: object, name: str) -> object:
    # The SDK hands over the error object itself (a body's "error" member when it has one).
    return body.get(name) if isinstance(body, Mapping) else None


def _shown(value: object, redactor: Redactor, limit: int) -> str | None:
    """Provider text fit to show: a non-empty string, scrubbed and bounded; anything else is None."""
    if not isinstance(value, str) or not value:
        return None
    return redactor.redact(value, limit=limit)


def _code_and_message(code: object, message: object, redactor: Redactor) -> tuple[str | None, str | None]:
    """A provider's code and message fit to show: each scrubbed and bounded, and a secret split
    between them (its start ending one, its rest opening the other, in either order) cut from both."""
    texts = [value if isinstance(value, str) else "" for value in (code, message)]
    if redactor:
        texts = redactor.redact_parts(texts)
        texts = redactor.redact_parts(texts[::-1])[::-1]
    return _shown(texts[0], redactor, _MAX_PROVIDER_CODE), _shown(texts[1], redactor, _MAX_PROVIDER_TEXT)


def _scrubbed_content(content: Content, redactor: Redactor) -> Content:
    if isinstance(content, TextContent):
        return TextContent(redactor.redact(content.text))
    if isinstance(content, ReasoningContent):
        return ReasoningContent(
            redactor.redact(content.text),
            item_id=_shown(content.item_id, redactor, MAX_ID),
            encrypted_content=content.encrypted_content
            if content.encrypted_content is None or not redactor.contains_secret(content.encrypted_content)
            else None,
            summary=tuple(redactor.redact(part) for part in content.summary),
        )
    if isinstance(content, FunctionCallContent):
        return FunctionCallContent.parse(
            call_id=redactor.redact(content.call_id),
            name=redactor.redact(content.name),
            raw_arguments=redactor.redact(content.raw_arguments),
            item_id=_shown(content.item_id, redactor, MAX_ID),
        )
    if isinstance(content, ProviderItemContent):
        return ProviderItemContent(
            redactor.redact(content.type),
            redactor.redact(content.raw_json),
            _shown(content.item_id, redactor, MAX_ID),
        )
    return FunctionResultContent(
        redactor.redact(content.call_id), scrubbed(content.result, redactor.redact), content.is_error
    )


def _holds_secret(response: ChatResponse, redactor: Redactor) -> bool:
    # Every string of every content, the parsed arguments' included, searched as one text: the ids and
    # text are what a gateway can echo into. The walk keeps its own stack, so any depth is searched.
    return redactor.contains_secret("\0".join(strings(response)))


def scrubbed_response(response: ChatResponse | None, redactor: Redactor) -> ChatResponse | None:
    """``response`` itself, or, when a secret was echoed into it, a copy with every secret cut out."""
    if response is None or not redactor or not _holds_secret(response, redactor):
        return response
    return ChatResponse(
        messages=tuple(
            ChatMessage(message.role, tuple(_scrubbed_content(c, redactor) for c in message.contents))
            for message in response.messages
        ),
        response_id=_shown(response.response_id, redactor, MAX_ID),
        model_id=_shown(response.model_id, redactor, MAX_ID),
        created_at=response.created_at,
        status=_shown(response.status, redactor, MAX_ID),
        finish_reason=response.finish_reason,
        usage=response.usage,
    )


def scrubbed_cause(exc: BaseException, redactor: Redactor = _NONE) -> BaseException | None:
    """What a ChatError mapped from ``exc`` is chained to: nothing when the error already says all
    the provider said (a status error, a failure it reported), else a :class:`LowerLevelError`
    chain standing in for ``exc`` and its causes.
    """
    if isinstance(exc, ChatError | ProviderFailureError | UnreadableResponseError | DeadlineExceededError):
        return None
    if isinstance(exc, openai.APIStatusError) or type(exc) is openai.APIError:
        return None
    links = _chain(exc)[:_MAX_CAUSES]
    stand_ins = [LowerLevelError(link, redactor).with_traceback(link.__traceback__) for link in links]
    for stand_in, behind in itertools.pairwise(stand_ins):
        stand_in.__cause__ = behind
    return stand_ins[0]


def _status_message(exc: openai.APIStatusError, redactor: Redactor) -> str:
    body = exc.body
    raw_code = _body_field(body, "code")
    code, message = _code_and_message(
        raw_code if isinstance(raw_code, str) and raw_code else _body_field(body, "type"),
        _body_field(body, "message"),
        redactor,
    )
    if message is None and isinstance(body, str) and body.strip():
        # Not JSON: a proxy's own page or plain text, which still says more than the status alone.
        message = redactor.redact(" ".join(body.split()), limit=_MAX_PROVIDER_TEXT)
    return (
        f"HTTP {exc.status_code} from the Responses endpoint"
        f"{f' ({code})' if code else ''}: {message or 'no message'}"
    )


def map_error(
    exc: BaseException,
    *,
    partial: ChatResponse | None = None,
    request_id: str | None = None,
    attempts: int | None = None,
    answered: bool = False,
    status_code: int | None = None,
    redactor: Redactor = _NONE,
) -> ChatError:
    """The domain error for ``exc``, built once with everything known when the request failed.

    ``partial`` is what had arrived (a finding's own partial takes precedence), ``request_id`` the
    gateway's id for the request, ``attempts`` how many HTTP requests were sent (when ``exc``
    cannot tell), ``answered`` whether a successful response had started, ``status_code`` the
    status the last attempt was answered with (None when it raised), and ``redactor`` cuts
    the secrets out of every provider text and id the error carries. Never raises.
    """
    try:
        return _mapped(exc, partial, request_id, attempts, answered, status_code, redactor)
    except Exception:
        # The firewall must hold even if an exception's own attributes misbehave while mapped.
        return ChatError(f"the request failed ({type(exc).__name__})")


def _mapped(
    exc: BaseException,
    partial: ChatResponse | None,
    request_id: str | None,
    attempts: int | None,
    answered: bool,
    status_code: int | None,
    redactor: Redactor,
) -> ChatError:
    if isinstance(exc, ChatError):
        return exc
    found = _attribute(exc, "partial")
    arrived = scrubbed_response(found if isinstance(found, ChatResponse) else partial, redactor)
    known_request_id = _shown(request_id, redactor, MAX_ID)
    context = _Known(
        response_id=_shown(arrived.response_id, redactor, MAX_ID) if arrived is not None else None,
        model_id=_shown(arrived.model_id, redactor, MAX_ID) if arrived is not None else None,
        request_id=known_request_id,
        partial=arrived,
    )
    # The exchange counts across SDK calls (a body broken in transit is asked for again); the
    # exception's own request counts within its call only.
    sent = max(attempts or 0, attempts_of(_request_of(exc)))

    if isinstance(exc, ProviderFailureError):
        code, message = _code_and_message(exc.code, exc.message, redactor)
        return ResponseFailedError(message or exc.fallback, code=code, **context)
    if isinstance(exc, UnreadableResponseError):
        return MalformedResponseError(exc.reason, **context)
    if isinstance(exc, DeadlineExceededError):
        return ChatTransportError(str(exc), attempts=sent, **context)
    too_large = _found(exc, lambda link: isinstance(link, ResponseTooLargeError))
    if isinstance(too_large, ResponseTooLargeError):
        return MalformedResponseError(
            f"the response body exceeded agent.max_response_bytes ({too_large.limit} bytes)", **context
        )
    unsupported = _found(exc, lambda link: isinstance(link, UnsupportedCodingError))
    if isinstance(unsupported, UnsupportedCodingError):
        coding = _shown(unsupported.coding, redactor, _MAX_PROVIDER_CODE)
        return MalformedResponseError(
            f"the response body's Content-Encoding {coding!r} is not one this client decodes "
            f"(gzip and deflate, at most {MAX_CODINGS} stacked)",
            **context,
        )
    if isinstance(exc, openai.APIStatusError):
        context["request_id"] = _shown(exc.request_id, redactor, MAX_ID) or known_request_id
        return ChatTransportError(
            _status_message(exc, redactor),
            status_code=exc.status_code,
            attempts=sent,
            **context,
        )
    if _found(exc, lambda link: "DecodingError" in _httpx_kinds(link)) is not None:
        return MalformedResponseError(
            "the response body could not be decoded (its Content-Encoding does not match its bytes)",
            **context,
        )
    if isinstance(exc, openai.APITimeoutError):
        return ChatTransportError(
            "the request to the Responses endpoint timed out",
            attempts=sent,
            **context,
        )
    if isinstance(exc, openai.APIConnectionError):
        return ChatTransportError(
            "the connection to the Responses endpoint failed",
            attempts=sent,
            **context,
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return MalformedResponseError("the response body did not match the Responses schema", **context)
    if isinstance(exc, openai.APIError):
        # An error object inside an event stream, which the SDK raises itself.
        code, message = _code_and_message(
            _body_field(exc.body, "code"), _body_field(exc.body, "message"), redactor
        )
        return ResponseFailedError(
            message
            or _shown(exc.message, redactor, _MAX_PROVIDER_TEXT)
            or "the provider sent an error object",
            code=code,
            **context,
        )
    if status_code is not None and status_code >= 300 and not answered:
        # The SDK broke while reading an error status's body (a charset it is not in, say): the
        # status is still what the gateway answered.
        return ChatTransportError(
            f"HTTP {status_code} from the Responses endpoint: its body could not be read "
            f"({type(exc).__name__})",
            status_code=status_code,
            attempts=sent,
            **context,
        )
    if isinstance(exc, json.JSONDecodeError):
        return MalformedResponseError(
            f"an event's data was not valid JSON (at character {exc.pos})", **context
        )
    if isinstance(exc, UnicodeDecodeError):
        return MalformedResponseError(
            f"the response body is not valid UTF-8 (at byte {exc.start} of a line)", **context
        )
    if isinstance(exc, RecursionError):
        return MalformedResponseError("the response body nests too deeply to be read", **context)
    kinds = _httpx_kinds(exc)
    if "HTTPStatusError" in kinds:
        status = _attribute(_attribute(exc, "response"), "status_code")
        return ChatTransportError(
            f"HTTP {status} from the Responses endpoint",
            status_code=status if isinstance(status, int) else None,
            attempts=sent,
            **context,
        )
    if kinds & {"TimeoutException", "TransportError", "TooManyRedirects"}:
        # Raised by httpx directly while the adapter itself reads a body the SDK handed over unread.
        what = "timed out" if "TimeoutException" in kinds else "connection failed"
        return ChatTransportError(
            f"the Responses endpoint {what} while sending the body", attempts=sent, **context
        )
    if isinstance(exc, UnicodeEncodeError):
        # Only reachable with a custom SDK client: the payload builder keeps every string encodable.
        return ChatError("the request holds text that cannot be encoded as UTF-8", **context)
    if isinstance(exc, openai.OpenAIError):
        return ChatError(
            f"the OpenAI SDK failed: {type(exc).__name__}: {redactor.redact(exc, limit=_MAX_PROVIDER_TEXT)}",
            **context,
        )
    if answered:
        return MalformedResponseError(
            f"the response could not be read ({type(exc).__name__} while folding it)", **context
        )
    return ChatError(f"the request could not be sent ({type(exc).__name__})", **context)
