"""Choosing fault scenarios through the model name."""

from __future__ import annotations

import pytest

from adapters.offline import OFFLINE_MODEL, SCENARIOS, UnknownScenarioError
from adapters.offline.scenarios import ScenarioSelection, parse_model


@pytest.mark.parametrize("model", [OFFLINE_MODEL, "gpt-4o", "offline-ish:http-500", None, 42])
def test_names_without_the_offline_prefix_select_nothing(model: object) -> None:
    assert parse_model(model) == ScenarioSelection()


def test_several_scenarios_and_transient_counts() -> None:
    selection = parse_model("offline:litellm+http-429*2+ sse-for-json")

    assert selection.names == ("litellm", "http-429", "sse-for-json")
    assert selection.tokens == ("litellm", "http-429*2", "sse-for-json")
    assert selection.transient == {"http-429*2": 2}
    assert "http-429" in selection
    assert "http-500" not in selection
    assert selection.text == "litellm+http-429*2+sse-for-json"


def test_dropping_a_used_up_transient_scenario_keeps_the_others() -> None:
    selection = parse_model("offline:http-500*1+litellm").without_tokens(frozenset({"http-500*1"}))

    assert selection == ScenarioSelection(tokens=("litellm",), names=("litellm",), transient={})


@pytest.mark.parametrize(
    "model", ["offline:", "offline:nope", "offline:http-500*0", "offline:stall+", "offline:STALL"]
)
def test_unknown_scenarios_are_rejected_with_the_known_list(model: str) -> None:
    with pytest.raises(UnknownScenarioError) as caught:
        parse_model(model)

    assert "known scenarios: connection-reset, error-event" in str(caught.value)


def test_every_scenario_has_a_one_line_description() -> None:
    assert len(SCENARIOS) >= 18
    assert all(description and "\n" not in description for description in SCENARIOS.values())
