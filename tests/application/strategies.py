"""Hypothesis strategies for the application tests: user text that tries to forge the prompt's frames, and
every value a run document holds."""

from __future__ import annotations

import json
import re
from datetime import UTC

import attrs
from hypothesis import strategies as st

from application import STOP_REASONS, ActionItem, MeetingSummary, ToolCallRecord, ToolRun, WorkflowEdit
from domain import (
    ChatMessage,
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    Usage,
    Workflow,
    WorkflowStep,
)
from domain.messages import ROLES
from tests.domain.strategies import any_text, lone_surrogate_arguments, surrogates
from tests.strategies import json_objects, json_values, malformed_argument_strings, valid_argument_strings

# Every tag a pipeline frames with, open and closed, and the entities its escaping writes.
FRAME_TAGS = ("transcript", "instruction", "workflow")
_forgeries = st.sampled_from(
    [
        *(f"<{tag}>" for tag in FRAME_TAGS),
        *(f"</{tag}>" for tag in FRAME_TAGS),
        *(f"\n</{tag}>\n" for tag in FRAME_TAGS),
        *("&amp;", "&lt;", "&gt;", "&amp;lt;", "&#60;", "&", "<", ">", "\n", "<<", "</"),
    ]
)

# Any text at all, surrogates included, laced with tags and entities.
hostile_texts: st.SearchStrategy[str] = st.lists(st.one_of(_forgeries, any_text), max_size=8).map("".join)


# ---------------------------------------------------------------- what a run produces (run documents)
# Every value a run document holds, with odd text everywhere: lone surrogates, raw and escaped, in raw
# arguments and text. A high and a low surrogate side by side are one character to any JSON reader,
# so generated text never holds a pair split into two code points (its own test covers that).

_SPLIT_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
document_texts: st.SearchStrategy[str] = st.text(st.characters() | surrogates, max_size=20).filter(
    lambda text: _SPLIT_PAIR.search(text) is None
)
_ids = st.none() | st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=8)
_raw_arguments = st.one_of(
    document_texts, valid_argument_strings(), lone_surrogate_arguments(), malformed_argument_strings
)

# What an adapter keeps of the provider's output item: opaque JSON text, or nothing (a host's content).
_provider_items = st.none() | st.builds(json.dumps, json_objects)
function_calls = st.builds(
    FunctionCallContent.parse,
    call_id=document_texts,
    name=document_texts,
    raw_arguments=_raw_arguments,
    item_id=_ids,
    provider_item=_provider_items,
)
function_results = st.builds(FunctionResultContent, document_texts, json_values, st.booleans())
contents: st.SearchStrategy[Content] = st.one_of(
    st.builds(TextContent, document_texts, _provider_items),
    st.builds(
        ReasoningContent.from_parts,
        st.lists(document_texts, max_size=2),
        st.lists(document_texts, max_size=2),
        item_id=_ids,
        encrypted_content=st.none() | st.text(alphabet="ABCDEFabcdef0123456789+/=", max_size=30),
        provider_item=_provider_items,
    ),
    function_calls,
    function_results,
    st.builds(
        ProviderItemContent,
        type=document_texts,
        raw_json=st.builds(json.dumps, json_objects),
        item_id=_ids,
    ),
)
messages = st.builds(ChatMessage, st.sampled_from(ROLES), st.lists(contents, max_size=4))
conversations: st.SearchStrategy[tuple[ChatMessage, ...]] = st.lists(messages, max_size=4).map(tuple)
chat_responses = st.builds(
    ChatResponse,
    messages=conversations,
    response_id=_ids,
    model_id=_ids,
    created_at=st.none() | st.datetimes(timezones=st.none() | st.just(UTC)),
    status=st.sampled_from([None, "completed", "incomplete", "in_progress", "failed"]),
    finish_reason=st.sampled_from([None, "stop", "tool_calls", "length", "content_filter"]),
    usage=st.none()
    | st.builds(
        Usage,
        *(st.none() | st.integers(min_value=0) for _ in range(5)),
        cost_usd=st.none() | st.floats(min_value=0, allow_nan=False, allow_infinity=False),
    ),
)
_records = st.lists(st.builds(ToolCallRecord, function_calls, function_results, st.booleans()), max_size=3)
tool_runs = st.builds(
    ToolRun,
    messages=conversations,
    responses=st.lists(chat_responses, max_size=2).map(tuple),
    tool_calls=_records.map(tuple),
    iterations=st.integers(min_value=0, max_value=40),
    stop_reason=st.none() | st.sampled_from(STOP_REASONS),
)
# Fields not named here (those other pipelines add) are drawn from their annotations, once resolved.
meeting_summaries = st.builds(
    attrs.resolve_types(MeetingSummary),
    text=document_texts,
    action_items=st.lists(st.builds(ActionItem, owner=document_texts, task=document_texts), max_size=3).map(
        tuple
    ),
    complete=st.booleans(),
    tool_calls=_records.map(tuple),
    run=tool_runs,
)
workflows = st.builds(
    Workflow,
    document_texts,
    st.lists(
        st.builds(WorkflowStep, st.text(min_size=1, max_size=6), document_texts, document_texts),
        max_size=4,
        unique_by=lambda step: step.id,
    ),
)
workflow_edits = st.builds(
    attrs.resolve_types(WorkflowEdit),
    workflow=workflows,
    text=document_texts,
    complete=st.booleans(),
    tool_calls=_records.map(tuple),
    run=tool_runs,
)
