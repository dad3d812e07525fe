"""Test doubles for the ports, one of each; the docstring of each says when a test should reach for it.

- :class:`RecordingTools`: a ``ToolInvokerPort`` that answers every call and keeps the calls it ran; the
  default double for "which calls reached the tools?".
- :class:`FailingTools`: answers every call with an error result, as a tool that failed cleanly does.
- :class:`RaisingTools`: raises from ``invoke``, breaking the port's promise, for the paths that survive it.
- :class:`CallLog`: a tool-invoker *decorator* that keeps every call passing through it (and what it wrapped),
  optionally under a tag in a log shared with other decorators to prove their order.
- :class:`RequestLog`: the same for the chat chain: tags each request in a log shared with other decorators.
- :class:`WholeAnswers`: a ``ChatPort`` over another that only has whole answers (it streams each one whole);
  the base of the chat doubles that change only how streaming behaves.
- :func:`meeting_time_tools`: a registry with one tool that takes nothing and answers ``"10:00"``, and the
  options that offer it; the smallest tool round, for what a round sends rather than what a tool does.
- :class:`NoAclose`: a ``ChatPort`` whose streams are plain async iterators with no ``aclose``, as a
  hand-written streaming ChatPort may return; for "is a stream that cannot be closed still read and ended?".

The Responses SDK over ``httpx.MockTransport`` (``Recorder``, ``answer``, bodies) lives in
:mod:`tests.support.gateway`; a real local HTTP server in :mod:`tests.support.local_server`; a scripted
model is the product's own :class:`adapters.scripted.ScriptedChat`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Generic, TypeVar

import domain
from application import ToolRegistry
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    JsonValue,
    ToolInvokerPort,
)

__all__ = [
    "CallLog",
    "FailingTools",
    "NoAclose",
    "RaisingTools",
    "RecordingTools",
    "RequestLog",
    "WholeAnswers",
    "meeting_time_tools",
]

InnerChat = TypeVar("InnerChat", bound=ChatPort)


def _ran(call: FunctionCallContent) -> JsonValue:
    return f"ran {call.name}"


class RecordingTools:
    """A tool invoker that records every call it is awaited with and answers it with ``answer(call)``.

    The default answer, ``"ran <name>"``, says which tool ran; pass ``answer`` where the result's shape
    matters (a dict the model is meant to read, an answer that depends on the arguments).
    """

    def __init__(self, answer: Callable[[FunctionCallContent], JsonValue] = _ran) -> None:
        self.answer = answer
        self.calls: list[FunctionCallContent] = []

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        self.calls.append(call)
        return FunctionResultContent(call.call_id, self.answer(call))


class FailingTools:
    """A tool invoker whose every call fails cleanly: an error result, as the registry gives a broken tool."""

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        return FunctionResultContent(call.call_id, {"error": "tool_failed", "message": "no"}, is_error=True)


class RaisingTools:
    """A tool invoker that breaks its port's promise and raises ``RuntimeError(message)`` from every call."""

    def __init__(self, message: str = "the tool broke") -> None:
        self.message = message

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        raise RuntimeError(self.message)


def meeting_time_tools() -> tuple[ToolRegistry, ChatOptions]:
    """A registry whose one tool, ``meeting_time``, takes nothing and answers ``"10:00"``, and the options
    that offer it to the model."""
    tools = ToolRegistry()

    @tools.tool(description="The meeting's time")
    def meeting_time() -> str:
        return "10:00"

    return tools, ChatOptions(tools=tools.specs)


class CallLog:
    """A tool-invoker decorator that keeps each call passing through it and each invoker it wrapped.

    ``calls`` holds this decorator's own calls; give several decorators one ``log`` (and each a ``tag``) to
    see in which order a call passed through them.
    """

    def __init__(self, tag: str = "", log: list[tuple[str, str]] | None = None) -> None:
        self.tag = tag
        self.log: list[tuple[str, str]] = [] if log is None else log
        self.calls: list[FunctionCallContent] = []
        self.wrapped: list[ToolInvokerPort] = []

    def __call__(self, inner: ToolInvokerPort) -> ToolInvokerPort:
        self.wrapped.append(inner)
        return _Logged(self, inner)


class _Logged:
    def __init__(self, log: CallLog, inner: ToolInvokerPort) -> None:
        self._log, self._inner = log, inner

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        self._log.calls.append(call)
        self._log.log.append((self._log.tag, call.call_id))
        return await self._inner.invoke(call)


class RequestLog:
    """A chat decorator that appends its tag to a shared log on every request, then delegates."""

    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag, self.log = tag, log

    def __call__(self, inner: ChatPort) -> ChatPort:
        return _Requested(self, inner)


class WholeAnswers(domain.WholeAnswers, Generic[InnerChat]):
    """The product's :class:`domain.WholeAnswers`, typed by the chat it wraps (``inner``), for the doubles
    that change only how streaming behaves.

    ``get_streaming_response`` yields the updates of this double's own ``get_response``, so a subclass
    overriding ``get_response`` changes both; override ``get_streaming_response`` for a double that
    streams its own way over the same whole answers.
    """

    inner: InnerChat

    def __init__(self, inner: InnerChat) -> None:
        super().__init__(inner)


class _Requested(WholeAnswers[ChatPort]):
    def __init__(self, log: RequestLog, inner: ChatPort) -> None:
        super().__init__(inner)
        self._log = log

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self._log.log.append(self._log.tag)
        return await super().get_response(messages, options)


class NoAclose(WholeAnswers[InnerChat]):
    """The chat it wraps, whose streams are handed out behind a plain async iterator: nothing to close."""

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return _Plain(self.inner.get_streaming_response(messages, options))


class _Plain:
    def __init__(self, updates: AsyncIterator[ChatResponseUpdate]) -> None:
        self._updates = updates

    def __aiter__(self) -> _Plain:
        return self

    async def __anext__(self) -> ChatResponseUpdate:
        return await anext(self._updates)
