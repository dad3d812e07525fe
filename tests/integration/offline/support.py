"""Helpers for the suites that run the container, adapters and pipelines against the offline endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import Final, Protocol, TypeVar

from dependency_injector import providers

from adapters.container import Container
from adapters.offline import OfflineResponsesServer
from application import ActionItem, Decision

T = TypeVar("T")

__all__ = [
    "API_KEY",
    "DECISIONS",
    "ECHO",
    "EXAMPLES",
    "GREETING",
    "STANDUP_ACTION_ITEMS",
    "bounded",
    "build_container",
    "connections_drained",
]

EXAMPLES: Final = Path(__file__).resolve().parents[3] / "examples"
API_KEY: Final = "sk-offline-PLANTED-7f3e91c2d4"
"""A marker key: any log record, error or repr that contains it has leaked the secret."""

ECHO: Final = "This is the offline stand-in model. Your message has 3 words: “hello offline world”."
"""The offline model's answer to ``hello offline world`` when no tools are offered."""
GREETING: Final = "hello offline world"
BOUND_SECONDS: Final = 60.0
"""Upper bound on any one exchange or pipeline run in these suites; a few seconds is typical."""

# Read off examples/standup-transcript.txt by hand: who committed to what, by when (as said).
STANDUP_ACTION_ITEMS: Final = frozenset(
    {
        ActionItem("Tom", "fix the flaky checkout test", "Wednesday", (13,)),
        ActionItem("Maya", "update the release notes", "Thursday noon", (15,)),
        ActionItem("Dev", "pair with Alex on the Android crash", "end of day", (19,)),
        ActionItem("Alex", "ping the design team about the empty-state icons", None, (21,)),
        ActionItem("Dev", "rotate the staging database credentials", "Friday", (23,)),
        # "for next Tuesday" says when the retro is, not when the booking is due.
        ActionItem("Priya", "book the retro room for next Tuesday", None, (39,)),
    }
)
DECISIONS: Final = (
    Decision("Ship 2.4 on Thursday without the new onboarding flow", (28,)),
    Decision("Move the stand-up to 9:45 starting next week", (32,)),
    Decision("Feature flags stay on in staging until the load test passes", (34,)),
)


async def bounded(awaitable: Awaitable[T], seconds: float = BOUND_SECONDS) -> T:
    """``awaitable``'s result, or TimeoutError after ``seconds``: a hung exchange must not hang the suite."""
    async with asyncio.timeout(seconds):
        return await awaitable


def build_container(
    server: OfflineResponsesServer,
    model: str,
    *,
    streaming: bool = True,
    max_retries: int = 0,
    timeout_seconds: float = 10.0,
) -> Container:
    """A container pointed at ``server`` with the planted API key, isolated from the real environment."""
    container = Container()
    container.environ.override(providers.Object({}))
    container.config.from_dict(
        {
            "agent": {
                "base_url": server.base_url,
                "api_key": API_KEY,
                "model": model,
                "use_streaming": streaming,
                "max_retries": max_retries,
                "timeout_seconds": timeout_seconds,
            }
        }
    )
    return container


async def connections_drained(
    server: OfflineResponsesServer, baseline: int = 0, within: float = 30.0
) -> bool:
    """Whether the server's open connections fall back to ``baseline`` within ``within`` seconds (polled:
    it returns as soon as they do, so the bound is hang protection for a loaded machine, not a speed bar)."""
    return await asyncio.to_thread(server.wait_for_connections, baseline, within)


class ContainerFactory(Protocol):
    """What the ``containers`` fixture hands a test: :func:`build_container` for the test's server."""

    def __call__(
        self, model: str, *, streaming: bool = True, max_retries: int = 0, timeout_seconds: float = 10.0
    ) -> Container: ...
