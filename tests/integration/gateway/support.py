"""What the gateway tier's tests share besides fixtures: the running gateway's parts and SDK clients for it.

Use :class:`Gateway` to type the ``gateway`` fixture and :func:`sdk_client` for an SDK client with a chosen
retry budget, key or response hook; the fixtures themselves live in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import attrs
import httpx
import openai

from tests.integration.gateway.proxy import MASTER_KEY, LiteLLMProxy
from tests.support.gateway import sdk_over
from tests.support.upstreams import FakeServer

__all__ = ["Gateway", "sdk_client"]


@attrs.frozen
class Gateway:
    """The running proxy and the fakes behind it."""

    proxy: LiteLLMProxy
    upstream: FakeServer
    codex: FakeServer
    tripwire: FakeServer


@contextlib.asynccontextmanager
async def sdk_client(
    base_url: str,
    *,
    api_key: str = MASTER_KEY,
    max_retries: int = 0,
    on_response: Callable[[httpx.Response], Awaitable[None]] | None = None,
) -> AsyncIterator[openai.AsyncOpenAI]:
    """An SDK client for ``base_url`` (the proxy's, or a fake's) on a legacy httpx client, as the container
    builds one; ``on_response`` sees every answer it receives."""
    hooks = {"response": [on_response]} if on_response else {}
    async with httpx.AsyncClient(event_hooks=hooks) as http_client:
        yield sdk_over(http_client, base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=30.0)
