"""Fixtures for the offline-endpoint suite: one server per test, in either stream dialect."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

import pytest

from adapters.container import Container
from adapters.offline import OfflineResponsesServer
from tests.integration.offline.support import ContainerFactory, build_container, connections_drained


@pytest.fixture(params=["openai", "litellm"])
def server(request: pytest.FixtureRequest) -> Iterator[OfflineResponsesServer]:
    dialect: Literal["openai", "litellm"] = request.param
    with OfflineResponsesServer(dialect=dialect) as running:
        yield running


@pytest.fixture
async def containers(server: OfflineResponsesServer) -> AsyncIterator[ContainerFactory]:
    """Builds containers against the server (see :func:`build_container`); closes them all afterwards
    and checks that closing left no connection open on the server."""
    built: list[Container] = []

    def build(model: str, **options: Any) -> Container:
        built.append(build_container(server, model, **options))
        return built[-1]

    yield build
    for container in built:
        await container.aclose()
        container.reset_override()
    assert await connections_drained(server), f"{server.open_connections} connections left open"
