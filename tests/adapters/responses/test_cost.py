"""The request's cost from the gateway's ``x-litellm-response-cost`` header (``adapters/responses/cost.py``):
read on both adapters, from a stream's head and a JSON body's, whole and streamed; a value that is not a cost
is ignored with a debug record, never an error."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.offline.render import message_item, sse, stream_events
from adapters.responses.cost import COST_HEADER, MAX_REQUEST_COST_USD, response_cost
from domain import ChatResponse, Usage
from tests.support.gateway import JSON, SSE, Recorder, adapters_for, all_updates, answer, response_document

DOCUMENT = response_document([message_item("msg_1", "Done.")], usage=(11, 7))
TOKENS = Usage(11, 7, 18, 3, 2)
MALFORMED = ["abc", "-0.5", "nan", "inf", "-inf", "1e400", str(MAX_REQUEST_COST_USD * 10), "None", "", "0x10"]


def _bodies() -> list[tuple[str, str]]:
    return [(sse(stream_events(DOCUMENT)), SSE), (json.dumps(DOCUMENT), JSON)]


async def _each_way(headers: dict[str, str]) -> list[tuple[ChatResponse, ChatResponse]]:
    """For each adapter and each body shape: its whole answer and the fold of its streamed updates."""
    results = []
    for body, content_type in _bodies():
        served = answer(body, content_type)
        served.headers.update(headers)
        for adapter in adapters_for(Recorder([served])):
            whole = await adapter.get_response([])
            streamed = ChatResponse.from_updates(await all_updates(adapter, []))
            results.append((whole, streamed))
    return results


@pytest.mark.parametrize("value", ["0.00042", "0", "12.5", " 0.25 "])
async def test_the_cost_header_joins_the_usage_on_both_adapters_streamed_and_not(value: str) -> None:
    results = await _each_way({COST_HEADER: value})
    assert len(results) == 4
    for whole, streamed in results:
        assert whole.usage == TOKENS.with_cost(float(value))
        assert streamed == whole


async def test_without_the_header_there_is_no_cost() -> None:
    for whole, streamed in await _each_way({}):
        assert whole.usage == TOKENS
        assert streamed == whole


async def test_a_cost_without_token_counts_is_a_usage_of_its_own() -> None:
    document = response_document([message_item("msg_1", "Done.")], usage=None)
    served = answer(json.dumps(document), JSON)
    served.headers[COST_HEADER] = "0.5"
    for adapter in adapters_for(Recorder([served])):
        assert (await adapter.get_response([])).usage == Usage(cost_usd=0.5)


@pytest.mark.parametrize("value", MALFORMED)
async def test_a_malformed_cost_header_is_ignored_with_a_debug_record(
    value: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="adapters.responses"):
        results = await _each_way({COST_HEADER: value})
    for whole, streamed in results:
        assert whole.usage == TOKENS
        assert streamed == whole
    ignored = [r for r in caplog.records if r.levelno == logging.DEBUG and COST_HEADER in r.getMessage()]
    # Once per request: two body shapes, two adapters, each asked whole and streamed.
    assert len(ignored) == 8


@given(st.text(max_size=60))
def test_reading_the_header_never_raises_and_gives_a_cost_or_nothing(value: str) -> None:
    cost = response_cost({COST_HEADER: value})
    assert cost is None or 0 <= cost <= MAX_REQUEST_COST_USD


@given(st.floats(min_value=0, max_value=MAX_REQUEST_COST_USD))
def test_every_cost_in_range_reads_back_as_written(cost: float) -> None:
    assert response_cost({COST_HEADER: repr(cost)}) == cost
