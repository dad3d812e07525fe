"""The ports: what the application needs from the outside world, as protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from domain.messages import ChatMessage, FunctionCallContent, FunctionResultContent
from domain.options import ChatOptions
from domain.responses import ChatResponse

__all__ = ["ChatPort", "ToolInvokerPort"]


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


class ToolInvokerPort(Protocol):
    """Runs the tool a function call names and returns its result for the same call id.

    Implementations do not raise for tool failures: a failure becomes a result with
    ``is_error=True`` and a stable error code, so the model can read it and recover.
    """

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent: ...
