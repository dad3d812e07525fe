"""Choosing fault scenarios through the model name."""

from __future__ import annotations

import pytest

from adapters.offline import OFFLINE_MODEL, SCENARIOS, UnknownScenarioError
from adapters.offline.scenarios import Scenario, parse_model


@pytest.mark.parametrize("model", [OFFLINE_MODEL, "gpt-4o", "offline-ish:http-500", None, 42])
def test_names_without_the_offline_prefix_select_nothing(model: object) -> None:
    assert parse_model(model) == ()


def test_several_scenarios_and_transient_counts() -> None:
    assert parse_model("offline:litellm+http-429*2+ sse-for-json") == (
        Scenario("litellm", "litellm", None),
        Scenario("http-429*2", "http-429", 2),
        Scenario("sse-for-json", "sse-for-json", None),
    )


@pytest.mark.parametrize(
    "model", ["offline:", "offline:nope", "offline:http-500*0", "offline:stall+", "offline:STALL"]
)
def test_unknown_scenarios_are_rejected_with_the_known_list(model: str) -> None:
    with pytest.raises(UnknownScenarioError) as caught:
        parse_model(model)

    assert "known scenarios: connection-reset, error-event" in str(caught.value)
    # The error keeps the part of the name it could not read.
    assert caught.value.token == model.removeprefix("offline:").split("+")[-1]


def test_every_scenario_has_a_one_line_description() -> None:
    assert len(SCENARIOS) >= 18
    assert all(description and "\n" not in description for description in SCENARIOS.values())
