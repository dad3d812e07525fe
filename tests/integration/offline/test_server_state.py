"""Server-side state against the offline stand-in, which keeps stored responses as the API does."""

from __future__ import annotations

import itertools
import json

import httpx
import pytest

from adapters.offline import OfflineResponsesServer
from tests.integration.offline.support import API_KEY, EXAMPLES, ContainerFactory, bounded

TRANSCRIPT = (EXAMPLES / "standup-transcript.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_a_summary_in_server_state_sends_only_what_is_new_and_ends_as_in_client_state(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    client = await bounded(containers("offline", streaming=streaming).summary_agent().summarize(TRANSCRIPT))
    sent_whole = len(server.requests)
    container = containers("offline", streaming=streaming)
    container.config.from_dict({"agent": {"conversation_state": "server"}})
    stored = await bounded(container.summary_agent().summarize(TRANSCRIPT))

    assert stored.action_items == client.action_items
    assert stored.decisions == client.decisions
    assert stored.text == client.text
    whole, chained = server.requests[:sent_whole], server.requests[sent_whole:]
    assert len(chained) == len(whole)
    assert all(request.body["store"] is True for request in chained)
    assert "previous_response_id" not in chained[0].body
    for before, request in itertools.pairwise(chained):
        assert request.body["previous_response_id"].startswith("resp_")
        assert request.body["previous_response_id"] != before.body.get("previous_response_id")
        # Only the tool results of the last round go: the transcript stays with the stored response.
        assert {item["type"] for item in request.body["input"]} == {"function_call_output"}
    # The whole history grows each round; the chained requests' input does not.
    assert sum(len(r.body["input"]) for r in chained) < sum(len(r.body["input"]) for r in whole)
    assert len(json.dumps(chained[-1].body["input"])) < len(json.dumps(whole[-1].body["input"])) / 4


async def test_a_response_it_does_not_hold_is_a_400_previous_response_not_found(
    server: OfflineResponsesServer,
) -> None:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=10.0) as client:
        headers = {"authorization": f"Bearer {API_KEY}"}
        unstored = await client.post(
            "/responses", json={"model": "offline", "input": "Hello", "store": False}, headers=headers
        )
        assert unstored.status_code == 200
        for previous in ("resp_never_given", unstored.json()["id"]):
            chained = {"model": "offline", "input": "Again", "previous_response_id": previous}
            refused = await client.post("/responses", json=chained, headers=headers)
            assert refused.status_code == 400
            error = refused.json()["error"]
            assert (error["code"], error["param"]) == ("previous_response_not_found", "previous_response_id")
