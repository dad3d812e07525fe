"""A host runs a durable batch with the composition beside the container, never importing the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import (
    TRANSCRIPTS,
    CountingGateway,
    gateway_environment,
)
from tests.support.processes import python_module, start

pytestmark = pytest.mark.slow


def test_a_host_runs_a_batch_without_the_command_line(tmp_path: Path, folder: Path) -> None:
    files = [str(folder / name) for name in sorted(TRANSCRIPTS)]
    database = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    with CountingGateway() as gateway:
        host = start(
            python_module("tests.integration.durable.host_batch", database, *files),
            environ=gateway_environment(gateway.base_url),
        )
        out, err = host.communicate(timeout=PROCESS_TIMEOUT)
        completed = len(gateway.completed)
    assert host.returncode == 0, err.decode("utf-8")
    result = json.loads(out.decode("utf-8").splitlines()[-1])
    assert result["cli_modules"] == []
    assert sorted(result["outcomes"]) == sorted(TRANSCRIPTS)
    assert {outcome["status"] for outcome in result["outcomes"].values()} == {"done"}
    # Each meeting's decision, read from its own transcript by the stand-in.
    assert result["outcomes"]["standup.txt"]["decisions"], result
    assert completed >= len(TRANSCRIPTS)
