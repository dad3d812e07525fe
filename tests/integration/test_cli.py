"""The meeting-agents command end to end: real offline endpoint, real sockets, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.cli import EXIT_MODEL_FAILED, EXIT_OK, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPT = ROOT / "examples" / "standup-transcript.txt"
WORKFLOW = ROOT / "examples" / "release-workflow.json"
PLANTED_KEY = "sk-PLANTED-cli-9911"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("AGENT_"):
            monkeypatch.delenv(name)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def summary_section(out: str) -> str:
    """The part of the output that must not depend on the adapter: summary, items, decisions."""
    start = out.index("\nSummary\n")
    return out[start : out.index("\nTool calls")]


def test_summarize_guards_the_malformed_call_and_still_summarizes_correctly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(["summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments"], capsys)
    assert code == EXIT_OK, err
    assert "OFFLINE stand-in" in out
    assert "not a language model" in out
    assert "Mode: streaming (ResponsesSseAdapter)" in out
    assert out.count("GUARDED record_action_item") == 1
    assert "Tool calls (11, 1 guarded)" in out
    assert "Action items (6)" in out
    assert "Tom: fix the flaky checkout test (due Wednesday)" in out
    assert "Decisions (3)" in out
    assert "Token usage: input" in out


def test_json_adapter_gives_the_same_summary(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, streamed, _ = run(["summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments"], capsys)
    assert code == EXIT_OK
    monkeypatch.setenv("AGENT_USE_STREAMING", "false")
    code, plain, err = run(["summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments"], capsys)
    assert code == EXIT_OK, err
    assert "Mode: JSON (ResponsesJsonAdapter)" in plain
    assert summary_section(plain) == summary_section(streamed)


def test_flag_beats_environment(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_USE_STREAMING", "no")
    code, out, _ = run(["summarize", str(TRANSCRIPT), "--streaming"], capsys)
    assert code == EXIT_OK
    assert "Mode: streaming" in out


def test_edit_workflow_prints_a_diff_and_writes_the_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    output = tmp_path / "edited.json"
    instruction = (
        "add a step Smoke test of kind test after Build release candidate and remove Manual QA sign-off"
    )
    code, out, err = run(["edit-workflow", str(WORKFLOW), instruction, "--output", str(output)], capsys)
    assert code == EXIT_OK, err
    assert '-    {"id": "step-4", "name": "Manual QA sign-off"' in out or "-" in out
    edited = json.loads(output.read_text(encoding="utf-8"))
    names = [step["name"] for step in edited["steps"]]
    assert "Manual QA sign-off" not in names
    assert names.index("Smoke test") == names.index("Build release candidate") + 1
    assert "Tool calls" in out


@pytest.mark.parametrize(
    ("scenario", "error"),
    [
        ("response-failed", "ResponseFailedError"),
        ("error-event", "ResponseFailedError"),
        ("truncated-stream", "MalformedResponseError"),
        ("http-500", "ChatTransportError"),
    ],
)
def test_model_failures_are_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, scenario: str, error: str
) -> None:
    monkeypatch.setenv("AGENT_MAX_RETRIES", "0")
    code, _, err = run(["summarize", str(TRANSCRIPT), "--scenario", scenario], capsys)
    assert code == EXIT_MODEL_FAILED
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"meeting-agents: error: {error}: ")


def test_verbose_failure_shows_details_but_never_the_key(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_API_KEY", PLANTED_KEY)
    code, out, err = run(["summarize", str(TRANSCRIPT), "--scenario", "response-failed", "-v"], capsys)
    assert code == EXIT_MODEL_FAILED
    assert "Traceback" in err
    assert PLANTED_KEY not in out + err


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (
            ["summarize", "TRANSCRIPT"],
            {"AGENT_USE_STREAMING": "maybe"},
            "agent.use_streaming: expected one of",
        ),
        (["summarize", "TRANSCRIPT", "--scenario", "no-such"], {}, "--scenario: unknown scenario 'no-such'"),
        (["summarize", "missing.txt"], {}, "TRANSCRIPT_FILE: cannot read 'missing.txt'"),
        (
            ["summarize", "TRANSCRIPT", "--scenario", "http-500"],
            {"AGENT_BASE_URL": "http://127.0.0.1:9/v1"},
            "--scenario: applies only to the offline endpoint",
        ),
        (["edit-workflow", "TRANSCRIPT", "remove everything"], {}, "WORKFLOW_JSON: "),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    environ: dict[str, str],
    message: str,
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    code, _, err = run([str(TRANSCRIPT) if arg == "TRANSCRIPT" else arg for arg in argv], capsys)
    assert code == EXIT_USAGE
    assert len(err.strip().splitlines()) == 1
    assert message in err


def test_bad_config_file_value(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "agents.toml"
    config.write_text('[agent]\nmax_retries = "lots"\n', encoding="utf-8")
    code, _, err = run(["summarize", str(TRANSCRIPT), "--config", str(config)], capsys)
    assert code == EXIT_USAGE
    assert "agent.max_retries: expected a whole number, got 'lots'" in err


def test_console_script_runs_in_a_fresh_process(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("meeting-agents")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_")}
    done = subprocess.run(  # noqa: S603  # our own console script, fixed arguments
        [str(script), "summarize", str(TRANSCRIPT), "--no-streaming"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
        check=False,
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert "Mode: JSON" in done.stdout
    assert "Action items (6)" in done.stdout
    bad = subprocess.run(  # noqa: S603  # same
        [str(script), "summarize", str(TRANSCRIPT)],
        capture_output=True,
        text=True,
        env={**environ, "AGENT_USE_STREAMING": "perhaps"},
        timeout=120,
        check=False,
    )
    assert bad.returncode == EXIT_USAGE
    assert bad.stderr.strip() == (
        "meeting-agents: error: agent.use_streaming: expected one of true/false/1/0/yes/no, got 'perhaps'"
    )
