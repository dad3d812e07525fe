"""The engine in this process: what launching and stopping DBOS leaves behind in the host's event loop."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from pathlib import Path

import pytest

from adapters.durable import Engine, EngineSettings, Runtime
from adapters.redaction import Redactor
from adapters.scripted import ScriptedChat
from application import SummaryAgent


def _runtime() -> Runtime:
    chat = ScriptedChat()
    return Runtime(
        summary_agent=lambda: SummaryAgent(chat),
        chat=chat,
        render=lambda summary: {},
        describe=str,
        redactor=Redactor(),
        spending=lambda run: {},
    )


def _settings(folder: Path, name: str) -> EngineSettings:
    return EngineSettings(f"sqlite:///{folder / name}.sqlite", "engine-test", 1, traced=False)


async def test_after_shutdown_the_loop_runs_work_in_threads_again(tmp_path: Path) -> None:
    engine = await Engine.launch(_settings(tmp_path, "runs"), _runtime())
    try:
        # A DBOS call from the loop makes DBOS's thread pool the loop's default executor.
        assert await engine.finished(["no-such-workflow"]) == {}
        assert await asyncio.to_thread(sum, [1, 2]) == 3
    finally:
        engine.shutdown()

    # DBOS shut its pool down; the loop has one of its own again (the benchmark suite, one loop, broke here).
    assert await asyncio.to_thread(sum, [3, 4]) == 7


async def test_a_second_engine_in_the_same_loop_runs_after_the_first(tmp_path: Path) -> None:
    for round_ in range(2):
        engine = await Engine.launch(_settings(tmp_path, str(round_)), _runtime())
        try:
            assert await engine.finished([f"none-{round_}"]) == {}
        finally:
            engine.shutdown()
        assert await asyncio.to_thread(str, round_) == str(round_)


async def test_a_launch_after_the_stderr_of_an_earlier_one_was_closed_logs_to_the_current_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dbos_logger = logging.getLogger("dbos")
    # As in a fresh process: DBOS makes its console handler at the next launch, on the stderr of then.
    monkeypatch.setattr(dbos_logger, "handlers", [])
    captured = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with monkeypatch.context() as patched:
        patched.setattr(sys, "stderr", captured)  # a host capturing stderr around its first run
        first = await Engine.launch(_settings(tmp_path, "first"), _runtime())
        first.shutdown()
    captured.close()

    second = await Engine.launch(_settings(tmp_path, "second"), _runtime())
    try:
        assert await second.finished(["no-such-workflow"]) == {}
    finally:
        second.shutdown()
    assert [getattr(handler, "stream", None) for handler in dbos_logger.handlers] == [sys.stderr]
