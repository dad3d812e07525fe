"""Benchmark bodies: model outputs as OpenAI-shaped event streams and JSON Responses, and the
conversation a tool loop's round sends."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from adapters.offline.render import call_item, message_item, response_document, sse, stream_events, usage
from domain import (
    ChatMessage,
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    ToolSpec,
)

__all__ = ["TEXT_KINDS", "Body", "TextKind", "make_body", "make_calls_body", "tool_loop_round"]

TextKind = Literal["ascii", "mixed", "cjk"]
TEXT_KINDS: Final[tuple[TextKind, ...]] = ("ascii", "mixed", "cjk")

_WORDS: Final = (
    "the", "meeting", "agreed", "to", "ship", "gateway", "tier", "on", "Friday", "and", "stream",
    "every", "response", "while", "Ana", "owns", "benchmarks", "notes", "follow", "up", "é", "✓",
)  # fmt: skip
# Two-character CJK words, streamed two characters a delta: a token of Chinese or Japanese text.
_CJK_WORDS: Final = (
    "会议", "同意", "周五", "发布", "网关", "层级", "每个", "响应", "流式", "负责", "基准", "笔记",
    "跟进", "决定", "任务", "模型", "工具", "调用", "结果", "摘要", "です", "ます",
)  # fmt: skip
_RESPONSE_ID: Final = "resp_bench_0123456789abcdef"
_MODEL: Final = "gpt-5.5-2026-04-01"


@attrs.frozen
class Body:
    """One model output: the expected ``text`` and call ``arguments``, as SSE bytes and as JSON bytes.

    ``deltas`` counts the text deltas of the stream (argument deltas are counted in ``events``).
    """

    deltas: int
    text: str
    sse: bytes
    json: bytes
    arguments: tuple[str, ...] = ()

    @property
    def events(self) -> int:
        """Events in the stream: one per ``event:`` line."""
        return self.sse.count(b"\n\n")

    @property
    def output_bytes(self) -> int:
        return len(self.text.encode()) + sum(len(a.encode()) for a in self.arguments)


def _text(deltas: int, rng: random.Random, kind: TextKind) -> tuple[str, int | None]:
    """The text of ``deltas`` deltas of ``kind``, and the delta size that streams it (None: word by word)."""
    if kind == "cjk":
        return "".join(rng.choice(_CJK_WORDS) for _ in range(deltas)), 2
    words = tuple(word for word in _WORDS if word.isascii()) if kind == "ascii" else _WORDS
    return " ".join(rng.choice(words) for _ in range(deltas)), None


def _body(document: dict[str, Any], deltas: int, text: str, chunk: int | None) -> Body:
    arguments = tuple(item["arguments"] for item in document["output"] if item["type"] == "function_call")
    return Body(
        deltas=deltas,
        text=text,
        sse=sse(stream_events(document, chunk=chunk)).encode(),
        json=json.dumps(document, separators=(",", ":")).encode(),
        arguments=arguments,
    )


def make_body(
    deltas: int, *, seed: int = 6, kind: TextKind = "mixed", delta_chars: int | None = None
) -> Body:
    """A deterministic answer of ``deltas`` text deltas, as a stream and as a JSON Response.

    ``mixed`` text holds a few non-Latin-1 characters, as model output usually does: CPython then
    stores it at two bytes per character. ``ascii`` is one byte per character; ``cjk`` is Chinese
    and Japanese text, two bytes per character in memory and three in UTF-8, two characters a delta.
    ``delta_chars`` makes every delta that many characters instead (a long text in fewer events).
    """
    rng = random.Random(seed)
    if delta_chars is None:
        text, chunk = _text(deltas, rng, kind)
    else:
        words = deltas * delta_chars // (2 if kind == "cjk" else 4)
        text, chunk = _text(words, rng, kind)[0][: deltas * delta_chars], delta_chars
    document = response_document(
        [message_item("msg_bench_0123456789abcdef", text)],
        response_id=_RESPONSE_ID,
        model=_MODEL,
        created_at=1_771_881_670,
        usage=usage(1_234, deltas),
    )
    body = _body(document, deltas, text, chunk)
    if body.events != deltas + 8:
        raise ValueError(f"{kind} text of {deltas} deltas of {delta_chars} characters is too short")
    return body


def _arguments(rng: random.Random, size: int, call: int) -> str:
    """A call's JSON arguments of about ``size`` characters: an action item with its notes."""
    words = " ".join(rng.choice(_WORDS) for _ in range(max(size // 6, 1)))
    return json.dumps(
        {"owner": rng.choice(("Ana", "Bo", "Chen")), "item": call, "due": "2026-12-04", "notes": words},
        ensure_ascii=False,
    )


def make_calls_body(calls: int, argument_chars: int, *, text_deltas: int = 20, seed: int = 7) -> Body:
    """A short message and ``calls`` function calls with arguments of about ``argument_chars``
    characters each, streamed as a model does (arguments in small slices)."""
    rng = random.Random(seed)
    text, _ = _text(text_deltas, rng, "mixed")
    output = [message_item("msg_bench_calls", text)]
    output += [
        call_item(
            f"fc_bench_{n:04d}",
            f"call_bench_{n:04d}",
            "record_action_item",
            _arguments(rng, argument_chars, n),
        )
        for n in range(calls)
    ]
    document = response_document(
        output,
        response_id=_RESPONSE_ID,
        model=_MODEL,
        created_at=1_771_881_670,
        usage=usage(2_345, calls * 50),
    )
    return _body(document, text_deltas, text, None)


_ACTION_ITEM: Final[Mapping[str, object]] = {
    "type": "object",
    "properties": {
        "owner": {"type": "string", "description": "Who owns the action item."},
        "item": {"type": "integer", "description": "The item's number in the notes."},
        "due": {"type": "string", "description": "When it is due, as an ISO date."},
        "notes": {"type": "string", "description": "What was agreed, in the meeting's words."},
    },
    "required": ["owner", "item", "due", "notes"],
    "additionalProperties": False,
}


def tool_loop_round(
    *, transcript_words: int = 600, rounds: int = 3
) -> tuple[tuple[ChatMessage, ...], ChatOptions]:
    """The conversation one round of a tool loop sends: instructions, three tools, a transcript and
    the calls and results of the rounds before it."""
    rng = random.Random(8)
    transcript = " ".join(rng.choice(_WORDS) for _ in range(transcript_words))
    messages: list[ChatMessage] = [ChatMessage.user(f"Summarize this meeting:\n\n{transcript}")]
    for n in range(rounds):
        arguments = _arguments(rng, 200, n)
        call = FunctionCallContent.parse(
            call_id=f"call_round_{n}",
            name="record_action_item",
            raw_arguments=arguments,
            item_id=f"fc_round_{n}",
        )
        messages.append(ChatMessage("assistant", (TextContent(f"Recording item {n}."), call)))
        messages.append(
            ChatMessage("tool", (FunctionResultContent(f"call_round_{n}", {"recorded": n, "ok": True}),))
        )
    tools = (
        ToolSpec("record_action_item", "Record one action item from the meeting.", _ACTION_ITEM),
        ToolSpec("list_steps", "List the workflow's steps."),
        ToolSpec("finish", "Say that the summary is complete."),
    )
    options = ChatOptions(
        instructions="You summarize meetings and record their action items with the tools. " * 8, tools=tools
    )
    return tuple(messages), options
