"""Items go back in the provider's ``output_index`` order: an item only the terminal ``output`` holds
(announced by ``output_item.added``, never finished in the stream) takes its place there, on both adapters,
whole or streamed, and ``ChatResponse.from_updates`` folds the streamed updates to the same answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.offline.render import message_item, sse, stream_events
from domain import ChatResponse, ChatResponseUpdate, ProviderItemContent, TextContent
from tests.support.gateway import JSON, SSE, answered_and_streamed, assert_folds_to, response_document


def _listing(item_id: str, label: str) -> dict[str, Any]:
    return {"type": "mcp_list_tools", "id": item_id, "server_label": label, "tools": [], "error": None}


def _kinds(response: ChatResponse) -> list[str]:
    return [
        content.item_id or "" if isinstance(content, ProviderItemContent) else "text"
        for message in response.messages
        for content in message.contents
    ]


def _announced_only(events: list[dict[str, Any]], item_ids: set[str]) -> list[dict[str, Any]]:
    """The stream with ``item_ids`` announced but never finished: only the terminal output has them."""
    return [
        event
        for event in events
        if not (event["type"] == "response.output_item.done" and event["item"].get("id") in item_ids)
    ]


@pytest.mark.parametrize(
    ("output_ids", "announced_only"),
    [
        (["mcpl_a", "msg_1", "mcpl_b"], {"mcpl_a", "mcpl_b"}),
        (["mcpl_a", "mcpl_b", "msg_1"], {"mcpl_a", "mcpl_b"}),
        (["msg_1", "mcpl_a"], {"mcpl_a"}),
    ],
)
async def test_an_item_only_the_terminal_output_holds_goes_back_at_its_output_index(
    output_ids: list[str], announced_only: set[str]
) -> None:
    items = {
        "mcpl_a": _listing("mcpl_a", "deepwiki"),
        "mcpl_b": _listing("mcpl_b", "learn"),
        "msg_1": message_item("msg_1", "Here are the tools."),
    }
    document = response_document([items[item_id] for item_id in output_ids])
    events = _announced_only(stream_events(document, chunk=4), announced_only)
    expected = ["text" if item_id == "msg_1" else item_id for item_id in output_ids]

    for body, content_type in ((sse(events), SSE), (json.dumps(document), JSON)):
        for response, updates in await answered_and_streamed(body, content_type):
            assert _kinds(response) == expected
            assert_folds_to(updates, response)


def test_from_updates_lists_items_by_position_and_an_update_without_one_after_the_one_before_it() -> None:
    updates = [
        ChatResponseUpdate((TextContent("b"),), item_index=7, position=1),
        ChatResponseUpdate((ProviderItemContent("mcp_list_tools", "{}", "late"),), position=0),
        ChatResponseUpdate((ProviderItemContent("x", "{}", "unplaced"),)),
        ChatResponseUpdate((TextContent("c"),), item_index=7, position=1),
    ]

    folded = ChatResponse.from_updates(updates)

    contents = folded.messages[0].contents
    assert [getattr(content, "item_id", None) or getattr(content, "text", None) for content in contents] == [
        "late",
        "unplaced",
        "bc",
    ]


def test_updates_without_positions_fold_in_the_order_they_arrived() -> None:
    response = ChatResponse.from_updates(
        [
            ChatResponseUpdate((ProviderItemContent("x", "{}", "first"),)),
            ChatResponseUpdate((TextContent("text"),), item_index=0),
            ChatResponseUpdate((ProviderItemContent("x", "{}", "last"),)),
        ]
    )

    assert [getattr(content, "item_id", None) or "text" for content in response.messages[0].contents] == [
        "first",
        "text",
        "last",
    ]
