"""Property: what the adapters return for a body, split into streamed updates, folds back unchanged."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain import ChatMessage, ChatResponse
from tests.domain.strategies import streamed_updates
from tests.strategies import model_outputs, output_texts
from tests.support.gateway import JSON, Recorder, adapters_for, answer, reasoning_item, response_document


@st.composite
def outputs_with_reasoning_text(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Model outputs, sometimes with a reasoning item that has reasoning-text parts as well."""
    output = draw(model_outputs())
    if draw(st.booleans()):
        summary = draw(st.lists(output_texts, max_size=2))
        texts = draw(st.lists(output_texts, min_size=1, max_size=2))
        at = draw(st.integers(min_value=0, max_value=len(output)))
        output.insert(at, reasoning_item("rs_text", summary, draw(st.none() | st.just("enc")), texts))
    return output


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    output=outputs_with_reasoning_text(),
    status=st.sampled_from([("completed", None), ("incomplete", "max_output_tokens")]),
    pieces=st.integers(min_value=1, max_value=5),
    data=st.data(),
)
async def test_every_adapter_response_survives_being_split_into_updates_and_folded(
    output: list[dict[str, Any]], status: tuple[str, str | None], pieces: int, data: st.DataObject
) -> None:
    document = response_document(output, status=status[0], incomplete_reason=status[1])
    for adapter in adapters_for(Recorder([answer(json.dumps(document), JSON)])):
        response = await adapter.get_response([ChatMessage.user("Summarize the meeting")])

        assert ChatResponse.from_updates(response.to_updates(pieces)) == response
        assert ChatResponse.from_updates(data.draw(streamed_updates(response))) == response
