"""The one renderer of Responses API bodies (items, the Response document, its events in either dialect)."""

# The offline stand-in answers with it; tests, gateway fakes and benchmarks build with it what a
# gateway sends. OpenAI's dialect names each event on an ``event:`` line and carries logprobs and
# token details; LiteLLM's (``litellm=True``) sends data lines only, repeats the model in every
# event, drops those fields and ends with ``[DONE]``.

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

__all__ = [
    "call_item",
    "event_frame",
    "message_item",
    "numbered",
    "reasoning_item",
    "response_document",
    "sse",
    "stream_events",
    "usage",
]

_TERMINAL_STATUSES: Final = ("completed", "incomplete", "failed")
# The streamed parts of an item: (its list, the index key, the part's added/done event, the text's events).
_PARTS: Final[Mapping[str, Sequence[tuple[str, str, str | None, str]]]] = {
    "message": [("content", "content_index", "response.content_part", "response.output_text")],
    "reasoning": [
        ("summary", "summary_index", "response.reasoning_summary_part", "response.reasoning_summary_text"),
        ("content", "content_index", None, "response.reasoning_text"),
    ],
}
_WORD: Final = re.compile(r"\s*\S+|\s+$")
# Argument strings stream in small slices, as models send them; a huge one in 64 KiB slices, which
# keeps a 5 MB argument to some eighty events.
_ARGUMENT_SLICE: Final = 24
_LONG_ARGUMENTS: Final = 4096
_LONG_ARGUMENT_SLICE: Final = 64 * 1024


def usage(
    input_tokens: int,
    output_tokens: int,
    *,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    litellm: bool = False,
) -> dict[str, Any]:
    """A usage block; LiteLLM's carries only the three counts."""
    block: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    block["total_tokens"] = input_tokens + output_tokens
    if not litellm:
        block["input_tokens_details"] = {"cached_tokens": cached_tokens, "cache_write_tokens": 0}
        block["output_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return block


def message_item(item_id: str, *texts: str, litellm: bool = False) -> dict[str, Any]:
    """An assistant message with one output_text part per text."""
    logprobs: dict[str, Any] = {} if litellm else {"logprobs": []}
    content = [{"type": "output_text", "text": text, "annotations": [], **logprobs} for text in texts]
    return {"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": content}


def reasoning_item(
    item_id: str, summary: Iterable[str] = (), encrypted: str | None = None, texts: Iterable[str] = ()
) -> dict[str, Any]:
    """A reasoning item: summary parts, optional reasoning text parts and encrypted content."""
    item: dict[str, Any] = {"type": "reasoning", "id": item_id}
    item["summary"] = [{"type": "summary_text", "text": text} for text in summary]
    if content := [{"type": "reasoning_text", "text": text} for text in texts]:
        item["content"] = content
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def call_item(item_id: str, call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A completed function call."""
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments,
            "status": "completed"}  # fmt: skip


def response_document(
    output: Sequence[Mapping[str, Any]],
    *,
    response_id: str,
    model: str,
    created_at: int,
    status: str = "completed",
    usage: Mapping[str, Any] | None = None,
    error: Mapping[str, Any] | None = None,
    incomplete_reason: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A Response document with every field OpenAI sends; ``fields`` override the request echoes."""
    document: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "error": error,
        "incomplete_details": None if incomplete_reason is None else {"reason": incomplete_reason},
        "model": model,
        "output": list(output),
        "usage": usage,
        "instructions": None,
        "max_output_tokens": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "user": None,
    }
    document.update(fields)
    return document


def _deltas(text: str, chunk: int | None, *, arguments: bool = False) -> list[str]:
    if chunk is None and not arguments:
        return _WORD.findall(text) or [""]
    if chunk is None:
        chunk = _ARGUMENT_SLICE if len(text) < _LONG_ARGUMENTS else _LONG_ARGUMENT_SLICE
    return [text[at : at + chunk] for at in range(0, len(text), chunk)] or [""]


def _item_events(
    index: int, item: Mapping[str, Any], chunk: int | None, litellm: bool
) -> list[dict[str, Any]]:
    """What OpenAI streams for one output item: added, the parts' deltas and done events, item done."""
    kind = item["type"]
    # An item opens empty: its parts (or arguments) come after it, in their own events.
    opening = {**item, **({"status": "in_progress"} if "status" in item else {})}
    if kind == "message":
        opening["content"] = []
    elif kind == "reasoning":
        opening["summary"] = []
        opening.pop("content", None)
    elif kind == "function_call":
        opening["arguments"] = ""
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": index, "item": opening}
    ]
    where = {"item_id": item["id"], "output_index": index}
    if kind == "function_call":
        deltas = _deltas(item["arguments"], chunk, arguments=True)
        events += [{"type": "response.function_call_arguments.delta", **where, "delta": d} for d in deltas]
        events.append(
            {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
        )
    for key, at_key, part_event, text_event in _PARTS.get(kind, ()):
        extra: dict[str, Any] = {} if litellm or kind != "message" else {"logprobs": []}
        for part_index, part in enumerate(item.get(key, ())):
            at = {**where, at_key: part_index}
            if part_event:
                events.append({"type": f"{part_event}.added", **at, "part": {**part, "text": ""}})
            deltas = _deltas(part["text"], chunk)
            events += [{"type": f"{text_event}.delta", **at, "delta": d, **extra} for d in deltas]
            events.append({"type": f"{text_event}.done", **at, "text": part["text"], **extra})
            if part_event:
                events.append({"type": f"{part_event}.done", **at, "part": part})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def stream_events(
    document: Mapping[str, Any],
    *,
    chunk: int | None = 3,
    litellm: bool = False,
    terminal_output: bool = True,
    terminal: bool = True,
) -> list[dict[str, Any]]:
    """The events a provider streams for ``document``, numbered from 0.

    ``chunk`` slices every text into deltas of that many characters; ``None`` streams as a model
    does: texts word by word, arguments in slices. ``terminal_output=False`` empties the output of
    the terminal event (some gateways send it so); ``terminal=False`` leaves that event out.
    """
    opening = {**document, "status": "in_progress", "output": [], "usage": None}
    opening.update(error=None, incomplete_details=None)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(document["output"]):
        events.extend(_item_events(index, item, chunk, litellm))
    if terminal:
        final = document if terminal_output else {**document, "output": []}
        status = document["status"] if document["status"] in _TERMINAL_STATUSES else "completed"
        events.append({"type": f"response.{status}", "response": final})
    return numbered(events, model=document["model"], litellm=litellm)


def numbered(
    events: list[dict[str, Any]], *, model: str, litellm: bool = False, start: int = 0
) -> list[dict[str, Any]]:
    """``events`` numbered from ``start`` (a nested error event carries no number), in place.

    LiteLLM repeats the model at the top level of every event.
    """
    for number, event in enumerate(events, start):
        if event["type"] != "error" or "error" not in event:
            event["sequence_number"] = number
        if litellm:
            event["model"] = model
    return events


def event_frame(event: Mapping[str, Any], *, litellm: bool = False) -> str:
    """One event as a server-sent event: ``event:`` and ``data:`` lines, or a data line only for LiteLLM."""
    data = json.dumps(event, separators=(",", ":"))
    return f"data: {data}\n\n" if litellm else f"event: {event['type']}\ndata: {data}\n\n"


def sse(events: Iterable[Mapping[str, Any]], *, litellm: bool = False) -> str:
    """A whole event stream; LiteLLM's ends with ``data: [DONE]``."""
    return "".join(event_frame(event, litellm=litellm) for event in events) + (
        "data: [DONE]\n\n" if litellm else ""
    )
