"""Failover through a real LiteLLM proxy: a model the proxy does not serve and an upstream 500 both go on
to the next target, on both adapters."""

from __future__ import annotations

import uuid

import pytest
from dependency_injector import providers

from adapters.container import Container
from adapters.failover import failed_targets, fails_over
from domain import ChatMessage, ChatTransportError
from tests.integration.gateway.proxy import MASTER_KEY
from tests.integration.gateway.support import Gateway
from tests.support.upstreams import TEXT_REPLY

pytestmark = pytest.mark.gateway


@pytest.mark.parametrize("use_streaming", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("primary_model", ["gw-not-served", "gw-500"], ids=["unknown-model", "upstream-500"])
async def test_the_proxy_failing_a_model_goes_on_to_the_fallback(
    gateway: Gateway, primary_model: str, use_streaming: bool
) -> None:
    nonce = f"failover-{uuid.uuid4()}"
    base_url = gateway.proxy.base_url
    container = Container()
    container.environ.override(providers.Object({}))
    container.config.from_dict(
        {
            "agent": {
                "base_url": base_url,
                "api_key": MASTER_KEY,
                "model": primary_model,
                "use_streaming": use_streaming,
                "max_retries": 0,
                "telemetry": False,
                "fallbacks": [{"base_url": base_url, "model": "gw-text", "api_key": MASTER_KEY}],
            }
        }
    )
    try:
        answer = await container.chat().get_response([ChatMessage.user(nonce)])
        # The primary alone: what the proxy said about it is what the failover went on from.
        with pytest.raises(ChatTransportError) as primary_failure:
            await container.chat_adapter().get_response([ChatMessage.user(nonce)])
    finally:
        await container.aclose()
    assert (answer.text, answer.served_by) == (TEXT_REPLY, "fallback-1")
    # LiteLLM 1.108.7: HTTP 400 "/responses: Invalid model name passed in model=...", and the upstream's 500.
    assert primary_failure.value.status_code == (400 if primary_model == "gw-not-served" else 500)
    assert fails_over(primary_failure.value), primary_failure.value.message
    assert failed_targets(primary_failure.value) == ()
