"""What each request of a run sends: the whole history or only what is new, and the run's cache key."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final, Literal, TypeAlias

import attrs

from domain import ChatError, ChatMessage, ChatOptions, ChatResponse, ChatTransportError

__all__ = ["CONVERSATION_STATES", "Conversation", "ConversationState", "run_id_for"]

ConversationState: TypeAlias = Literal["client", "server"]
"""Where a run's conversation lives between its requests: ``client``, every request sends the whole
history; ``server``, the provider stores each response and a request after the first sends
``previous_response_id`` and only the items new since that response."""

CONVERSATION_STATES: Final[tuple[ConversationState, ...]] = ("client", "server")

# What a 400 about a stored response names: OpenAI's code, or the parameter itself.
_CHAIN_REFUSED: Final = ("previous_response_not_found", "previous_response_id")


def run_id_for(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
    """A run's id, named by what the run starts from: the conversation it is handed and the options it
    asks with (instructions, tools, model, answer format), the cache key aside.

    Its requests' ``prompt_cache_key`` is made from it and a resumed run keeps it. The same start gives
    the same id in any process, so a run asked again (a rerun, a durable step recovered after a
    crash, a recorded run replayed) sends the very requests it sent before, and runs that start
    alike meet in the provider's cache.
    """
    start = repr((tuple(messages), attrs.evolve(options, prompt_cache_key=None)))
    return "run_" + hashlib.sha256(start.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@attrs.define
class Conversation:
    """One run's requests as the provider sees them.

    Every request carries the run's ``prompt_cache_key`` (the host's ``ChatOptions.prompt_cache_key``
    when it set one) and ``prompt_cache_retention`` when configured. In ``server`` state each request
    is stored (``store: true``) and, once a response has an id, the next sends ``previous_response_id``
    and only the messages after that response's own. A 400 about the stored response (expired,
    deleted, or a route that keeps none) is answered once by sending the whole history without it,
    which the run always holds; a chained request right after such a resend is not resent again.
    """

    state: ConversationState
    cache_key: str
    retention: str | None = None
    # The last response the provider stored, and how many messages of the conversation it covers.
    previous_id: str | None = None
    covered: int = 0
    # The next request goes whole: the provider refused the last chained one.
    whole: bool = False
    # The last request was such a resend: a refused chain right after it is not resent again.
    resent: bool = False

    def request(
        self, conversation: Sequence[ChatMessage], options: ChatOptions
    ) -> tuple[Sequence[ChatMessage], ChatOptions]:
        """The messages to send and the options to send them with."""
        if options.prompt_cache_key is None:
            options = attrs.evolve(options, prompt_cache_key=self.cache_key)
        if self.retention is not None and options.prompt_cache_retention is None:
            options = attrs.evolve(options, prompt_cache_retention=self.retention)
        if self.state == "client":
            return conversation, options
        options = attrs.evolve(options, store=True)
        if self.previous_id is None or self.whole:
            return conversation, options
        return conversation[self.covered :], attrs.evolve(options, previous_response_id=self.previous_id)

    def answered(self, response: ChatResponse, covered: int) -> None:
        """``response`` arrived; the conversation holds ``covered`` messages up to its end."""
        self.resent = self.whole
        self.whole = False
        if self.state == "server":
            self.previous_id = response.response_id
            self.covered = covered

    def resend_whole(self, error: ChatError) -> bool:
        """Whether the request that failed with ``error`` goes again, whole: only a chained request the
        provider refused for its ``previous_response_id``, and not right after a resend."""
        if self.state != "server" or self.previous_id is None or self.whole or self.resent:
            return False
        if not isinstance(error, ChatTransportError) or error.status_code != 400:
            return False
        if not any(name in error.message for name in _CHAIN_REFUSED):
            return False
        self.whole = True
        return True
