"""Token counts from the gateway are counts: a negative or non-integer one is not usage, with one warning."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from adapters.offline.render import message_item
from domain import ChatMessage, Usage
from tests.support.gateway import every_way, response_document

# The SDK's typed events read a count leniently ("19" is 19), so a text count that is a number arrives as one.
_HOSTILE_COUNTS: list[tuple[str, Any]] = [
    ("input_tokens", -41_000_000),
    ("output_tokens", 12.5),
    ("total_tokens", "-19"),
    ("input_tokens", "many"),
    ("output_tokens", [3]),
]


@pytest.mark.parametrize(("name", "value"), _HOSTILE_COUNTS)
async def test_a_count_that_is_not_a_whole_number_from_zero_is_not_usage_and_warns_once_per_response(
    name: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    document = response_document([message_item("msg_1", "Done.")], usage=(11, 7))
    document["usage"][name] = value
    expected = {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18} | {name: None}

    for adapter in every_way(document):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="adapters"):
            response = await adapter.get_response([ChatMessage.user("hi")])

        assert response.usage == Usage(**expected, cached_input_tokens=3, reasoning_tokens=2)
        warnings = [record for record in caplog.records if "usage" in record.getMessage()]
        assert [record.levelno for record in warnings] == [logging.WARNING]
        assert name in warnings[0].getMessage()


async def test_a_nested_count_that_is_negative_is_not_usage() -> None:
    document = response_document([message_item("msg_1", "Done.")], usage=(11, 7))
    document["usage"]["output_tokens_details"]["reasoning_tokens"] = -2

    for adapter in every_way(document):
        response = await adapter.get_response([ChatMessage.user("hi")])

        assert response.usage == Usage(11, 7, 18, cached_input_tokens=3, reasoning_tokens=None)


async def test_honest_counts_log_nothing(caplog: pytest.LogCaptureFixture) -> None:
    document = response_document([message_item("msg_1", "Done.")], usage=(0, 7))

    for adapter in every_way(document):
        with caplog.at_level(logging.WARNING, logger="adapters"):
            response = await adapter.get_response([ChatMessage.user("hi")])
        assert response.usage == Usage(0, 7, 7, cached_input_tokens=3, reasoning_tokens=2)
    assert not [record for record in caplog.records if "usage" in record.getMessage()]
