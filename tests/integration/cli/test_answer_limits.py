"""The command names the setting behind a run that ended at an answer it must not act on (exit 3)."""

from __future__ import annotations

from pathlib import Path

from adapters.cli import EXIT_INCOMPLETE
from tests.integration.cli.support import run

MEETING = (
    "Ana: We decided to ship on Monday.\n"
    "Ben: I will write the release notes by Friday.\n"
    "Ana: I will book the room.\n"
)


def test_an_answer_with_more_calls_than_the_limit_exits_3_naming_the_setting(tmp_path: Path) -> None:
    transcript = tmp_path / "meeting.txt"
    transcript.write_text(MEETING, encoding="utf-8")

    ran = run("summarize", str(transcript), "--format", "json", environ={"AGENT_MAX_CALLS_PER_RESPONSE": "1"})

    assert ran.code == EXIT_INCOMPLETE, ran.err
    assert ran.json()["stop_reason"] == "too_many_calls"
    assert ran.json()["action_items"] == []
    assert "(too_many_calls: agent.max_calls_per_response)" in ran.err
