"""Benchmark bodies: one model output as an OpenAI-shaped event stream and as a JSON Response."""

from __future__ import annotations

import json
import random

import attrs

from adapters.offline.render import message_item, response_document, sse, stream_events, usage

__all__ = ["Body", "make_body"]

_WORDS = (
    "the", "meeting", "agreed", "to", "ship", "gateway", "tier", "on", "Friday", "and", "stream",
    "every", "response", "while", "Ana", "owns", "benchmarks", "notes", "follow", "up", "é", "✓",
)  # fmt: skip


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


def make_body(deltas: int, *, seed: int = 6, ascii_only: bool = False) -> Body:
    """A deterministic output of ``deltas`` word-sized text deltas, as a stream and as a JSON Response.

    By default the text holds a few non-Latin-1 characters, as model output usually does (curly
    quotes, dashes, symbols): CPython then stores it at two bytes per character, which is what the
    memory figure should see. ``ascii_only`` gives the one-byte-per-character case for comparison.
    """
    rng = random.Random(seed)
    words = tuple(word for word in _WORDS if word.isascii()) if ascii_only else _WORDS
    text = " ".join(rng.choice(words) for _ in range(deltas))
    document = response_document(
        [message_item("msg_bench_0123456789abcdef", text)],
        response_id="resp_bench_0123456789abcdef",
        model="gpt-5.5-2026-04-01",
        created_at=1_771_881_670,
        usage=usage(1_234, deltas),
    )
    return Body(
        deltas=deltas,
        text=text,
        # chunk=None streams the text word by word: one delta per word.
        sse=sse(stream_events(document, chunk=None)).encode(),
        json=json.dumps(document, separators=(",", ":")).encode(),
    )
