"""``python -m benchmarks.durable --profile`` splits a batch's CPU by owner (no timing asserted)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from benchmarks import durable
from benchmarks.durable_profile import OWNERS, _owner

SITE = Path(sys.prefix, "lib", "python3", "site-packages")
ROOT = Path(durable.__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("func", "owner"),
    [
        ((str(SITE / "dbos" / "_core.py"), 1, "invoke_step"), "DBOS"),
        ((str(SITE / "sqlalchemy" / "engine" / "base.py"), 1, "_execute_context"), "SQLAlchemy + sqlite3"),
        (("~", 0, "<method 'execute' of 'sqlite3.Cursor' objects>"), "SQLAlchemy + sqlite3"),
        ((str(SITE / "openai" / "_client.py"), 1, "post"), "OpenAI SDK"),
        ((str(SITE / "cattrs" / "converters.py"), 1, "structure"), "ours: cattrs"),
        ((str(ROOT / "adapters" / "durable" / "steps.py"), 1, "scrubbed"), "ours: scrubbing (Redactor)"),
        ((str(ROOT / "application" / "scrubbing.py"), 1, "_rebuilt"), "ours: scrubbing (Redactor)"),
        ((str(ROOT / "adapters" / "redaction.py"), 1, "contains_secret"), "ours: scrubbing (Redactor)"),
        (
            (str(ROOT / "adapters" / "durable" / "engine.py"), 1, "serialize"),
            "ours: step and workflow values (pickle, base64)",
        ),
        (
            (str(ROOT / "adapters" / "durable" / "engine.py"), 1, "submit"),
            "ours: the durable adapter (engine, steps)",
        ),
        (
            (str(ROOT / "application" / "loop.py"), 1, "run"),
            "ours: the pipeline (application, domain, adapters)",
        ),
        (("/usr/lib/python3.11/asyncio/base_events.py", 1, "_run_once"), "event loop"),
        (("/usr/lib/python3.11/concurrent/futures/thread.py", 1, "submit"), "thread hand-offs"),
        (("/usr/lib/python3.11/json/decoder.py", 1, "decode"), None),  # its callers'
        (("~", 0, "<built-in method _pickle.dumps>"), None),
    ],
)
def test_each_function_has_the_owner_of_its_file(func: tuple[str, int, str], owner: str | None) -> None:
    assert _owner(func) == owner
    assert owner is None or owner in OWNERS


def _split(report: str, heading: str) -> dict[str, float]:
    """The milliseconds a transcript per owner under ``heading`` in the report."""
    section = report.split(f"{heading}: ", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^  (.+?)\s+-?[\d.]+%\s+(-?[\d.]+) ms a transcript$", section, re.MULTILINE)
    return {owner: float(ms) for owner, ms in rows}


def test_the_profile_splits_a_batchs_cpu_between_dbos_sqlite_and_ours(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert durable.main(["--profile", "--batch", "4", "--top", "5"]) == 0

    report = capsys.readouterr().out
    plain = _split(report, "plain asyncio")
    dbos = _split(report, "DBOS on SQLite")
    more = _split(report, "DBOS on SQLite over plain asyncio")
    # Plain asyncio runs no engine; on DBOS the engine, its database and our scrubbing all take CPU.
    assert "DBOS" not in plain
    assert "SQLAlchemy + sqlite3" not in plain
    assert plain["ours: the pipeline (application, domain, adapters)"] > 0
    for owner in ("DBOS", "SQLAlchemy + sqlite3", "ours: scrubbing (Redactor)", "thread hand-offs"):
        assert dbos[owner] > 0, owner
    for owner in ("DBOS", "SQLAlchemy + sqlite3"):
        assert more[owner] == dbos[owner], owner  # nothing of it in the plain batch
    assert set(dbos) <= set(OWNERS)
    assert "function calls" in report  # then the hot spots


def test_the_command_profile_shows_the_sdks_share_on_both_sides(capsys: pytest.CaptureFixture[str]) -> None:
    assert durable.main(["--profile", "--command", "--batch", "2", "--top", "5"]) == 0

    report = capsys.readouterr().out
    plain = _split(report, "plain asyncio")
    dbos = _split(report, "DBOS on SQLite")
    # Both sides send their requests through the OpenAI SDK to the offline stand-in; only one runs DBOS.
    assert plain["OpenAI SDK"] > 0
    assert dbos["OpenAI SDK"] > 0
    assert "DBOS" not in plain
    assert dbos["DBOS"] > 0
    assert dbos["SQLAlchemy + sqlite3"] > 0
    # No thread of the plain batch is charged for time it spent blocked (CPU clocks, per thread).
    assert plain.get("thread hand-offs", 0.0) < plain["OpenAI SDK"]


def test_the_split_times_dboss_database_calls_and_sqlalchemys_steps_within_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert durable.main(["--split", "--batch", "2", "--runs", "1"]) == 0

    report = capsys.readouterr().out
    counts = re.search(r"([\d.]+) statements and ([\d.]+) commits a transcript", report)
    assert counts is not None, report
    # Each of a transcript's five steps (two requests, three tool calls) checks and records.
    assert float(counts[1]) >= 10
    assert float(counts[2]) >= 5
    rows = dict(re.findall(r"^  ( *\S.+?)\s+-?[\d.]+%\s+(-?[\d.]+) ms a transcript$", report, re.MULTILINE))
    calls = float(rows["DBOS's database calls (a step's check and record, a workflow's start and end)"])
    # One level in: the parts of those calls (deeper: the parts of SQLAlchemy's execution).
    inner = [float(value) for label, value in rows.items() if re.match("  \\S", label)]
    assert calls > 0
    assert len(inner) == 6, rows
    assert sum(inner) == pytest.approx(calls, abs=0.05)  # what is timed inside them, and the rest
