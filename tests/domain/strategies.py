"""Hypothesis strategies for the domain tests: surrogates in argument strings, responses as updates."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from datetime import UTC
from typing import Any

from hypothesis import strategies as st

from domain import (
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    ProviderItemContent,
    ReasoningContent,
    Role,
    TextContent,
    Usage,
)
from domain.messages import REASONING_SEPARATOR
from tests.strategies import json_values

_ESCAPE = re.compile(r"\\u[0-9a-f]{4}")

# Every surrogate code point, high and low; Hypothesis's text() leaves them out by default.
surrogates: st.SearchStrategy[str] = st.characters(categories=["Cs"])

# Any str at all, surrogates included, in any order (so high/low pairs of raw code points occur too).
any_text: st.SearchStrategy[str] = st.text(st.characters() | surrogates)

# Characters outside the Basic Multilingual Plane: ensure_ascii spells each as an escaped pair.
astral_characters: st.SearchStrategy[str] = st.characters(min_codepoint=0x10000)


@st.composite
def texts_with_a_lone_surrogate(draw: st.DrawFn) -> str:
    """Surrogate-free text with one surrogate code point planted in it, so it is unpaired."""
    text = draw(st.text(max_size=8))
    cut = draw(st.integers(min_value=0, max_value=len(text)))
    return text[:cut] + draw(surrogates) + text[cut:]


@st.composite
def _planted(draw: st.DrawFn, leaf: st.SearchStrategy[str]) -> dict[str, Any]:
    """A JSON object holding one ``leaf`` string as a key or a value, at the top or nested."""
    planted = draw(leaf)
    place = draw(st.sampled_from(["key", "value", "nested_key", "nested_value", "in_list"]))
    container: Any
    if place in ("key", "nested_key"):
        container = {planted: draw(json_values)}
    elif place == "in_list":
        container = [draw(json_values), planted]
    else:
        container = {"s": planted}
    if place.startswith("nested") or place == "in_list":
        for _ in range(draw(st.integers(min_value=1, max_value=4))):
            container = draw(st.sampled_from([{"n": container}, [container]]))
    siblings = draw(st.dictionaries(st.text(max_size=6), json_values, max_size=3))
    return {**siblings, "planted": container}


@st.composite
def lone_surrogate_arguments(draw: st.DrawFn) -> str:
    """A strict JSON object with an unpaired surrogate in a key or string, escaped or raw."""
    obj = draw(_planted(texts_with_a_lone_surrogate()))
    # ensure_ascii writes the surrogate as a \\udXXX escape; without it the code point stays raw.
    return json.dumps(obj, ensure_ascii=draw(st.booleans()))


@st.composite
def surrogate_pair_arguments(draw: st.DrawFn) -> str:
    """A strict JSON object whose astral characters are written as escaped pairs (or left raw)."""
    text = draw(st.text(max_size=6)) + draw(astral_characters) + draw(st.text(max_size=6))
    obj = draw(_planted(st.just(text)))
    raw = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    # Escapes are case-insensitive: an upper-case pair is the same character.
    return _ESCAPE.sub(lambda m: m[0].upper().replace("U", "u"), raw) if draw(st.booleans()) else raw


# ---------------------------------------------------------------- responses and their streamed updates
# Responses of the shapes the adapters build: one assistant message (or none) whose contents are
# text parts, reasoning items, function calls and opaque provider items, with any metadata.

_ids = st.none() | st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
_model_text = st.text(max_size=30) | any_text.filter(lambda s: len(s) <= 30)

# What an adapter keeps of a provider's output item: an opaque JSON object, or nothing.
_provider_items = st.none() | st.builds(
    lambda status, n: json.dumps({"id": f"it_{n}", "status": status}, sort_keys=True),
    st.sampled_from(["completed", "incomplete"]),
    st.integers(min_value=0, max_value=9),
)
text_contents = st.builds(TextContent, _model_text, _provider_items)
reasoning_contents = st.builds(
    ReasoningContent.from_parts,
    st.lists(_model_text, max_size=3),
    st.lists(_model_text, max_size=2),
    item_id=_ids,
    encrypted_content=st.none() | st.text(alphabet="ABCDEFabcdef0123456789+/=", min_size=1, max_size=20),
    provider_item=_provider_items,
)
call_contents = st.builds(
    FunctionCallContent.parse,
    call_id=st.text(min_size=1, max_size=8),
    name=st.sampled_from(["record_decision", "list_steps", ""]),
    raw_arguments=st.text(max_size=30) | st.just('{"a": 1}'),
    item_id=_ids,
    provider_item=_provider_items,
)
provider_contents = st.builds(
    ProviderItemContent,
    type=st.sampled_from(["compaction", "web_search_call"]),
    raw_json=st.builds(lambda n: json.dumps({"type": "compaction", "n": n}), st.integers()),
    item_id=_ids,
)
costs = st.none() | st.floats(min_value=0, max_value=100, allow_nan=False, allow_infinity=False)
usages = st.none() | st.builds(
    Usage, *(st.none() | st.integers(min_value=0, max_value=10**6) for _ in range(5)), cost_usd=costs
)


@st.composite
def adapter_shaped_responses(draw: st.DrawFn) -> ChatResponse:
    contents = draw(
        st.lists(st.one_of(text_contents, reasoning_contents, call_contents, provider_contents), max_size=6)
    )
    return ChatResponse(
        messages=(ChatMessage("assistant", contents),) if contents else (),
        response_id=draw(_ids),
        model_id=draw(_ids),
        created_at=draw(st.none() | st.datetimes(timezones=st.just(UTC))),
        status=draw(st.sampled_from([None, "completed", "incomplete", "in_progress", "failed"])),
        finish_reason=draw(st.sampled_from([None, "stop", "tool_calls", "length", "content_filter"])),
        usage=draw(usages),
    )


def _cut(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random places into one or more pieces (empty pieces included)."""
    cuts = sorted(draw(st.lists(st.integers(min_value=0, max_value=len(text)), max_size=4)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _reasoning_parts(content: ReasoningContent) -> tuple[list[str], list[str]]:
    """Summary parts and text parts that spell ``content`` (text parts split at every separator)."""
    rest = content.text
    if content.summary:
        rest = rest[len(REASONING_SEPARATOR.join(content.summary)) :]
        if not rest:
            return list(content.summary), []
        rest = rest[len(REASONING_SEPARATOR) :]
    elif not rest:
        return [], []
    return list(content.summary), rest.split(REASONING_SEPARATOR)


@st.composite
def streamed_updates(draw: st.DrawFn, response: ChatResponse) -> list[ChatResponseUpdate]:
    """``response`` as a stream might deliver it: random pieces, several pieces per update, text
    parts of one item or of several, the item's id, encrypted state and provider item early or late, and
    metadata spread over the updates (with placeholders the later values overwrite).
    """
    updates = [
        ChatResponseUpdate(
            response_id=response.response_id,
            model_id=response.model_id,
            created_at=response.created_at,
            status="in_progress" if response.status is not None else None,
        )
    ]
    item = -1
    part = 0
    previous: Content | None = None
    for message in response.messages:
        for content in message.contents:
            if isinstance(content, TextContent):
                # A text part either opens an item or is the next part of the message item before it.
                if isinstance(previous, TextContent) and draw(st.booleans()):
                    part += 1
                else:
                    item, part = item + 1, draw(st.integers(min_value=0, max_value=2))
                texts = [TextContent(piece) for piece in _cut(draw, content.text)]
                if content.provider_item is not None:
                    # The provider's item comes with any one piece, or after them all in an empty one.
                    at = draw(st.integers(min_value=0, max_value=len(texts)))
                    piece = texts[at].text if at < len(texts) else ""
                    texts[at : at + 1] = [TextContent(piece, content.provider_item)]
                updates.extend(_batched(draw, texts, message.role, item, part))
            elif isinstance(content, ReasoningContent):
                item += 1
                summary, reasoning_texts = _reasoning_parts(content)
                item_id = content.item_id
                closing = ReasoningContent(
                    "", item_id, content.encrypted_content, provider_item=content.provider_item
                )
                done = ChatResponseUpdate((closing,), message.role, item)
                if draw(st.booleans()):
                    updates.append(done)
                for index, text in enumerate(summary):
                    pieces = [ReasoningContent(p, item_id, summary=(p,)) for p in _cut(draw, text)]
                    updates.extend(_batched(draw, pieces, message.role, item, index))
                for index, text in enumerate(reasoning_texts):
                    pieces = [ReasoningContent(p, item_id) for p in _cut(draw, text)]
                    updates.extend(_batched(draw, pieces, message.role, item, index))
                updates.append(done)
            else:
                item += 1
                # Whole contents stand alone whether or not the update names their item.
                named = draw(st.none() | st.just(item))
                updates.append(ChatResponseUpdate((content,), message.role, named))
            previous = content
    updates.append(
        ChatResponseUpdate(status=response.status, finish_reason=response.finish_reason, usage=response.usage)
    )
    return updates


def _batched(
    draw: st.DrawFn, pieces: Sequence[Content], role: Role, item: int, part: int
) -> list[ChatResponseUpdate]:
    """The pieces of one part in updates of one to three pieces each."""
    updates = []
    while pieces:
        size = draw(st.integers(min_value=1, max_value=3))
        updates.append(ChatResponseUpdate(tuple(pieces[:size]), role, item, part))
        pieces = pieces[size:]
    return updates
