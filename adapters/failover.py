"""A ChatPort decorator: a request the gateway fails goes on to the next target of ``agent.fallbacks``."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Final

import attrs
from opentelemetry.util.types import AttributeValue

from adapters.redaction import Redactor
from adapters.telemetry import annotate_request, server_of
from adapters.telemetry import conventions as c
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
)

__all__ = ["FailedTarget", "FailoverChat", "Target", "failed_targets", "fails_over"]

_LOGGER: Final = logging.getLogger("adapters.failover")
# How a gateway says it does not know the model it was asked for: LiteLLM's proxy ("Invalid model name
# passed in model=..."; "No deployments available", "There are no healthy deployments" from its
# router), OpenAI (code model_not_found, "The model `x` does not exist").
_UNKNOWN_MODEL: Final = re.compile(
    r"invalid model name|model_not_found|no (healthy )?deployments|unknown model"
    r"|\bmodel\b[^.;]{0,200}\b(does not exist|not found)",
    re.IGNORECASE,
)


@attrs.frozen
class Target:
    """One place a request can go: its chat (an adapter with its own client), its name, and where it
    is. ``deadline_seconds`` is its own bound on one request, on top of what the request has left."""

    name: str
    chat: ChatPort
    model: str
    base_url: str | None = None
    deadline_seconds: float | None = None


@attrs.frozen
class FailedTarget:
    """A target that failed a request, and the error it failed with (already scrubbed of secrets)."""

    name: str
    error: ChatError


def fails_over(error: ChatError) -> bool:
    """Whether another target may answer a request that ``error`` ended.

    Yes for what the gateway or the road to it did, after the target's own retries: no answer at all
    (a refused or broken connection, a timeout, the target's deadline), a 5xx, a 429 (the SDK retries
    one whose Retry-After fits the deadline; what is left would outlast it) and a model or route the
    gateway does not know (404, or a 400 saying the model is unknown). No for what another target
    would answer the same (a bad request, a refused key, a failed or unreadable answer).
    """
    if not isinstance(error, ChatTransportError):
        return False
    status = error.status_code
    if status is None or status >= 500 or status in (404, 429):
        return True
    return status == 400 and _UNKNOWN_MODEL.search(error.message) is not None


def failed_targets(error: ChatError) -> tuple[FailedTarget, ...]:
    """Every target that failed the request ``error`` ended, in order (empty without failover)."""
    tried = getattr(error, "tried", ())
    return tuple(tried) if isinstance(tried, tuple) else ()


class FailoverChat:
    """A ``ChatPort`` that sends each request to its targets in order until one answers.

    The first target is the gateway of the ``agent`` section (``primary``); a failure that
    :func:`fails_over` sends the request to the next one, within one deadline for all of them
    (``deadline_seconds``, or the request options' when shorter). A stream goes on elsewhere only while
    nothing of it has reached the caller: once an update is yielded, a failure is raised as it is.
    The answer's ``served_by`` names the target that gave it. When every target fails (or one fails in
    a way another would not mend), the last error is raised, a copy whose message lists each target's
    failure and whose ``tried`` (see :func:`failed_targets`) holds them.
    """

    def __init__(
        self,
        targets: Sequence[Target],
        *,
        deadline_seconds: float,
        redactor: Redactor | None = None,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not targets:
            raise ValueError("FailoverChat needs at least one target")
        self._clock = clock
        self._targets = tuple(targets)
        self._deadline_seconds = deadline_seconds
        self._redactor = redactor or Redactor()
        self._logger = logger or _LOGGER

    def __repr__(self) -> str:
        return f"FailoverChat({', '.join(target.name for target in self._targets)})"

    @property
    def targets(self) -> tuple[Target, ...]:
        return self._targets

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        failures: list[FailedTarget] = []
        for index, target, asked in self._tries(options):
            try:
                response = await target.chat.get_response(messages, asked)
            except ChatError as error:
                failures.append(FailedTarget(target.name, error))
                if not self._goes_on(index, error):
                    break
                continue
            self._answered(target, failures)
            return attrs.evolve(response, served_by=target.name)
        raise self._exhausted(failures)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        failures: list[FailedTarget] = []
        for index, target, asked in self._tries(options):
            updates = aiter(target.chat.get_streaming_response(messages, asked))
            handed = False
            try:
                async for update in updates:
                    if not handed:
                        handed = True
                        self._answered(target, failures)
                        update = attrs.evolve(update, served_by=target.name)
                    yield update
                return
            except ChatError as error:
                if handed:
                    # Something of this answer reached the caller: it is never asked for elsewhere.
                    raise
                failures.append(FailedTarget(target.name, error))
                if not self._goes_on(index, error):
                    break
            finally:
                close = getattr(updates, "aclose", None)
                if close is not None:
                    await close()
        raise self._exhausted(failures)

    def _tries(self, options: ChatOptions | None) -> Iterator[tuple[int, Target, ChatOptions]]:
        """Each target in turn, with its index and the options it is asked with, while time is left."""
        deadline = self._deadline(options)
        for index, target in enumerate(self._targets):
            asked = self._options(index, target, options, deadline)
            if asked is None:
                return
            yield index, target, asked

    def _deadline(self, options: ChatOptions | None) -> float:
        """The time (on ``clock``) by which every target together must have answered."""
        seconds = self._deadline_seconds
        asked = options.deadline_seconds if options is not None else None
        if asked is not None:
            seconds = min(seconds, asked)
        return self._clock() + max(seconds, 0.0)

    def _options(
        self, index: int, target: Target, options: ChatOptions | None, deadline: float
    ) -> ChatOptions | None:
        """The options ``target`` is asked with: the time left (and its own bound), and, past the
        first, its own model rather than one the options name; None when no time is left."""
        left = deadline - self._clock()
        if index and left <= 0:
            return None
        if target.deadline_seconds is not None:
            left = min(left, target.deadline_seconds)
        asked = options or ChatOptions()
        return attrs.evolve(asked, deadline_seconds=max(left, 0.0), model=asked.model if index == 0 else None)

    def _goes_on(self, index: int, error: ChatError) -> bool:
        """Whether the next target is asked after target ``index`` failed with ``error``."""
        following = index + 1 < len(self._targets)
        if not (following and fails_over(error)):
            return False
        failed, following_target = self._targets[index], self._targets[index + 1]
        status = error.status_code if isinstance(error, ChatTransportError) else None
        self._logger.warning(
            "Failover: %s failed (%s), trying %s",
            failed.name,
            status if status is not None else type(error).__name__,
            following_target.name,
            extra={
                "target": failed.name,
                "error_type": type(error).__name__,
                "status_code": status,
                "next_target": following_target.name,
            },
        )
        annotate_request(
            {c.FAILOVER_TARGET: failed.name, c.ERROR_TYPE: type(error).__name__},
            event=c.FAILOVER_EVENT,
        )
        return True

    def _answered(self, target: Target, failures: Sequence[FailedTarget]) -> None:
        self._logger.info(
            "Answered by %s (model %s%s)%s",
            target.name,
            target.model,
            f" at {target.base_url}" if target.base_url else "",
            f" after {len(failures)} failed target(s)" if failures else "",
            extra={"target": target.name, "failed_targets": len(failures)},
        )
        attributes: dict[str, AttributeValue] = {
            c.FAILOVER_TARGET: target.name,
            c.FAILOVER_FAILED_TARGETS: len(failures),
        }
        host, port = server_of(target.base_url)
        if host is not None:
            # The span names the server that answered, which is not the primary's after a failover.
            attributes[c.SERVER_ADDRESS] = host
            if port is not None:
                attributes[c.SERVER_PORT] = port
        annotate_request(attributes)

    def _exhausted(self, failures: Sequence[FailedTarget]) -> ChatError:
        """The last failure's error, or when more than one target was tried a copy of it listing every
        target's, caused by it."""
        last = failures[-1].error
        if len(failures) == 1:
            return last
        listed = "; ".join(f"{f.name}: {type(f.error).__name__}: {f.error.message}" for f in failures)
        message = self._redactor.redact(f"{last.message} [every target tried failed: {listed}]")
        cls = type(last)
        failure = cls.__new__(cls, message)
        failure.__dict__.update(last.__dict__)
        failure.args = (message,)
        failure.message = message
        failure.__dict__["tried"] = tuple(failures)
        failure.__cause__ = last
        return failure
