"""Benchmark bodies: one model output as an OpenAI-shaped event stream and as a JSON Response."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = ["Body", "make_body"]

_WORDS = (
    "the", "meeting", "agreed", "to", "ship", "gateway", "tier", "on", "Friday", "and", "stream",
    "every", "response", "while", "Ana", "owns", "benchmarks", "notes", "follow", "up", "é", "✓",
)  # fmt: skip

_MODEL = "gpt-5.5-2026-04-01"
_RESPONSE_ID = "resp_bench_0123456789abcdef"
_ITEM_ID = "msg_bench_0123456789abcdef"


@attrs.frozen
class Body:
    """One output of ``deltas`` text deltas: the expected ``text``, its SSE bytes and its JSON bytes."""

    deltas: int
    text: str
    sse: bytes
    json: bytes

    @property
    def events(self) -> int:
        """Events in the stream: the deltas plus the eight lifecycle and item events around them."""
        return self.deltas + 8

    @property
    def output_bytes(self) -> int:
        return len(self.text.encode())


def _shell(status: str) -> dict[str, Any]:
    return {
        "id": _RESPONSE_ID,
        "object": "response",
        "created_at": 1_771_881_670,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": _MODEL,
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "metadata": {},
    }


def _usage(deltas: int) -> dict[str, Any]:
    return {
        "input_tokens": 1_234,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": deltas,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1_234 + deltas,
    }


def _message(text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}] if text else []
    return {"id": _ITEM_ID, "type": "message", "status": status, "role": "assistant", "content": content}


def _events(pieces: list[str], text: str) -> Iterator[dict[str, Any]]:
    yield {"type": "response.created", "response": _shell("in_progress")}
    yield {"type": "response.in_progress", "response": _shell("in_progress")}
    yield {"type": "response.output_item.added", "output_index": 0, "item": _message("", "in_progress")}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    where = {"item_id": _ITEM_ID, "output_index": 0, "content_index": 0}
    yield {"type": "response.content_part.added", **where, "part": part}
    for piece in pieces:
        yield {
            "type": "response.output_text.delta",
            **where,
            "delta": piece,
            "logprobs": [],
            "obfuscation": "x",
        }
    yield {"type": "response.output_text.done", **where, "text": text, "logprobs": []}
    yield {"type": "response.content_part.done", **where, "part": {**part, "text": text}}
    done = _message(text, "completed")
    yield {"type": "response.output_item.done", "output_index": 0, "item": done}
    yield {
        "type": "response.completed",
        "response": {**_shell("completed"), "output": [done], "usage": _usage(len(pieces))},
    }


def make_body(deltas: int, *, seed: int = 6, ascii_only: bool = False) -> Body:
    """A deterministic output of ``deltas`` word-sized text deltas, as a stream and as a JSON Response.

    By default the text holds a few non-Latin-1 characters, as model output usually does (curly
    quotes, dashes, symbols): CPython then stores it at two bytes per character, which is what the
    memory figure should see. ``ascii_only`` gives the one-byte-per-character case for comparison.
    """
    rng = random.Random(seed)
    words = tuple(word for word in _WORDS if word.isascii()) if ascii_only else _WORDS
    pieces = [rng.choice(words) + " " for _ in range(deltas)]
    text = "".join(pieces)
    frames = []
    for sequence, event in enumerate(_events(pieces, text)):
        payload = json.dumps({**event, "sequence_number": sequence}, separators=(",", ":"))
        frames.append(f"event: {event['type']}\ndata: {payload}\n\n")
    response = {**_shell("completed"), "output": [_message(text, "completed")], "usage": _usage(deltas)}
    return Body(
        deltas=deltas,
        text=text,
        sse="".join(frames).encode(),
        json=json.dumps(response, separators=(",", ":")).encode(),
    )
