"""Every recorded OpenAI body folds through both adapters, served with its recorded content type, and streams
to the same answer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from adapters.responses import ResponsesJsonAdapter, ResponsesSseAdapter
from domain import (
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    FunctionCallContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
)
from tests.support.gateway import REQUEST_ID, Recorder, adapters_for, answer, assert_streams_what_it_answers

_REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("MEETING_AGENTS_CORPUS", _REPO.parent / "shared" / "corpus" / "openai-recorded"))


def _manifest() -> list[dict[str, Any]]:
    path = CORPUS / "manifest.json"
    if not path.is_file():
        return []
    entries: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return entries


ENTRIES = _manifest()


def _item_type(content: object) -> str:
    if isinstance(content, TextContent):
        return "message"
    if isinstance(content, ReasoningContent):
        return "reasoning"
    if isinstance(content, FunctionCallContent):
        return "function_call"
    assert isinstance(content, ProviderItemContent)
    return content.type


def observed(response: ChatResponse) -> dict[str, Any]:
    """The response in the manifest's terms."""
    contents = [content for message in response.messages for content in message.contents]
    usage = response.usage
    return {
        "kind": "response",
        "response_id": response.response_id,
        "model_id": response.model_id,
        "status": response.status,
        "texts": [c.text for c in contents if isinstance(c, TextContent)],
        "function_calls": [[c.call_id, c.name, c.raw_arguments] for c in response.function_calls],
        "usage": None if usage is None else [usage.input_tokens, usage.output_tokens, usage.total_tokens],
        "item_types": sorted({_item_type(c) for c in contents}),
    }


ABSENT = pytest.mark.skipif(
    not ENTRIES, reason=f"the recorded corpus is absent (looked in {CORPUS}; set MEETING_AGENTS_CORPUS)"
)
EACH_ENTRY = pytest.mark.parametrize("entry", ENTRIES, ids=[entry["file"] for entry in ENTRIES])


def _served(entry: dict[str, Any]) -> Recorder:
    body = (CORPUS / entry["file"]).read_bytes()
    return Recorder([answer(body, entry["content_type"], entry["status"])])


@ABSENT
@pytest.mark.parametrize("adapter_type", [ResponsesSseAdapter, ResponsesJsonAdapter])
@EACH_ENTRY
async def test_recorded_body_folds_to_its_expectation(
    entry: dict[str, Any], adapter_type: type[ResponsesSseAdapter | ResponsesJsonAdapter]
) -> None:
    sse_adapter, json_adapter = adapters_for(_served(entry))
    adapter = sse_adapter if adapter_type is ResponsesSseAdapter else json_adapter
    expect = entry["expect"]

    if expect["kind"] == "http_error":
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response([ChatMessage.user("hi")])
        assert caught.value.status_code == expect["status"]
        assert caught.value.request_id == REQUEST_ID
        return

    response = await adapter.get_response([ChatMessage.user("hi")])

    assert observed(response) == expect


@ABSENT
@EACH_ENTRY
async def test_every_recorded_body_streams_to_what_get_response_returns(entry: dict[str, Any]) -> None:
    for adapter in adapters_for(_served(entry)):
        await assert_streams_what_it_answers(adapter)
