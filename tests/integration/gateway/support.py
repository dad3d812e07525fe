"""What the gateway tier's tests share besides fixtures: the running gateway's parts and SDK clients for it.

Use :class:`Gateway` to type the ``gateway`` fixture and :func:`sdk_client` for an SDK client with a chosen
retry budget; the fixtures themselves live in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import attrs
import httpx
import openai

from tests.integration.gateway.proxy import MASTER_KEY, LiteLLMProxy
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
async def sdk_client(gateway: Gateway, *, max_retries: int) -> AsyncIterator[openai.AsyncOpenAI]:
    """An SDK client for the proxy on a legacy httpx client, as the container builds one."""
    http_client = httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))
    client = openai.AsyncOpenAI(
        api_key=MASTER_KEY,
        base_url=gateway.proxy.base_url,
        http_client=http_client,  # type: ignore[arg-type]  # the SDK accepts a legacy httpx client
        max_retries=max_retries,
    )
    try:
        yield client
    finally:
        await client.close()
        await http_client.aclose()
