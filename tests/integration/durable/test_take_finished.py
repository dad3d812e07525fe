"""A queued batch: each end handed out once, and a poll reads only the rows of those that ended."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS

from adapters.durable import Engine, EngineSettings, Outcome
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    TextContent,
    Usage,
    updates_of,
)
from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import runtime_over


class _AllButTheStuck:
    """Answers every request at once, but a meeting that says "stuck" waits for an answer that never comes."""

    def __init__(self) -> None:
        self.stuck = asyncio.Event()

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        if any("stuck" in message.text for message in messages):
            self.stuck.set()
            await asyncio.Event().wait()
        return ChatResponse(
            messages=(ChatMessage("assistant", (TextContent("Ann decided to ship."),)),),
            response_id="resp_1",
            model_id="m",
            status="completed",
            finish_reason="stop",
            usage=Usage(10, 5, 15),
        )

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


async def test_a_queued_batch_hands_out_each_end_once_and_polls_only_the_rows_of_the_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = _AllButTheStuck()
    runtime = runtime_over(chat)
    listed: list[str] = []
    list_workflows = DBOS.list_workflows_async

    async def counted(**filters: Any) -> list[Any]:
        statuses: list[Any] = await list_workflows(**filters)
        listed.extend(status.workflow_id for status in statuses)
        return statuses

    settings = EngineSettings(
        f"sqlite:///{tmp_path / 'runs.sqlite'}", "take-test", 2, traced=False, shared_queue=True
    )
    engine = await Engine.launch(settings, runtime)
    try:
        monkeypatch.setattr(DBOS, "list_workflows_async", counted)
        await engine.submit("quick", "Ann: We decided to ship.\n")
        await engine.submit("stuck", "Ben: I am stuck on the release.\n")
        handed: list[dict[str, Outcome]] = []
        async with asyncio.timeout(PROCESS_TIMEOUT):
            while not any(handed):
                await engine.wait(0.05)
                handed.append(await engine.take_finished())
            await chat.stuck.wait()
            for _ in range(3):  # polls while the stuck one runs
                await engine.wait(0.05)
                handed.append(await engine.take_finished())
    finally:
        engine.shutdown()

    ended = [outcome for polled in handed for outcome in polled.items()]
    assert [(id_, outcome.status, outcome.summary) for id_, outcome in ended] == [
        ("quick", "done", {"text": "Ann decided to ship."})
    ]
    # Every poll asked about the running one too; the database handed back only the row of the ended one.
    assert len(handed) >= 4
    assert listed == ["quick"]
