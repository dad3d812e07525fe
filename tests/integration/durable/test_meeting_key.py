"""What a batch run is: another model is another run, and --rerun runs every meeting again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.durable.support import (
    REQUESTS_PER_TRANSCRIPT,
    TRANSCRIPTS,
    CountingGateway,
    gateway_environment,
    index,
    run_batch,
)

pytestmark = pytest.mark.slow


def test_a_changed_setting_runs_again_and_rerun_forces_it_and_the_index_names_the_key(
    folder: Path, out: Path
) -> None:
    each = len(TRANSCRIPTS) * REQUESTS_PER_TRANSCRIPT
    with CountingGateway() as gateway:
        environ = gateway_environment(gateway.base_url)
        first = run_batch("batch", str(folder), "--out", str(out), environ=environ)
        keys = {line["source"]: line["key"] for line in index(out)}
        changed = {**environ, "AGENT_MAX_OUTPUT_TOKENS": "4000"}
        other = run_batch("batch", str(folder), "--out", str(out), environ=changed)
        other_keys = {line["source"]: line["key"] for line in index(out)}
        sent_after_change = len(gateway.completed)
        same = run_batch("batch", str(folder), "--out", str(out), environ=changed)
        sent_after_same = len(gateway.completed)
        forced = run_batch(
            "batch", str(folder), "--out", str(out), "--rerun", "--format", "json", environ=changed
        )
    assert first.code == other.code == same.code == forced.code == 0, other.err + forced.err
    assert sent_after_change == 2 * each, "a run with another setting answered from the earlier run"
    assert sent_after_same == 2 * each, "the same command ran its meetings again"
    assert len(gateway.completed) == 3 * each, "--rerun did not run every meeting again"
    assert forced.json()["done"] == len(TRANSCRIPTS)
    assert forced.json()["already_done"] == 0
    assert keys.keys() == other_keys.keys()
    assert all(keys[source] != other_keys[source] for source in keys)
    assert {line["source"]: line["key"] for line in index(out)} == other_keys
