"""Server-side state and the prompt cache key through both real adapters: what goes on the wire."""

from __future__ import annotations

import json

import httpx
import pytest

from adapters.offline.render import call_item, message_item
from application import LoopSettings, ToolLoop
from domain import ChatOptions, ChatPort
from tests.support.doubles import meeting_time_tools
from tests.support.gateway import QUESTION, Recorder, adapters_for, answer, response_document, served

# What OpenAI answers when a stored response has expired or was deleted.
NOT_FOUND = {
    "error": {
        "message": "Previous response with id 'resp_1' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }
}


def _call(streaming: bool) -> httpx.Response:
    document = response_document([call_item("fc_1", "call_1", "meeting_time", "{}")], response_id="resp_1")
    return served(document, streaming=streaming)


def _answer(streaming: bool, response_id: str = "resp_2") -> httpx.Response:
    return served(
        response_document([message_item("msg_2", "At ten.")], response_id=response_id), streaming=streaming
    )


def _wired(streaming: bool, *after: httpx.Response) -> tuple[Recorder, ChatPort]:
    """A recorder answering the tool call then ``after``, and the adapter (SSE or JSON) reading it."""
    recorder = Recorder([_call(streaming), *after])
    return recorder, adapters_for(recorder)[0 if streaming else 1]


@pytest.mark.parametrize("which", ["sse", "json"])
async def test_server_state_chains_the_requests_with_the_cache_key_on_each(which: str) -> None:
    streaming = which == "sse"
    recorder, adapter = _wired(streaming, _answer(streaming))
    tools, options = meeting_time_tools()
    settings = LoopSettings(conversation_state="server", prompt_cache_retention="24h")
    run = await ToolLoop(adapter, settings).run(QUESTION, options, tools)
    assert run.text == "At ten."
    first, second = recorder.bodies()
    assert "previous_response_id" not in first
    assert first["store"] is True
    assert second["previous_response_id"] == "resp_1"
    assert second["store"] is True
    # Only the tool's result goes: the provider holds the question and its own call.
    assert second["input"] == [{"type": "function_call_output", "call_id": "call_1", "output": "10:00"}]
    assert first["prompt_cache_key"] == second["prompt_cache_key"]
    assert first["prompt_cache_key"].startswith("run_")
    assert first["prompt_cache_retention"] == second["prompt_cache_retention"] == "24h"


@pytest.mark.parametrize("which", ["sse", "json"])
async def test_a_lost_stored_response_is_answered_by_the_whole_history(which: str) -> None:
    streaming = which == "sse"
    recorder, adapter = _wired(streaming, answer(json.dumps(NOT_FOUND), status=400), _answer(streaming))
    tools, options = meeting_time_tools()
    run = await ToolLoop(adapter, LoopSettings(conversation_state="server")).run(QUESTION, options, tools)
    assert run.text == "At ten."
    first, chained, whole = recorder.bodies()
    assert chained["previous_response_id"] == "resp_1"
    assert "previous_response_id" not in whole
    assert [item["type"] for item in whole["input"]] == ["message", "function_call", "function_call_output"]
    assert whole["prompt_cache_key"] == first["prompt_cache_key"]


@pytest.mark.parametrize("which", ["sse", "json"])
async def test_client_state_sends_the_history_and_a_hosts_cache_key(which: str) -> None:
    streaming = which == "sse"
    recorder, adapter = _wired(streaming, _answer(streaming))
    tools, options = meeting_time_tools()
    options = ChatOptions(tools=options.tools, prompt_cache_key="summaries-v1")
    await ToolLoop(adapter).run(QUESTION, options, tools)
    bodies = recorder.bodies()
    assert [body["prompt_cache_key"] for body in bodies] == ["summaries-v1", "summaries-v1"]
    assert all("previous_response_id" not in body and "prompt_cache_retention" not in body for body in bodies)
    assert len(bodies[1]["input"]) == 3
