"""The gateway tier's fixtures: one LiteLLM proxy per session, in front of loopback fakes only."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Generator, Iterator

import openai
import pytest

from tests.integration.gateway.proxy import LiteLLMProxy, ProxyStartError
from tests.integration.gateway.support import Gateway, sdk_client
from tests.support.upstreams import (
    CHATGPT_ACCESS_TOKEN,
    FakeServer,
    codex_route,
    tripwire_route,
    upstream_route,
)

LITELLM_MISSING = (
    "litellm is not installed: the gateway tier needs the gateway extra (pip install -e '.[dev,gateway]', "
    "which `make test` does)"
)


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    # find_spec, not import: importing litellm here would load a .env and cost seconds for nothing.
    if importlib.util.find_spec("litellm") is None:
        pytest.skip(LITELLM_MISSING)
    with (
        FakeServer(upstream_route) as upstream,
        FakeServer(codex_route) as codex,
        FakeServer(tripwire_route) as tripwire,
    ):
        proxy = LiteLLMProxy(
            tmp_path_factory.mktemp("litellm"),
            upstream_url=upstream.base_url,
            codex_url=codex.base_url,
            tripwire_url=tripwire.base_url,
            chatgpt_access_token=CHATGPT_ACCESS_TOKEN,
        )
        try:
            proxy.start()
        except ProxyStartError as exc:
            pytest.fail(str(exc), pytrace=False)
        try:
            yield Gateway(proxy, upstream, codex, tripwire)
        finally:
            proxy.stop()
    outbound = [r.path for r in tripwire.requests]
    if outbound:
        pytest.fail(f"the proxy tried to reach the network: {outbound}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the proxy's log to a failing gateway test, so the proxy's side of the story is in the report."""
    report = yield
    if report.failed:
        running = item.funcargs.get("gateway") if isinstance(item, pytest.Function) else None
        if isinstance(running, Gateway):
            report.sections.append(("litellm proxy log (tail)", running.proxy.log_text(tail_chars=8_000)))
    return report


@pytest.fixture
async def proxy_client(gateway: Gateway) -> AsyncIterator[openai.AsyncOpenAI]:
    """An SDK client for the proxy without retries, so every failure shows on the first attempt."""
    async with sdk_client(gateway.proxy.base_url) as client:
        yield client
