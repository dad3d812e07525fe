"""What the model sent goes back to it exactly: every recorded body folds through both adapters and each of
its output items returns, as JSON, in the next request's input; generated items do too, streamed or whole."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.offline.render import message_item
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatMessage, ChatOptions, ChatResponse, FunctionResultContent
from tests.conformance.test_corpus import ABSENT, CORPUS, ENTRIES
from tests.strategies import json_values
from tests.support.gateway import (
    JSON,
    QUESTION,
    Recorder,
    adapters_for,
    answer,
    every_way,
    response_document,
    served,
)

# The recorded bodies that hold an answer (the others are HTTP errors).
ANSWERS = [entry for entry in ENTRIES if entry["expect"]["kind"] == "response"]


def recorded_output(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The output items a recorded body holds, read straight from the file: a JSON body's ``output``; a
    stream's items in ``output_index`` order, each finished item as its ``output_item.done`` gave it and
    each item only the terminal ``output`` holds (announced, never finished in the stream) at its place
    there, which is its ``output_index`` (after the streamed item of that index, when one has it: a
    gateway that renames an item between the stream and the terminal output gives both)."""
    text = (CORPUS / entry["file"]).read_text(encoding="utf-8")
    if entry["content_type"].startswith("application/json"):
        output: list[dict[str, Any]] = json.loads(text)["output"]
        return output
    done: dict[int, dict[str, Any]] = {}
    terminal: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        event = json.loads(line[5:])
        if event.get("type") == "response.output_item.done":
            done[event["output_index"]] = event["item"]
        elif event.get("type") in ("response.completed", "response.incomplete"):
            terminal = event["response"].get("output") or []
    seen = {item.get("id") for item in done.values()}
    placed = [(index, 0, item) for index, item in done.items()]
    placed += [(index, 1, item) for index, item in enumerate(terminal) if item.get("id") not in seen]
    return [item for _, _, item in sorted(placed, key=lambda place: place[:2])]


def goes_back(item: dict[str, Any], store: bool) -> bool:
    """Whether an output item goes back at all (architecture.md, "History fidelity"): a reasoning item
    without encrypted content is only state kept on the provider's side, sent by id when responses
    are stored and left out when they are not."""
    if item["type"] != "reasoning" or item.get("encrypted_content") is not None:
        return True
    return store and "id" in item


async def follow_up_input(response: ChatResponse, settings: ResponsesSettings) -> list[list[dict[str, Any]]]:
    """The ``input`` of the next request after ``response``, from each adapter: what follows the question."""
    history: list[ChatMessage] = [*QUESTION, *response.messages]
    calls = response.function_calls
    if calls:
        history.append(ChatMessage("tool", tuple(FunctionResultContent(c.call_id, "ok") for c in calls)))
    recorder = Recorder([answer(json.dumps(response_document([])), JSON)])
    for adapter in adapters_for(recorder, settings):
        await adapter.get_response(history, ChatOptions(initiator="agent"))
    sent = [body["input"][len(QUESTION) :] for body in recorder.bodies()]
    # The tool results this test added are not output items.
    return [[item for item in items if item["type"] != "function_call_output"] for items in sent]


@ABSENT
@pytest.mark.parametrize("store", [False, True], ids=["not-stored", "stored"])
@pytest.mark.parametrize("adapter_type", [ResponsesSseAdapter, ResponsesJsonAdapter])
@pytest.mark.parametrize("entry", ANSWERS, ids=[entry["file"] for entry in ANSWERS])
async def test_every_recorded_output_item_goes_back_as_the_provider_sent_it(
    entry: dict[str, Any], adapter_type: type[ResponsesSseAdapter | ResponsesJsonAdapter], store: bool
) -> None:
    body = (CORPUS / entry["file"]).read_bytes()
    settings = ResponsesSettings(model="gpt-test", store=store)
    sse_adapter, json_adapter = adapters_for(Recorder([answer(body, entry["content_type"], entry["status"])]))
    adapter = sse_adapter if adapter_type is ResponsesSseAdapter else json_adapter
    response = await adapter.get_response(QUESTION)

    expected = [item for item in recorded_output(entry) if goes_back(item, store)]
    for sent in await follow_up_input(response, settings):
        assert sent == expected


def test_the_corpus_holds_what_the_fidelity_test_is_about() -> None:
    if not ANSWERS:
        pytest.skip(f"the recorded corpus is absent (looked in {CORPUS})")
    items = [item for entry in ANSWERS for item in recorded_output(entry)]
    messages = [item for item in items if item["type"] == "message"]

    assert any("phase" in item for item in messages)
    assert any(part.get("annotations") for item in messages for part in item["content"])
    assert any(item["type"] == "function_call" and "id" in item for item in items)
    assert any(item["type"] == "reasoning" and "encrypted_content" in item for item in items)


# ---------------------------------------------------------------- generated output items, streamed or whole

_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
# Text UTF-8 can carry: an unpaired surrogate in plain text goes out as U+FFFD (architecture.md).
_texts = st.text(max_size=20) | st.text(
    st.characters(min_codepoint=0x80, exclude_categories=["Cs"]), max_size=10
)
_annotations = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.just("url_citation"),
            "url": st.just("https://example.test/a"),
            "title": _texts,
            "start_index": st.integers(0, 50),
            "end_index": st.integers(0, 50),
        }
    ),
    max_size=2,
)
# The stream renderer writes output_text parts only; a refusal part has a test of its own below.
_parts: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"type": st.just("output_text"), "text": _texts, "annotations": _annotations},
    optional={"logprobs": st.just([])},
)
_messages = st.fixed_dictionaries(
    {
        "type": st.just("message"),
        "id": _ids.map("msg_{}".format),
        "role": st.just("assistant"),
        "status": st.sampled_from(["completed", "incomplete"]),
        "content": st.lists(_parts, min_size=1, max_size=3),
    },
    optional={"phase": st.sampled_from(["commentary", "final_answer"])},
)
_reasoning = st.fixed_dictionaries(
    {
        "type": st.just("reasoning"),
        "id": _ids.map("rs_{}".format),
        "summary": st.lists(
            st.fixed_dictionaries({"type": st.just("summary_text"), "text": _texts}), max_size=2
        ),
        "encrypted_content": st.text(alphabet="ABCDEFabcdef0123456789+/=", min_size=1, max_size=40),
    },
    optional={"status": st.just("completed")},
)
_odd_arguments = st.one_of(
    st.just('{"a": 1}'),
    st.just('{"a": "\\ud800"}'),
    st.just('{"a": '),
    st.just(""),
    st.just('  {"b" : [1, 2] }  '),
    st.builds(json.dumps, st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
)
_calls = st.fixed_dictionaries(
    {
        "type": st.just("function_call"),
        "id": _ids.map("fc_{}".format),
        "call_id": _ids.map("call_{}".format),
        "name": st.sampled_from(["record_decision", "list_steps"]),
        "arguments": _odd_arguments,
        "status": st.just("completed"),
    }
)
_unknown = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["compaction", "web_search_call", "some_future_item"]),
        "id": _ids.map("it_{}".format),
        "payload": st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    }
)
_outputs = st.lists(st.one_of(_messages, _reasoning, _calls, _unknown), max_size=5).filter(
    # One item per id: the stream folds items by id.
    lambda items: len({item["id"] for item in items}) == len(items)
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(output=_outputs, chunk=st.integers(min_value=1, max_value=8), terminal_output=st.booleans())
async def test_generated_output_items_go_back_as_sent_streamed_or_whole(
    output: list[dict[str, Any]], chunk: int, terminal_output: bool
) -> None:
    document = response_document(output)
    responses = [
        await adapter.get_response(QUESTION)
        for adapter in every_way(document, chunk=chunk, terminal_output=terminal_output)
    ]

    assert all(response == responses[0] for response in responses)
    for sent in await follow_up_input(responses[0], ResponsesSettings(model="gpt-test")):
        assert sent == output


async def test_text_a_host_wrote_goes_out_as_a_plain_message() -> None:
    recorder = Recorder([answer(json.dumps(response_document([])), JSON)])
    history = [*QUESTION, ChatMessage.assistant("Noted."), ChatMessage.user("Thanks")]
    for adapter in adapters_for(recorder):
        await adapter.get_response(history)

    for body in recorder.bodies():
        assert body["input"][1] == {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Noted.", "annotations": []}],
        }


async def test_a_streamed_answer_goes_back_like_the_same_answer_read_whole() -> None:
    message = {**message_item("msg_1", "Checking."), "phase": "commentary"}
    document = response_document([message])
    sse, _ = adapters_for(Recorder([served(document, streaming=True, chunk=2)]))
    updates = [update async for update in sse.get_streaming_response(QUESTION)]

    folded = ChatResponse.from_updates(updates)
    (sent, _) = await follow_up_input(folded, ResponsesSettings(model="gpt-test"))
    assert sent == [message]


async def test_a_message_with_a_refusal_goes_back_with_each_part_in_place() -> None:
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "phase": "final_answer",
        "content": [
            {
                "type": "output_text",
                "text": "Partly: ",
                "annotations": [{"type": "file_path", "file_id": "f", "index": 0}],
            },
            {"type": "refusal", "refusal": "I cannot share that."},
            {"type": "output_text", "text": "the rest.", "annotations": []},
        ],
    }
    _, json_adapter = adapters_for(Recorder([served(response_document([message]), streaming=False)]))
    response = await json_adapter.get_response(QUESTION)

    assert response.text == "Partly: I cannot share that.the rest."
    for sent in await follow_up_input(response, ResponsesSettings(model="gpt-test")):
        assert sent == [message]


# ---------------------------------------------------------------- sparse items, in a light and a heavy body
# A body or event with more than a thousand brackets is read as the plain mapping it is, any other through
# the SDK's models (chat_adapters.py, "heavy"): both must make the same contents, and the same item must
# go back. Issue 21's failing example was a compaction item with an empty ``encrypted_content`` beside a
# deeply nested call: the SDK wrote the compaction's keys in its model's order, the mapping in the
# provider's, so one answer folded to two different ``raw_json`` strings depending on how it was read.

# A call whose arguments open over 1,200 brackets: the body holding it is heavy, an event with it too.
_HEAVY_CALL = {
    "type": "function_call",
    "id": "fc_heavy",
    "call_id": "call_heavy",
    "name": "record_decision",
    "arguments": json.dumps({"pad": [[]] * 1200}),
    "status": "completed",
}
# Every kept item kind with fields empty, null or in an order no SDK model writes them in (the stream
# renderer writes output_text parts only: a refusal part has a test of its own above).
_SPARSE_ITEMS = {
    "compaction-empty": {"type": "compaction", "id": "cmp_0", "encrypted_content": ""},
    "compaction-null-field": {
        "encrypted_content": "",
        "id": "cmp_1",
        "type": "compaction",
        "created_by": None,
    },
    "message-empty-text": {
        "type": "message",
        "id": "msg_0",
        "role": "assistant",
        "status": "completed",
        "phase": None,
        "content": [{"type": "output_text", "text": "", "annotations": [], "logprobs": []}],
    },
    "reasoning-empty": {
        "type": "reasoning",
        "id": "rs_0",
        "summary": [],
        "encrypted_content": "",
        "content": [],
    },
    "reasoning-empty-summary-text": {
        "summary": [{"text": "", "type": "summary_text"}],
        "encrypted_content": "e",
        "status": None,
        "id": "rs_1",
        "type": "reasoning",
    },
    "call-empty-arguments": {
        "type": "function_call",
        "id": "fc_0",
        "call_id": "call_0",
        "name": "list_steps",
        "arguments": "",
        "status": None,
    },
    "web-search-empty": {
        "type": "web_search_call",
        "status": "completed",
        "id": "ws_0",
        "action": {"type": "search", "query": "", "sources": []},
    },
    "mcp-list-tools-empty": {
        "type": "mcp_list_tools",
        "tools": [],
        "server_label": "",
        "id": "mcpl_0",
        "error": None,
    },
    "unknown-empty": {
        "type": "some_future_item",
        "id": "it_0",
        "data": {},
        "list": [],
        "none": None,
        "text": "",
    },
}


@pytest.mark.parametrize("heavy", [False, True], ids=["light", "heavy"])
@pytest.mark.parametrize("item", list(_SPARSE_ITEMS.values()), ids=list(_SPARSE_ITEMS))
async def test_a_sparse_item_folds_the_same_every_way_and_goes_back_as_sent(
    item: dict[str, Any], heavy: bool
) -> None:
    output = [item, _HEAVY_CALL] if heavy else [item]
    ways = every_way(response_document(output), chunk=7, terminal_output=False)
    responses = [await adapter.get_response(QUESTION) for adapter in ways]

    assert all(response == responses[0] for response in responses)
    for sent in await follow_up_input(responses[0], ResponsesSettings(model="gpt-test")):
        assert sent == output
