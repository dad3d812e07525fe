"""Errors an adapter raises when a model cannot be reached or its answer cannot be used.

The tree::

    ChatError                      every failure of a ChatPort; carries what had arrived
    ├── ResponseFailedError        the provider said the response failed (response.failed, error event)
    ├── MalformedResponseError     the body could not be read as a response (truncated stream,
    │                              undecodable event, neither a Response nor an event stream)
    ├── ChatTransportError         HTTP failed: a status error, a timeout, a broken connection,
    │                              after the SDK's own retries
    └── RateLimitedError           the client-side rate limit would hold the request past its
                                   deadline; nothing was sent

Every error carries ``response_id``, ``model_id`` and ``request_id`` when known and ``partial`` (the
response as far as it had arrived); a tool-calling run raises a copy that also carries the run so
far (``application.ToolRunError``). Messages never contain API keys, raw tool arguments or parser
exception text.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypedDict, Unpack

if TYPE_CHECKING:
    from domain.responses import ChatResponse

__all__ = [
    "ChatError",
    "ChatTransportError",
    "ErrorContext",
    "MalformedResponseError",
    "RateLimitedError",
    "ResponseFailedError",
]


class ErrorContext(TypedDict, total=False):
    """What every :class:`ChatError` carries besides its message, each None when unknown.

    A subclass's ``__init__`` takes these as ``**context: Unpack[ErrorContext]`` and hands them on,
    so that the list is written once.
    """

    response_id: str | None
    model_id: str | None
    request_id: str | None
    partial: ChatResponse | None


class ChatError(Exception):
    """Base of every error a ChatPort raises."""

    def __init__(
        self,
        message: str,
        *,
        response_id: str | None = None,
        model_id: str | None = None,
        request_id: str | None = None,
        partial: ChatResponse | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.response_id = response_id
        self.model_id = model_id
        self.request_id = request_id
        self.partial = partial

    def _context(self) -> str:
        known = (
            ("response_id", self.response_id),
            ("model_id", self.model_id),
            ("request_id", self.request_id),
        )
        return ", ".join(f"{name}={value!r}" for name, value in known if value is not None)

    def __repr__(self) -> str:
        context = self._context()
        return f"{type(self).__name__}({self.message!r}{', ' + context if context else ''})"


class ResponseFailedError(ChatError):
    """The provider reported that the response failed; ``code`` and ``message`` are its own."""

    def __init__(self, message: str, *, code: str | None = None, **context: Unpack[ErrorContext]) -> None:
        super().__init__(message, **context)
        self.code = code


class MalformedResponseError(ChatError):
    """The body could not be read as a Responses answer."""


class ChatTransportError(ChatError):
    """The HTTP exchange failed.

    ``status_code`` is the error status the gateway answered with (4xx, 5xx); it is None when the
    failure was not an error status: a timeout, a refused or broken connection, including one broken
    after a 200 had started a body (then ``partial`` holds what had arrived).

    ``attempts`` counts the requests sent, the SDK's retries included.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        attempts: int = 1,
        **context: Unpack[ErrorContext],
    ) -> None:
        super().__init__(message, **context)
        self.status_code = status_code
        self.attempts = attempts


class RateLimitedError(ChatError):
    """The client's own rate limit (``agent.requests_per_minute``, ``agent.tokens_per_minute``) would
    hold the request longer than its deadline allows, or for ever (one request larger than the
    limit): it fails at once and nothing is sent.

    ``wait_seconds`` is how long the request would have waited (``math.inf`` when it can never go),
    ``seconds_left`` what its deadline had left, and ``limit`` which limit held it (``requests`` or
    ``tokens``).
    """

    def __init__(
        self,
        message: str,
        *,
        wait_seconds: float = math.inf,
        seconds_left: float = 0.0,
        limit: str = "requests",
        **context: Unpack[ErrorContext],
    ) -> None:
        super().__init__(message, **context)
        self.wait_seconds = wait_seconds
        self.seconds_left = seconds_left
        self.limit = limit
