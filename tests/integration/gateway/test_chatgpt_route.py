"""The ``chatgpt/`` route: LiteLLM's Codex provider, whose upstream streams whatever was asked."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import openai
import pytest

from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatMessage
from tests.integration.gateway.proxy import CHATGPT_MODEL
from tests.integration.gateway.support import Gateway, sdk_client
from tests.support.local_server import AdapterType
from tests.support.upstreams import CHATGPT_ACCESS_TOKEN, CODEX_TEXT, RecordedRequest

pytestmark = pytest.mark.gateway


class _ContentTypes:
    """An httpx response hook that notes the content type of every answer the SDK receives."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, response: httpx.Response) -> None:
        self.seen.append(response.headers.get("content-type", ""))


@pytest.fixture
def content_types() -> _ContentTypes:
    return _ContentTypes()


@pytest.fixture
async def watched_proxy_client(
    gateway: Gateway, content_types: _ContentTypes
) -> AsyncIterator[openai.AsyncOpenAI]:
    async with sdk_client(gateway.proxy.base_url, on_response=content_types) as client:
        yield client


def _asked(gateway: Gateway, nonce: str) -> list[RecordedRequest]:
    return [r for r in gateway.codex.requests if r.mentions(nonce)]


@pytest.mark.parametrize("adapter_type", [ResponsesSseAdapter, ResponsesJsonAdapter])
async def test_the_chatgpt_route_answers_both_adapters(
    gateway: Gateway,
    watched_proxy_client: openai.AsyncOpenAI,
    content_types: _ContentTypes,
    adapter_type: AdapterType,
) -> None:
    nonce = f"chatgpt-{uuid.uuid4()}"
    adapter = adapter_type(watched_proxy_client, ResponsesSettings(model=CHATGPT_MODEL))

    response = await adapter.get_response([ChatMessage.user(nonce)])

    assert response.text == CODEX_TEXT
    assert response.status == "completed"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 9)
    [upstream] = _asked(gateway, nonce)
    # The provider always asks its upstream for a stream and authenticates with the token file.
    assert upstream.body["stream"] is True
    assert upstream.headers["authorization"] == f"Bearer {CHATGPT_ACCESS_TOKEN}"
    # Measured with 1.108.7: for stream=false the proxy folds the Codex stream into a JSON Response
    # itself, so the gateway hands the JSON adapter JSON; the raw SSE case is covered below.
    expected = "text/event-stream" if adapter_type is ResponsesSseAdapter else "application/json"
    assert content_types.seen[-1].startswith(expected)


async def test_the_json_adapter_folds_the_codex_stream_it_did_not_ask_for(
    gateway: Gateway, content_types: _ContentTypes
) -> None:
    # Straight to the Codex-style endpoint, the way the deployed route answered: SSE for stream=false.
    nonce = f"codex-direct-{uuid.uuid4()}"
    async with sdk_client(
        gateway.codex.base_url, api_key=CHATGPT_ACCESS_TOKEN, on_response=content_types
    ) as client:
        adapter = ResponsesJsonAdapter(client, ResponsesSettings(model="gpt-5.5"))
        response = await adapter.get_response([ChatMessage.user(nonce)])

    assert content_types.seen == ["text/event-stream"]
    [upstream] = _asked(gateway, nonce)
    assert upstream.body["stream"] is False
    assert response.text == CODEX_TEXT
    assert response.response_id == "resp_codex_1"
    assert response.finish_reason == "stop"
