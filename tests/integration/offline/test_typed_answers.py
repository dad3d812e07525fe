"""A typed final answer through the container, a real adapter and the offline stand-in's HTTP server."""

from __future__ import annotations

import enum

import attrs
import pytest

from adapters.offline import OfflineResponsesServer
from application import ToolRegistry, output_schema
from domain import ChatMessage
from tests.integration.offline.support import ContainerFactory, bounded


class Stage(enum.Enum):
    PLANNED = "planned"
    DONE = "done"


@attrs.frozen
class Step:
    name: str
    stage: Stage
    owner: str | None


@attrs.frozen
class Plan:
    steps: tuple[Step, ...]
    ready: bool
    count: int


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_the_container_loop_reads_the_stand_ins_typed_answer(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    loop = containers("offline", streaming=streaming).tool_loop()
    run = await bounded(
        loop.run([ChatMessage.user("Plan the release.")], None, ToolRegistry(), output_type=Plan)
    )
    assert run.output == Plan((Step("offline", Stage.PLANNED, "offline"),), ready=False, count=0)
    assert run.output_mode == "json_schema"
    [request] = server.requests
    assert request.body["text"]["format"]["schema"] == output_schema(Plan)
    assert request.body["prompt_cache_key"].startswith("run_")
