"""Typed answers, server-side state and the prompt cache key through a real LiteLLM proxy: what it passes
through to each kind of upstream, what it drops or refuses, and how the loop copes with each."""

from __future__ import annotations

import json
import uuid

import attrs
import openai
import pytest

from adapters.responses import ResponsesSettings
from application import LoopSettings, ToolLoop, output_schema
from domain import ChatMessage, ChatOptions
from tests.integration.gateway.proxy import CHATGPT_MODEL
from tests.integration.gateway.support import Gateway
from tests.support.doubles import RecordingTools
from tests.support.local_server import ADAPTERS, AdapterType
from tests.support.upstreams import CACHED_TOKENS, CODEX_TEXT, TEXT_REPLY, RecordedRequest

pytestmark = pytest.mark.gateway


@attrs.frozen
class Verdict:
    decision: str
    votes: int


VERDICT = Verdict("ship", 3)


def _upstream(gateway: Gateway, nonce: str) -> list[RecordedRequest]:
    return [r for r in gateway.upstream.requests if r.mentions(nonce)]


def _codex(gateway: Gateway, nonce: str) -> list[RecordedRequest]:
    return [r for r in gateway.codex.requests if r.mentions(nonce)]


# ---------------------------------------------------------------- text.format


@ADAPTERS
async def test_a_chat_route_takes_text_format_as_the_upstreams_response_format(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    nonce = f"format-{uuid.uuid4()}"
    loop = ToolLoop(adapter_type(proxy_client, ResponsesSettings(model="gw-text")))
    run = await loop.run([ChatMessage.user(nonce)], None, RecordingTools(), output_type=Verdict)
    assert run.output == VERDICT
    assert run.output_mode == "json_schema"
    [upstream] = _upstream(gateway, nonce)
    assert upstream.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": output_schema(Verdict), "strict": True},
    }


@ADAPTERS
async def test_the_chatgpt_route_drops_text_format_so_the_retry_asks_in_prompted_mode(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    nonce = f"format-chatgpt-{uuid.uuid4()}"
    loop = ToolLoop(adapter_type(proxy_client, ResponsesSettings(model=CHATGPT_MODEL)))
    run = await loop.run([ChatMessage.user(nonce)], None, RecordingTools(), output_type=Verdict)
    assert run.output == VERDICT
    assert run.output_mode == "prompted"
    assert run.responses[0].text == CODEX_TEXT
    first, retried = _codex(gateway, nonce)
    # LiteLLM's chatgpt/ provider sends no text.format upstream, and says nothing of it.
    assert "text" not in first.body
    assert json.dumps(output_schema(Verdict), separators=(",", ":")) in str(retried.body["instructions"])


# ---------------------------------------------------------------- previous_response_id


@ADAPTERS
async def test_a_chat_route_accepts_any_previous_response_id_and_forgets_the_conversation(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    # Without its database the proxy keeps no responses: it answers 200 to an id it never gave, and the
    # upstream hears only the new items. Server state cannot see that from the client; docs/server-state.md
    # says to keep client state on such a route.
    adapter = adapter_type(proxy_client, ResponsesSettings(model="gw-text"))
    first_nonce, second_nonce = f"chain-1-{uuid.uuid4()}", f"chain-2-{uuid.uuid4()}"
    first = await adapter.get_response([ChatMessage.user(first_nonce)], ChatOptions(store=True))
    for previous in (first.response_id, "resp_never_given"):
        chained = ChatOptions(store=True, previous_response_id=previous)
        answer = await adapter.get_response([ChatMessage.user(second_nonce)], chained)
        assert answer.text == TEXT_REPLY
    for upstream in _upstream(gateway, second_nonce):
        assert upstream.body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": second_nonce}]}
        ]
        assert "previous_response_id" not in upstream.body


@ADAPTERS
async def test_the_chatgpt_route_passes_previous_response_id_on_and_the_loop_resends_once_when_refused(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    nonce = f"chain-chatgpt-{uuid.uuid4()}"
    settings = LoopSettings(conversation_state="server")
    loop = ToolLoop(adapter_type(proxy_client, ResponsesSettings(model=CHATGPT_MODEL)), settings)
    # The first answer is prose (the route drops text.format), so the run asks again: chained, refused by
    # the upstream (the route forces store: false), then resent whole, which is answered.
    start = len(gateway.codex.requests)
    run = await loop.run([ChatMessage.user(nonce)], None, RecordingTools(), output_type=Verdict)
    assert run.output == VERDICT
    # The chained request holds only the new turn, so it is found by order, not by the nonce.
    first, chained, whole = gateway.codex.requests[start:]
    assert first.mentions(nonce)
    assert not chained.mentions(nonce)
    assert whole.mentions(nonce)
    assert first.body["store"] is False  # LiteLLM's chatgpt/ provider overrides store: true
    # The proxy hands out ids of its own (the deployment encoded in them) and maps one back to the upstream's.
    assert run.responses[0].response_id != "resp_codex_1"
    assert chained.body["previous_response_id"] == "resp_codex_1"
    assert "previous_response_id" not in whole.body
    assert len(whole.body["input"]) > len(chained.body["input"])


# ---------------------------------------------------------------- prompt_cache_key


@ADAPTERS
async def test_a_chat_route_passes_the_cache_key_on_and_reports_the_cached_share(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    nonce = f"cache-{uuid.uuid4()}"
    loop = ToolLoop(
        adapter_type(proxy_client, ResponsesSettings(model="gw-text")),
        LoopSettings(prompt_cache_retention="24h"),
    )
    run = await loop.run([ChatMessage.user(nonce)], None, RecordingTools())
    [upstream] = _upstream(gateway, nonce)
    assert upstream.body["prompt_cache_key"].startswith("run_")
    # The retention has no chat-completions form: the bridge leaves it out.
    assert "prompt_cache_retention" not in upstream.body
    assert run.usage is not None
    assert run.usage.cached_input_tokens == CACHED_TOKENS
    assert run.usage.cached_share == CACHED_TOKENS / 11


@ADAPTERS
async def test_the_chatgpt_route_drops_the_cache_key(
    gateway: Gateway, proxy_client: openai.AsyncOpenAI, adapter_type: AdapterType
) -> None:
    nonce = f"cache-chatgpt-{uuid.uuid4()}"
    adapter = adapter_type(proxy_client, ResponsesSettings(model=CHATGPT_MODEL))
    options = ChatOptions(prompt_cache_key="summaries-v1", prompt_cache_retention="24h")
    await adapter.get_response([ChatMessage.user(nonce)], options)
    [upstream] = _codex(gateway, nonce)
    assert "prompt_cache_key" not in upstream.body
    assert "prompt_cache_retention" not in upstream.body
