"""The folder's short way for the stream's bulk (``EventFolder._delta``): a text or arguments delta,
as the SDK builds it, for the part or call already arriving at its index. Whatever the deltas hold
(an index of another type or one no item is at, a delta that is no string, a text delta where a call
arrives), folding with the short way gives exactly what folding every event the long way gives."""

from __future__ import annotations

import json
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st
from openai._models import construct_type
from openai.types.responses import ResponseStreamEvent

from adapters.offline.render import call_item, message_item, stream_events
from adapters.responses import folding
from adapters.responses.error_mapping import ProviderFailureError, UnreadableResponseError
from adapters.responses.folding import EventFolder
from domain import ChatResponse, ChatResponseUpdate
from tests.support.gateway import response_document

_DELTAS = ("response.output_text.delta", "response.function_call_arguments.delta")
# What a careless gateway may put where an index or a delta belongs.
_ODD: st.SearchStrategy[object] = st.sampled_from(
    [None, True, False, -1, 0, 1, 2, 7, "0", "1", 1.0, [], {}, "x", ""]
)


def _events(text: str, arguments: str) -> list[dict[str, Any]]:
    document = response_document(
        [message_item("msg_1", text), call_item("fc_1", "call_1", "record_decision", arguments)]
    )
    return stream_events(document, chunk=2)


@st.composite
def _streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    text = draw(st.text(min_size=1, max_size=12))
    arguments = json.dumps({"decision": draw(st.text(max_size=8))})
    events = _events(text, arguments)
    positions = [n for n, event in enumerate(events) if event["type"] in _DELTAS]
    for n in draw(st.lists(st.sampled_from(positions), min_size=1, max_size=8, unique=True)):
        name = draw(st.sampled_from(["output_index", "content_index", "delta", "type"]))
        if name == "type":
            # The other delta: text where a call arrives, arguments where a message does.
            other = _DELTAS[1 - _DELTAS.index(events[n]["type"])]
            events[n] = {**events[n], "type": other}
        elif draw(st.booleans()):
            events[n] = {key: value for key, value in events[n].items() if key != name}
        else:
            events[n] = {**events[n], name: draw(_ODD)}
    if draw(st.integers(0, 3)) == 0:
        # Cut short: the partial must be the same too.
        events = events[: draw(st.integers(0, len(events)))]
    return events


class _LongWay(EventFolder):
    """Every event the long way."""

    def _delta(self, event: Any, built: type) -> bool:
        return False


def _fold(events: list[Any], *, short_way: bool) -> tuple[object, list[ChatResponseUpdate]]:
    folder = EventFolder(updates=True) if short_way else _LongWay(updates=True)
    outcome: object
    try:
        for event in events:
            folder.feed(event)
        outcome = folder.result()
    except (ProviderFailureError, UnreadableResponseError) as error:
        outcome = (type(error), str(error), error.partial)
    return outcome, list(folder.out or [])


@settings(max_examples=150)
@given(_streams())
def test_the_short_way_folds_what_the_long_way_folds(events: list[dict[str, Any]]) -> None:
    built = [construct_type(type_=cast(Any, ResponseStreamEvent), value=event) for event in events]

    assert _fold(built, short_way=True) == _fold(built, short_way=False)


def test_the_short_way_is_taken_for_the_bulk_of_a_stream(monkeypatch: Any) -> None:
    """Deltas the SDK built for the text and the call arriving are added the short way (the long way
    is not asked for them), and the answer is the one the events carry."""
    events = _events("a long answer, two characters a delta", json.dumps({"decision": "ship it"}))
    built = [construct_type(type_=cast(Any, ResponseStreamEvent), value=event) for event in events]
    deltas = sum(1 for event in events if event["type"] in _DELTAS)
    long_way: list[str] = []
    handlers = ("_on_part_text", "_on_arguments_delta")
    for name in handlers:
        original = getattr(EventFolder, name)

        def counted(self: EventFolder, kind: str, event: Any, original: Any = original) -> None:
            long_way.append(kind)
            original(self, kind, event)

        monkeypatch.setattr(EventFolder, name, counted)

    folder = EventFolder()
    for event in built:
        folder.feed(event)
    response = folder.result()

    assert deltas > 20
    # Only the first delta of each part or call goes the long way: it is what starts the part.
    assert len([kind for kind in long_way if kind in _DELTAS]) <= 2
    assert isinstance(response, ChatResponse)
    assert response.text == "a long answer, two characters a delta"
    assert [call.raw_arguments for call in response.function_calls] == [json.dumps({"decision": "ship it"})]
    assert {type(built[n]) for n, event in enumerate(events) if event["type"] in _DELTAS} == {
        folding._TEXT_DELTA,
        folding._ARGUMENTS_DELTA,
    }
