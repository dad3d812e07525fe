"""A batch meeting's key: everything that changes its summary changes it, nothing else does."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import attrs
import pytest

from adapters.cli.meetings.batch import collect_sources, meeting_basis
from adapters.settings import FallbackTarget, Secret, Settings, resolve_settings
from application.meetings import summary

_TEXT = "Ana: We decided to ship on Friday.\nBo: I will update the changelog.\n"


def _key(folder: Path, settings: Settings) -> str:
    (folder / "one.txt").write_text(_TEXT, encoding="utf-8")
    [source] = collect_sources([str(folder / "one.txt")], io.BytesIO(), basis=meeting_basis(settings))
    return source.key


@pytest.mark.parametrize(
    "changed",
    [
        {"model": "gpt-5-mini"},
        {
            "fallbacks": (
                FallbackTarget(base_url="http://127.0.0.1:1/v1", model="other", api_key=Secret("sk-x")),
            )
        },
        {"summary_language": "fr"},
        {"chunk_chars": 1_000},
        {"reasoning_effort": "high"},
        {"max_output_tokens": 512},
        {"max_tool_iterations": 7},
        {"max_output_retries": 3},
        {"detailed_tool_errors": True},
        {"offline_scenario": "malformed-arguments"},
    ],
    ids=lambda changed: next(iter(changed)),
)
def test_a_setting_that_changes_the_summary_changes_the_key(tmp_path: Path, changed: dict[str, Any]) -> None:
    settings = resolve_settings(environ={})
    other = attrs.evolve(settings, agent=attrs.evolve(settings.agent, **changed))
    assert _key(tmp_path, settings) != _key(tmp_path, other)


@pytest.mark.parametrize(
    "changed",
    [{"batch_concurrency": 9}, {"timeout_seconds": 5.0}, {"telemetry": False}, {"use_streaming": False}],
    ids=lambda changed: next(iter(changed)),
)
def test_a_setting_that_does_not_change_the_summary_keeps_the_key(
    tmp_path: Path, changed: dict[str, Any]
) -> None:
    settings = resolve_settings(environ={})
    other = attrs.evolve(settings, agent=attrs.evolve(settings.agent, **changed))
    assert _key(tmp_path, settings) == _key(tmp_path, other)


@pytest.mark.parametrize("part", ["PROMPT_VERSION", "instructions", "tools"])
def test_a_new_prompt_version_instructions_or_tools_change_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str
) -> None:
    settings = resolve_settings(environ={})
    before = _key(tmp_path, settings)
    if part == "PROMPT_VERSION":
        monkeypatch.setattr("adapters.cli.meetings.batch.PROMPT_VERSION", summary.PROMPT_VERSION + 1)
    elif part == "instructions":
        monkeypatch.setattr(
            "adapters.cli.meetings.batch.summary_instructions",
            lambda language: summary.summary_instructions(language) + "!",
        )
    else:
        specs = summary.summary_tool_specs()
        renamed = (attrs.evolve(specs[0], description=specs[0].description + " (v2)"), *specs[1:])
        monkeypatch.setattr("adapters.cli.meetings.batch.summary_tool_specs", lambda: renamed)
    assert _key(tmp_path, settings) != before


def test_the_same_command_keys_the_same_meeting_alike(tmp_path: Path) -> None:
    # What a rerun after a kill relies on to find the workflows the killed run started.
    assert _key(tmp_path, resolve_settings(environ={})) == _key(tmp_path, resolve_settings(environ={}))
