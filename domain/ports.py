"""The ports: what the application needs from the outside world, as protocols; and ``WholeAnswers``, the
chat port over another chat whose answers it streams whole."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from domain.messages import ChatMessage, FunctionCallContent, FunctionResultContent
from domain.options import ChatOptions
from domain.responses import ChatResponse, ChatResponseUpdate, updates_of

__all__ = ["ChatPort", "ToolInvokerPort", "WholeAnswers"]


class ChatPort(Protocol):
    """Sends a conversation to a model and returns its answer, whole or piece by piece as it arrives.

    ``get_response`` returns the complete answer. ``get_streaming_response`` yields it as
    :class:`ChatResponseUpdate`s; folding them with :meth:`ChatResponse.from_updates` gives what
    ``get_response`` returns for the same answer. A chat that only has whole answers streams each
    as one whole answer's updates (:func:`domain.responses.updates_of`). Leaving the iteration early
    (``break`` then ``aclose()``, or cancellation) releases the connection.

    Implementations raise only :class:`domain.errors.ChatError` subclasses, from ``get_response``
    and from the streaming iterator alike: ``ResponseFailedError`` when the provider reports a
    failure, ``MalformedResponseError`` when the body cannot be read as a response,
    ``ChatTransportError`` when HTTP itself fails. Each carries what had arrived before the failure
    in ``partial``.
    """

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse: ...

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]: ...


class ToolInvokerPort(Protocol):
    """Runs the tool a function call names and returns its result for the same call id.

    Implementations do not raise for tool failures: a failure becomes a result with
    ``is_error=True`` and a stable error code, so the model can read it and recover.
    """

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent: ...


class WholeAnswers:
    """The chat ``inner`` (kept as ``inner``), each of its answers streamed whole.

    ``get_streaming_response`` yields the updates (:func:`updates_of`) of this chat's own
    ``get_response``, so a subclass that answers its own way streams that way too. Wrapped around a
    chat that streams, it stops its answers from being handed over a piece at a time.
    """

    def __init__(self, inner: ChatPort) -> None:
        self.inner = inner

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return await self.inner.get_response(messages, options)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))
