"""Watching each HTTP attempt the SDK makes, without touching the client the adapters were given.

The SDK retries inside one ``responses.create`` call and exposes nothing per attempt. The adapters
therefore talk through a copy of the given ``AsyncOpenAI`` (``with_options``) whose HTTP client
delegates every request to the original client, so its transport, mounts, auth and event hooks
still apply, and tells the listener of the current request (a context variable, so concurrent
requests never mix) how each attempt ended.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Final, Protocol, cast

import httpx
import openai

__all__ = ["LISTENER", "AttemptListener", "ResponseTooLargeError", "observed"]


class ResponseTooLargeError(Exception):
    """A response body grew past ``limit`` bytes (counted after decompression) while it was read."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body exceeded {limit} bytes")
        self.limit = limit


class AttemptListener(Protocol):
    """Told how each attempt of the current request ended; asked how long the request may still take."""

    def attempt_answered(self, request: httpx.Request, response: httpx.Response) -> None: ...

    def attempt_raised(self, request: httpx.Request, error: Exception) -> None: ...

    def seconds_left(self) -> float | None:
        """Seconds until the request's deadline, or None when it has none."""


LISTENER: Final[ContextVar[AttemptListener | None]] = ContextVar("responses_attempt_listener", default=None)


class _DelegatingTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncClient) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        listener = LISTENER.get()
        try:
            response = await self._inner.send(request, stream=True)
        except Exception as exc:
            if listener is not None:
                listener.attempt_raised(request, exc)
            raise
        if listener is not None:
            listener.attempt_answered(request, response)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=response.stream,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        # The original client belongs to whoever built it (the container); closing it is theirs.
        return None


class _ObservedHttpClient(httpx.AsyncClient):
    """An HTTP client in front of another one; requests are built here and sent through that one."""


def observed(client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
    """A copy of ``client`` whose attempts the current :data:`LISTENER` hears about.

    Returns ``client`` itself when its HTTP client is not a legacy ``httpx.AsyncClient`` (or is
    already observed): attempts are then still counted from the SDK's retry-count header.
    """
    inner: Any = getattr(client, "_client", None)
    if not isinstance(inner, httpx.AsyncClient) or isinstance(inner, _ObservedHttpClient):
        return client
    front = _ObservedHttpClient(
        transport=_DelegatingTransport(inner),
        headers=inner.headers,
        cookies=inner.cookies,
        params=inner.params,
        timeout=inner.timeout,
        # Proxies from the environment are the original client's business, applied when it sends.
        trust_env=False,
    )
    # The SDK is typed for httpx2 clients but accepts legacy httpx ones, as the container's is.
    return client.with_options(http_client=cast(Any, front))
