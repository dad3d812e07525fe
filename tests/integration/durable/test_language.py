"""`meeting-agents batch --language`: a summary in another language is another meeting's, and runs again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.cli.support import TRANSCRIPT
from tests.integration.durable.support import CountingGateway, gateway_environment, run_batch

pytestmark = pytest.mark.slow


def test_the_same_file_summarized_in_another_language_runs_again_and_once_only(
    tmp_path: Path, out: Path
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(TRANSCRIPT, folder / "standup.txt")

    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        plain = run_batch("batch", str(folder), "--out", str(out), environ=environ)
        first = len(gateway.completed)
        french = run_batch("batch", str(folder), "--out", str(out), "--language", "fr", environ=environ)
        second = len(gateway.completed)
        again = run_batch("batch", str(folder), "--out", str(out), "--language", "fr", environ=environ)

    assert plain.code == french.code == again.code == 0, french.err
    assert second > first, "a summary in French was taken for the one in the transcript's language"
    assert len(gateway.completed) == second, "the same file in the same language was summarized twice"
