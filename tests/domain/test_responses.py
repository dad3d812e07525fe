"""Responses and their streamed updates (domain/responses.py): derived text and calls, usage sums,
and ChatResponse.from_updates folding pieces back into the whole response."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import (
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
    updates_of,
)
from domain.responses import piece_update, reasoning_piece, text_piece
from tests.domain.strategies import adapter_shaped_responses, streamed_updates


def fold(*updates: ChatResponseUpdate) -> ChatResponse:
    return ChatResponse.from_updates(updates)


def assistant(*contents: Content) -> tuple[ChatMessage, ...]:
    return (ChatMessage("assistant", contents),)


@given(data=st.data(), response=adapter_shaped_responses())
def test_a_response_split_into_stream_updates_folds_back_to_itself(
    data: st.DataObject, response: ChatResponse
) -> None:
    updates = data.draw(streamed_updates(response))
    assert ChatResponse.from_updates(updates) == response


@given(response=adapter_shaped_responses(), pieces=st.integers(min_value=1, max_value=6))
def test_to_updates_then_from_updates_is_the_identity(response: ChatResponse, pieces: int) -> None:
    updates = list(response.to_updates(pieces))
    assert ChatResponse.from_updates(updates) == response
    assert "".join(update.text for update in updates) == "".join(
        c.text for m in response.messages for c in m.contents if isinstance(c, TextContent)
    )
    assert tuple(call for update in updates for call in update.function_calls) == response.function_calls


async def _answered(response: ChatResponse) -> ChatResponse:
    return response


async def _read(updates: AsyncIterator[ChatResponseUpdate]) -> list[ChatResponseUpdate]:
    return [update async for update in updates]


@given(response=adapter_shaped_responses())
def test_the_updates_of_an_answer_read_whole_fold_back_to_it(response: ChatResponse) -> None:
    updates = asyncio.run(_read(updates_of(lambda: _answered(response))))
    assert updates == list(response.to_updates())
    assert ChatResponse.from_updates(updates) == response


async def test_a_chat_error_of_the_answer_comes_out_of_its_updates() -> None:
    partial = ChatResponse(response_id="resp_1")
    failure = ChatTransportError("connection reset", status_code=502, partial=partial)

    async def broken() -> ChatResponse:
        raise failure

    updates = updates_of(broken)
    with pytest.raises(ChatTransportError) as caught:
        await anext(updates)
    assert caught.value is failure


async def test_a_stream_closed_before_its_first_step_asks_nothing() -> None:
    asked: list[str] = []

    async def ask() -> ChatResponse:
        asked.append("asked")
        return ChatResponse()

    updates = updates_of(ask)
    await updates.aclose()

    assert asked == []


def test_two_text_parts_of_one_item_stay_two_text_contents() -> None:
    response = fold(
        ChatResponseUpdate((TextContent("Hel"),), item_index=0, part_index=0),
        ChatResponseUpdate((TextContent("lo"),), item_index=0, part_index=0),
        ChatResponseUpdate((TextContent("Wor"), TextContent("ld")), item_index=0, part_index=1),
        ChatResponseUpdate((TextContent("again"),), item_index=1, part_index=0),
    )
    assert response.messages == assistant(TextContent("Hello"), TextContent("World"), TextContent("again"))


def test_interleaved_items_fold_separately_in_the_order_they_started() -> None:
    response = fold(
        ChatResponseUpdate(
            (ReasoningContent("thin", "rs_1", summary=("thin",)),), item_index=4, part_index=0
        ),
        ChatResponseUpdate((TextContent("an"),), item_index=2, part_index=0),
        ChatResponseUpdate((ReasoningContent("king", summary=("king",)),), item_index=4, part_index=0),
        ChatResponseUpdate((TextContent("swer"),), item_index=2, part_index=0),
    )
    assert response.messages == assistant(
        ReasoningContent("thinking", "rs_1", summary=("thinking",)), TextContent("answer")
    )


def test_parts_fold_in_part_order_whatever_order_they_arrive_in() -> None:
    response = fold(
        ChatResponseUpdate((TextContent("second"),), item_index=0, part_index=1),
        ChatResponseUpdate((TextContent("first"),), item_index=0, part_index=0),
        ChatResponseUpdate((ReasoningContent("b", summary=("b",)),), item_index=1, part_index=1),
        ChatResponseUpdate((ReasoningContent("t"),), item_index=1, part_index=0),
        ChatResponseUpdate((ReasoningContent("a", summary=("a",)),), item_index=1, part_index=0),
    )
    assert response.messages == assistant(
        TextContent("first"), TextContent("second"), ReasoningContent("a\n\nb\n\nt", summary=("a", "b"))
    )


def test_a_reasoning_item_gets_its_id_and_encrypted_state_from_any_piece() -> None:
    response = fold(
        ChatResponseUpdate((ReasoningContent("", "rs_1"),), item_index=0),
        ChatResponseUpdate((ReasoningContent("plan", summary=("plan",)),), item_index=0, part_index=0),
        ChatResponseUpdate((ReasoningContent("", None, "enc=="),), item_index=0),
    )
    assert response.messages == assistant(ReasoningContent("plan", "rs_1", "enc==", ("plan",)))


def test_whole_contents_stand_alone_and_keep_their_order() -> None:
    call = FunctionCallContent.parse(call_id="c1", name="f", raw_arguments='{"a": 1')
    opaque = ProviderItemContent("compaction", '{"type":"compaction"}', "cmp_1")
    whole_reasoning = ReasoningContent("a\n\nb", "rs_1", summary=("a", "b"))
    response = fold(
        ChatResponseUpdate((TextContent("x"), TextContent("y"))),
        ChatResponseUpdate((call,), item_index=0),
        ChatResponseUpdate((whole_reasoning,), item_index=1),
        ChatResponseUpdate((opaque,)),
    )
    assert response.messages == assistant(TextContent("x"), TextContent("y"), call, whole_reasoning, opaque)
    assert response.function_calls[0].raw_arguments == '{"a": 1'


def test_reasoning_whose_parts_cannot_spell_it_streams_whole() -> None:
    odd = ReasoningContent("not the summary", "rs_1", "enc", summary=("a summary",))
    response = ChatResponse(messages=assistant(odd))
    updates = list(response.to_updates(3))
    assert [u.contents for u in updates if u.contents] == [(odd,)]
    assert ChatResponse.from_updates(updates) == response


def test_a_new_message_starts_when_the_role_changes() -> None:
    response = fold(
        ChatResponseUpdate((TextContent("a"),), item_index=0),
        ChatResponseUpdate((TextContent("b"),), "tool", item_index=1),
        ChatResponseUpdate((TextContent("c"),), "tool", item_index=2),
        ChatResponseUpdate((TextContent("d"),), item_index=3),
    )
    assert [(m.role, m.text) for m in response.messages] == [
        ("assistant", "a"),
        ("tool", "bc"),
        ("assistant", "d"),
    ]


def test_metadata_is_the_latest_value_given() -> None:
    created = datetime(2026, 5, 1, tzinfo=UTC)
    response = fold(
        ChatResponseUpdate(response_id="resp_1", model_id="m", created_at=created, status="in_progress"),
        ChatResponseUpdate((TextContent("hi"),), item_index=0, usage=Usage(1)),
        ChatResponseUpdate(status="incomplete", finish_reason="length", usage=Usage(1, 2, 3)),
        ChatResponseUpdate(),
    )
    assert response == ChatResponse(
        messages=assistant(TextContent("hi")),
        response_id="resp_1",
        model_id="m",
        created_at=created,
        status="incomplete",
        finish_reason="length",
        usage=Usage(1, 2, 3),
    )


def test_no_updates_fold_to_an_empty_response() -> None:
    assert ChatResponse.from_updates([]) == ChatResponse()
    assert ChatResponse.from_updates(iter([ChatResponseUpdate(response_id="r")])) == ChatResponse(
        response_id="r"
    )


def test_an_update_tells_its_text_and_calls() -> None:
    call = FunctionCallContent.parse(call_id="c1", name="f", raw_arguments="{}")
    update = ChatResponseUpdate((TextContent("a"), ReasoningContent("thought"), call, TextContent("b")))
    assert update.text == "ab"
    assert update.function_calls == (call,)


def test_updates_are_frozen_values_with_a_known_role() -> None:
    update = ChatResponseUpdate([TextContent("a")])
    assert update.contents == (TextContent("a"),)
    assert update.role == "assistant"
    with pytest.raises(ValueError, match="role"):
        ChatResponseUpdate(role="robot")  # type: ignore[arg-type]  # the point: an unknown role is refused


def test_to_updates_needs_at_least_one_piece() -> None:
    with pytest.raises(ValueError, match="pieces must be at least 1"):
        list(ChatResponse().to_updates(0))


def test_an_update_gives_exactly_the_metadata_it_knows() -> None:
    created = datetime(2026, 5, 1, tzinfo=UTC)
    assert ChatResponseUpdate((TextContent("hi"),)).metadata == {}
    update = ChatResponseUpdate(response_id="r1", created_at=created, finish_reason="stop", usage=Usage(9))
    assert update.metadata == {
        "response_id": "r1",
        "created_at": created,
        "finish_reason": "stop",
        "usage": Usage(9),
    }
    # Every metadata field a ChatResponse has, and nothing else, can be given by an update.
    every = ChatResponseUpdate(
        response_id="r",
        model_id="m",
        created_at=created,
        status="done",
        finish_reason="stop",
        usage=Usage(1),
        served_by="primary",
    )
    assert set(every.metadata) == {field.name for field in attrs.fields(ChatResponse)} - {"messages"}


@given(
    metadata=st.fixed_dictionaries(
        {},
        optional={
            "response_id": st.text(max_size=3),
            "model_id": st.text(max_size=3),
            "created_at": st.just(datetime(2026, 5, 1, tzinfo=UTC)),
            "status": st.text(max_size=3),
            "finish_reason": st.sampled_from(["stop", "length"]),
            "usage": st.builds(Usage, st.integers(0, 9)),
            "served_by": st.text(max_size=3),
        },
    )
)
def test_an_update_gives_every_metadata_field_it_was_given(metadata: dict[str, object]) -> None:
    assert ChatResponseUpdate((TextContent("a"),), **metadata).metadata == metadata  # type: ignore[arg-type]  # drawn per field


_pieces = st.text(max_size=8) | st.sampled_from(["\ud83d", "\ude00", ""])
_indexes = st.integers(min_value=0, max_value=2**40)


@given(text=_pieces, item=_indexes, part=st.none() | _indexes, summary=st.booleans())
def test_the_per_delta_constructors_build_what_the_public_constructors_build(
    text: str, item: int, part: int | None, summary: bool
) -> None:
    built = {
        text_piece(text, item, part): ChatResponseUpdate((TextContent(text),), "assistant", item, part),
        reasoning_piece(text, item, part, summary=summary): ChatResponseUpdate(
            (ReasoningContent(text, summary=(text,) if summary else ()),), "assistant", item, part
        ),
        piece_update(TextContent(text, "{}"), item, part): ChatResponseUpdate(
            (TextContent(text, "{}"),), "assistant", item, part
        ),
    }
    for fast, public in built.items():
        # Every field set (a slot left unset would raise here), equal, hashed and shown alike.
        assert type(fast) is ChatResponseUpdate
        assert attrs.asdict(fast) == attrs.asdict(public)
        assert fast == public
        assert hash(fast) == hash(public)
        assert repr(fast) == repr(public)
        assert pickle.loads(pickle.dumps(fast)) == public  # noqa: S301  # our own value, pickled here
        assert fast.metadata == {}
        # Still a frozen value, and what is made from it goes through the validated constructor.
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            fast.role = "user"  # type: ignore[misc]  # the point: a piece is frozen too
        with pytest.raises(ValueError, match="role"):
            attrs.evolve(fast, role="robot")  # type: ignore[arg-type]  # the point: still refused


def test_response_text_and_function_calls_span_messages() -> None:
    call_a = FunctionCallContent.parse(call_id="a", name="f", raw_arguments="{}")
    call_b = FunctionCallContent.parse(call_id="b", name="g", raw_arguments="oops")
    response = ChatResponse(
        messages=(
            ChatMessage(
                "assistant", (ReasoningContent("thinking"), TextContent("Hello, "), TextContent("world."))
            ),
            ChatMessage("assistant", (call_a,)),
            ChatMessage("tool", (FunctionResultContent("a", "done"),)),
            ChatMessage("user", (TextContent("not assistant text"),)),
            ChatMessage("assistant", (TextContent("Second."), call_b)),
        )
    )
    assert response.text == "Hello, world.\nSecond."
    assert response.function_calls == (call_a, call_b)
    assert [c.call_id for c in response.function_calls] == ["a", "b"]


def test_usage_adds_field_by_field_and_keeps_unknowns_unknown() -> None:
    total = Usage(1, 2, 3, None, None) + Usage(10, 20, 30, 5, None)
    assert total == Usage(11, 22, 33, 5, None)


def test_usage_sums_cost_like_the_tokens() -> None:
    assert (Usage(1, cost_usd=0.25) + Usage(2, cost_usd=0.5)).cost_usd == 0.75
    assert (Usage(1) + Usage(2, cost_usd=0.5)).cost_usd == 0.5
    assert (Usage(1) + Usage(2)).cost_usd is None


def test_with_cost_sets_a_known_cost_and_keeps_the_rest() -> None:
    assert Usage(1, 2).with_cost(0.01) == Usage(1, 2, cost_usd=0.01)
    assert Usage(1, 2, cost_usd=0.5).with_cost(None) == Usage(1, 2, cost_usd=0.5)
