"""--record, --replay and eval: a run kept as a cassette answers again with no gateway, and labelled
meetings give figures a team can hold a line on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.cli import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from adapters.evals import builtin_dataset
from tests.integration.cli.support import TRANSCRIPT, WORKFLOW, run

DATASET_LINE = {
    "transcript": TRANSCRIPT.read_text(encoding="utf-8"),
    "action_items": [
        {"owner": "Tom", "task": "fix the flaky checkout test"},
        {"owner": "Maya", "task": "update the release notes"},
        {"owner": "Dev", "task": "pair with Alex on the Android crash"},
        {"owner": "Alex", "task": "ping the design team about the empty-state icons"},
        {"owner": "Dev", "task": "rotate the staging database credentials"},
        {"owner": "Priya", "task": "book the retro room for next Tuesday"},
    ],
    "decisions": [
        "ship 2.4 on Thursday without the new onboarding flow",
        "move the stand-up to 9:45 starting next week",
        "feature flags stay on in staging until the load test passes",
    ],
}


@pytest.mark.parametrize("streaming", ["--streaming", "--no-streaming"])
def test_summarize_replays_what_it_recorded(tmp_path: Path, streaming: str) -> None:
    recorded = run("summarize", str(TRANSCRIPT), "--format", "json", "--record", str(tmp_path), streaming)
    replayed = run("summarize", str(TRANSCRIPT), "--format", "json", "--replay", str(tmp_path))

    assert recorded.code == EXIT_OK, recorded.err
    assert replayed.code == EXIT_OK, replayed.err
    assert replayed.json() == recorded.json()
    assert recorded.json()["action_items"]
    assert [path.suffix for path in tmp_path.iterdir()] == [".jsonl"]


def test_edit_workflow_replays_what_it_recorded(tmp_path: Path) -> None:
    argv = (
        "edit-workflow",
        str(WORKFLOW),
        "remove Manual QA sign-off",
        "--approve",
        "all",
        "--format",
        "json",
    )
    recorded = run(*argv, "--record", str(tmp_path))
    replayed = run(*argv, "--replay", str(tmp_path))

    assert recorded.code == EXIT_OK, recorded.err
    assert replayed.json() == recorded.json()


def test_a_request_the_cassette_does_not_hold_exits_2_with_a_diff(tmp_path: Path) -> None:
    run("summarize", str(TRANSCRIPT), "--record", str(tmp_path))
    ran = run(
        "summarize", str(TRANSCRIPT), "--replay", str(tmp_path), "--scenario", "malformed-arguments", "-v"
    )

    assert ran.code == EXIT_USAGE
    assert "replay: the cassette holds no such POST /v1/responses request" in ran.err
    assert '+ "model": "offline:malformed-arguments"' in ran.err.replace("  ", " ")
    assert ran.out == ""


def test_replay_from_nowhere_is_bad_input(tmp_path: Path) -> None:
    ran = run("summarize", str(TRANSCRIPT), "--replay", str(tmp_path / "missing"))
    assert ran.code == EXIT_USAGE
    assert "--replay" in ran.err


def _evaluate(*argv: str) -> tuple[int, dict[str, Any], str]:
    ran = run("eval", *argv, "--format", "json")
    return ran.code, json.loads(ran.out) if ran.out else {}, ran.err


def test_eval_with_no_dataset_scores_the_built_in_meetings() -> None:
    code, figures, err = _evaluate()

    assert code == EXIT_OK, err
    assert len(figures["meetings"]) == len(builtin_dataset()) == 24
    items = figures["action_items"]
    assert items["labelled"] == sum(len(m.action_items) for m in builtin_dataset())
    assert items["recall"] == items["matched"] / items["labelled"]
    assert 0 < items["recall"] <= 1
    assert figures["requests"] == sum(m["requests"] for m in figures["meetings"])


def test_a_fake_label_lowers_recall_by_exactly_its_share(tmp_path: Path) -> None:
    honest, padded = tmp_path / "honest.jsonl", tmp_path / "padded.jsonl"
    honest.write_text(json.dumps(DATASET_LINE) + "\n", encoding="utf-8")
    fake = {
        **DATASET_LINE,
        "action_items": [*DATASET_LINE["action_items"], {"owner": "Zed", "task": "buy a boat"}],
    }
    padded.write_text(json.dumps(fake) + "\n", encoding="utf-8")

    _, first, _ = _evaluate(str(honest))
    _, second, _ = _evaluate(str(padded))

    assert first["action_items"]["recall"] == 1.0, "the stand-in finds every item of the standup"
    assert second["action_items"]["recall"] == first["action_items"]["matched"] / (
        first["action_items"]["labelled"] + 1
    )
    assert second["action_items"]["precision"] == first["action_items"]["precision"]


def test_thresholds_exit_3_when_missed(tmp_path: Path) -> None:
    dataset = tmp_path / "one.jsonl"
    fake = {
        **DATASET_LINE,
        "action_items": [*DATASET_LINE["action_items"], {"owner": "Zed", "task": "buy a boat"}],
    }
    dataset.write_text(json.dumps(fake) + "\n", encoding="utf-8")

    missed = run("eval", str(dataset), "--min-recall", "0.9")
    held = run("eval", str(dataset), "--min-recall", "0.8", "--min-precision", "0.9")

    assert missed.code == EXIT_INCOMPLETE
    assert "missed: action items recall 0.857 < --min-recall 0.9" in missed.err
    assert "decisions" not in missed.err
    assert held.code == EXIT_OK, held.err
    assert "action items: precision 1.000, recall 0.857 (6 matched, 6 found, 7 labelled)" in held.out


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json\n", "DATASET {path}:1: not JSON"),
        ('{"transcript": "Ann: hi"}\n{"action_items": []}\n', "DATASET {path}:2: transcript"),
        ("\n", "DATASET {path}: holds no labelled meeting"),
    ],
)
def test_a_dataset_that_cannot_be_read_exits_2_naming_its_line(
    tmp_path: Path, content: str, problem: str
) -> None:
    dataset = tmp_path / "bad.jsonl"
    dataset.write_text(content, encoding="utf-8")
    ran = run("eval", str(dataset))
    assert ran.code == EXIT_USAGE
    assert problem.format(path=dataset) in ran.err


def test_an_eval_replays_what_it_recorded(tmp_path: Path) -> None:
    dataset = tmp_path / "one.jsonl"
    dataset.write_text(json.dumps(DATASET_LINE) + "\n", encoding="utf-8")
    cassettes = tmp_path / "cassettes"

    code, recorded, err = _evaluate(str(dataset), "--record", str(cassettes))
    again, replayed, err_again = _evaluate(str(dataset), "--replay", str(cassettes))

    assert (code, again) == (EXIT_OK, EXIT_OK), err + err_again

    def without_time(figures: dict[str, Any]) -> dict[str, Any]:
        meetings = [{k: v for k, v in m.items() if k != "seconds"} for m in figures["meetings"]]
        return {**{k: v for k, v in figures.items() if k != "seconds"}, "meetings": meetings}

    assert without_time(replayed) == without_time(recorded)
