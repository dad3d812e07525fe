"""A scripted ChatPort for tests: plays model turns in order and records every request.

Use it to test anything that talks to a ``ChatPort`` (the pipelines, the tool loop, a host
application's own use cases) without HTTP: script what the model says, including function calls
with any raw argument string (malformed ones too), then assert on the answer and on the requests
the fake received. To test the wire format itself, drive the real adapters over
``httpx.MockTransport`` instead. ::

    chat = ScriptedChat(
        ScriptedTurn(calls=(("call_1", "record_decision", '{"decision": "Ship it"'),)),
        ScriptedTurn(text="Summary ..."),
    )
    summary = await SummaryAgent(chat, LoopSettings()).summarize(transcript)
    assert chat.requests[1].options.initiator == "agent"

A script entry may also be a ready ``ChatResponse`` (returned as it is) or a ``ChatError`` (raised).
When the script runs out, :class:`ScriptExhaustedError` says how many turns were scripted.

``get_streaming_response`` plays the same script as updates (text in a few pieces, each call
whole, then the status and usage), so code that streams is tested the same way::

    updates = [u async for u in chat.get_streaming_response(messages)]
    assert ChatResponse.from_updates(updates) == ScriptedTurn(text="Summary ...").response(1)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import TypeAlias

import attrs

from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    TextContent,
    Usage,
)

__all__ = ["ScriptExhaustedError", "ScriptedChat", "ScriptedRequest", "ScriptedTurn"]

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
# A message item holding one refusal part, as the adapters keep it beside the part's text.
_REFUSAL_ITEM = '{"content":[{"type":"refusal"}],"role":"assistant","type":"message"}'
# Each text and reasoning part streams in this many pieces, so a consumer sees it arrive in steps.
_PIECES = 3


def _calls(value: Sequence[tuple[str, str, str]]) -> tuple[tuple[str, str, str], ...]:
    return tuple((call_id, name, raw) for call_id, name, raw in value)


@attrs.frozen
class ScriptedTurn:
    """One model answer: optional text, then function calls as ``(call_id, name, raw_arguments)``.

    ``raw_arguments`` may be any string; it is parsed with :meth:`FunctionCallContent.parse`,
    exactly as the real adapters do, so malformed arguments arrive with their ``parse_error``.
    ``refusal`` is a refusal part, as the adapters read one: its text, its message item naming it.
    """

    text: str = ""
    calls: tuple[tuple[str, str, str], ...] = attrs.field(default=(), converter=_calls)
    usage: Usage | None = None
    response_id: str | None = None
    refusal: str = ""

    def response(self, number: int) -> ChatResponse:
        """The ``ChatResponse`` an adapter would return for this turn, the ``number``-th of the script."""
        contents: list[Content] = [TextContent(self.text)] if self.text else []
        if self.refusal:
            contents.append(TextContent(self.refusal, _REFUSAL_ITEM))
        contents.extend(
            FunctionCallContent.parse(call_id=call_id, name=name, raw_arguments=raw, item_id=f"fc_{call_id}")
            for call_id, name, raw in self.calls
        )
        return ChatResponse(
            # As the adapters do, an answer with no contents has no message.
            messages=(ChatMessage("assistant", tuple(contents)),) if contents else (),
            response_id=self.response_id or f"resp_scripted_{number}",
            model_id="scripted",
            created_at=_EPOCH,
            status="completed",
            finish_reason="tool_calls" if self.calls else "stop",
            usage=self.usage,
        )


ScriptEntry: TypeAlias = ScriptedTurn | ChatResponse | ChatError


@attrs.frozen
class ScriptedRequest:
    """What the fake received: the conversation as sent, the options (None if none were given),
    and whether the answer was asked for as a stream.
    """

    messages: tuple[ChatMessage, ...]
    options: ChatOptions | None
    stream: bool = False


class ScriptExhaustedError(AssertionError):
    """More requests arrived than the script had turns: the code under test asked the model again."""


class ScriptedChat:
    """A ``ChatPort`` that answers from a script, in order, and records each request."""

    def __init__(self, *script: ScriptEntry) -> None:
        self._script = script
        self._requests: list[ScriptedRequest] = []

    @property
    def requests(self) -> tuple[ScriptedRequest, ...]:
        """Every request received so far, in order."""
        return tuple(self._requests)

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been played yet."""
        return max(len(self._script) - len(self._requests), 0)

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return self._play(self._take(ScriptedRequest(tuple(messages), options)))

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        """The next scripted answer as updates; the request is recorded now, as ``get_response`` does.

        A ``ChatError`` entry raises from the iterator, after the updates of its ``partial`` (what
        a real adapter would have streamed before failing); so does :class:`ScriptExhaustedError`.
        """
        return self._stream(self._take(ScriptedRequest(tuple(messages), options, stream=True)))

    def _take(self, request: ScriptedRequest) -> tuple[int, ScriptEntry | None]:
        self._requests.append(request)
        number = len(self._requests)
        return number, self._script[number - 1] if number <= len(self._script) else None

    def _play(self, taken: tuple[int, ScriptEntry | None]) -> ChatResponse:
        number, entry = taken
        if entry is None:
            raise ScriptExhaustedError(
                f"request {number} arrived but the script has only {len(self._script)} turn(s)"
            )
        if isinstance(entry, ChatError):
            raise entry
        if isinstance(entry, ChatResponse):
            return entry
        return entry.response(number)

    async def _stream(self, taken: tuple[int, ScriptEntry | None]) -> AsyncIterator[ChatResponseUpdate]:
        entry = taken[1]
        failure = entry if isinstance(entry, ChatError) else None
        streamed = failure.partial if failure is not None else self._play(taken)
        for update in streamed.to_updates(_PIECES) if streamed is not None else ():
            # Hand the loop a turn between updates, as a network stream would, so a consumer's
            # cancellation or early exit lands mid-stream rather than after the last update.
            await asyncio.sleep(0)
            yield update
        if failure is not None:
            raise failure
