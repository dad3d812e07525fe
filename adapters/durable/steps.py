"""Each model request and each tool call as a DBOS step: the two port decorators of a durable run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Final, TypeVar

from dbos import DBOS

from adapters.redaction import Redactor
from application.scrubbing import scrubbed as scrub_strings
from application.scrubbing import strings
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    ToolInvokerPort,
    updates_of,
)

__all__ = ["MODEL_REQUEST_STEP", "DurableChat", "DurableToolInvoker", "scrubbed", "to_store"]

MODEL_REQUEST_STEP: Final = "model request"
"""The name of every model request's step (a tool call's step is ``tool <name>``)."""

_T = TypeVar("_T")

Requester = Callable[[Sequence[ChatMessage], ChatOptions | None], Awaitable[ChatResponse]]
"""How a request leaves the workflow: by default a step that calls the inner chat."""


def scrubbed(value: _T, redactor: Redactor) -> _T:
    """``value`` with every secret cut out of every string in it: attrs values, tuples, lists, mappings.

    What a durable run stores (a step's answer, a workflow's result) goes through this, so a
    gateway that echoes the key back cannot put it in the database. Nothing is copied unless a
    secret was found, so the common case returns ``value`` itself: its strings are gathered and
    searched as one text (a secret in any one of them is found there too), and only a value with a
    secret is walked again to cut it. Both walks are the application's (:mod:`application.scrubbing`),
    which keep their own stack: a model's value of any depth is scrubbed, never a ``RecursionError``.
    """
    if not redactor:
        return value
    texts = list(strings(value))
    if not texts or not redactor.contains_secret(texts[0] if len(texts) == 1 else "\0".join(texts)):
        return value
    return scrub_strings(
        value, lambda text: redactor.redact(text) if redactor.contains_secret(text) else text
    )


# The answer the last step of this context returned, scrubbed, and the redactor that scrubbed it.
_STEP_ANSWER: ContextVar[tuple[object, Redactor] | None] = ContextVar(
    "meeting_agents_step_answer", default=None
)


def _step_answer(value: _T, redactor: Redactor) -> _T:
    """``value`` scrubbed, as a step returns it: DBOS stores that very object next (:func:`to_store`)."""
    cleaned = scrubbed(value, redactor)
    _STEP_ANSWER.set((cleaned, redactor))
    return cleaned


def to_store(value: _T, redactor: Redactor) -> _T:
    """``value`` as a durable run stores it: :func:`scrubbed`, unless it is the very answer the step
    just scrubbed with ``redactor`` (DBOS records a step's answer in the step's context; the values
    are frozen), which is not searched a second time."""
    answer = _STEP_ANSWER.get()
    if answer is not None and answer[0] is value and answer[1] is redactor:
        return value
    return scrubbed(value, redactor)


class DurableChat:
    """``ChatPort`` decorator: each request is a DBOS step named ``model request``.

    Inside a DBOS workflow, a request whose step completed before (the workflow is being recovered
    after a crash) is not sent again: DBOS hands back the answer it recorded. The answer is scrubbed
    of the secrets ``redactor`` knows before it is recorded and before the run sees it, so a live run
    and its replay read the same text. Outside a workflow, requests go straight to ``inner``.
    ``requester`` replaces the step (the engine sends requests through a rate-limited queue so).
    Answers are whole: ``get_streaming_response`` streams one whole answer.
    """

    def __init__(self, inner: ChatPort, redactor: Redactor, requester: Requester | None = None) -> None:
        self._inner = inner
        self._redactor = redactor
        self._requester = requester

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        if self._requester is not None:
            return await self._requester(messages, options)
        return await DBOS.run_step_async({"name": MODEL_REQUEST_STEP}, self.send, messages, options)

    async def send(self, messages: Sequence[ChatMessage], options: ChatOptions | None) -> ChatResponse:
        """The request itself, its answer scrubbed: what a step runs."""
        return _step_answer(await self._inner.get_response(messages, options), self._redactor)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


class DurableToolInvoker:
    """``ToolInvokerPort`` decorator: each call is a DBOS step named ``tool <name>``.

    A recovered workflow gets a completed call's recorded result back instead of running it again.
    ``rebuild`` is for tools whose only effect is on the run's own memory (the pipelines' tools, which
    collect the action items and decisions a run returns, or edit its copy of a workflow): a crash
    loses that memory, so a replayed call is also handed to ``inner`` to rebuild it, and the recorded
    result is still the one the model sees. Leave it off for tools with effects outside the process:
    then a completed call never runs twice.
    """

    def __init__(self, inner: ToolInvokerPort, redactor: Redactor, *, rebuild: bool) -> None:
        self._inner = inner
        self._redactor = redactor
        self._rebuild = rebuild

    @classmethod
    def decorator(cls, redactor: Redactor, *, rebuild: bool) -> Callable[[ToolInvokerPort], ToolInvokerPort]:
        """For a chain of tool-invoker decorators (``Container.tool_invoker_decorators``)."""

        def decorate(inner: ToolInvokerPort) -> ToolInvokerPort:
            return cls(inner, redactor, rebuild=rebuild)

        return decorate

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        ran = False

        async def run() -> FunctionResultContent:
            nonlocal ran
            ran = True
            return _step_answer(await self._inner.invoke(call), self._redactor)

        result: FunctionResultContent = await DBOS.run_step_async({"name": f"tool {call.name}"}, run)
        if not ran and self._rebuild:
            await self._inner.invoke(call)
        return result
