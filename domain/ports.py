"""The ports: what the application needs from the outside world, as protocols."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from domain.messages import ChatMessage, FunctionCallContent, FunctionResultContent
from domain.options import ChatOptions
from domain.responses import ChatResponse, ChatResponseUpdate

__all__ = ["ChatPort", "StreamingChatPort", "ToolInvokerPort"]


class ChatPort(Protocol):
    """Sends a conversation to a model and returns its complete answer.

    Implementations raise only :class:`domain.errors.ChatError` subclasses:
    ``ResponseFailedError`` when the provider reports a failure, ``MalformedResponseError`` when
    the body cannot be read as a response, ``ChatTransportError`` when HTTP itself fails. Each
    carries what had arrived before the failure in ``partial``.
    """

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse: ...


class StreamingChatPort(ChatPort, Protocol):
    """A :class:`ChatPort` that can also hand over its answer piece by piece, as it arrives.

    ``get_streaming_response`` yields :class:`ChatResponseUpdate`s; folding them with
    :meth:`ChatResponse.from_updates` gives what ``get_response`` returns for the same answer.
    Leaving the iteration early (``break`` then ``aclose()``, or cancellation) releases the
    connection. Failures raise the same :class:`domain.errors.ChatError` subclasses from the
    iterator, with what had arrived in ``partial``.
    """

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]: ...


class ToolInvokerPort(Protocol):
    """Runs the tool a function call names and returns its result for the same call id.

    Implementations do not raise for tool failures: a failure becomes a result with
    ``is_error=True`` and a stable error code, so the model can read it and recover.
    """

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent: ...
