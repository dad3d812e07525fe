"""The benchmark suite runs end to end on tiny bodies and reports every figure (no timing asserted)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import benchmarks.__main__ as bench_cli
from benchmarks.bodies import make_body
from benchmarks.suite import Check, Sizes

TINY = Sizes(fold=20, scaling=(10, 20, 40), memory=40, tool_calls=10, runs=1, body_cap=64 * 1024)


def test_an_ascii_body_has_one_byte_per_character() -> None:
    body = make_body(200, ascii_only=True)
    assert body.text.isascii()
    assert body.output_bytes == len(body.text)
    assert not make_body(200).text.isascii()


def test_a_body_streams_and_documents_the_same_text() -> None:
    body = make_body(50)
    assert body.sse.count(b"event: response.output_text.delta\n") == 50
    assert body.sse.count(b"\n\n") == body.events
    document = json.loads(body.json)
    assert document["output"][0]["content"][0]["text"] == body.text
    assert document["usage"]["output_tokens"] == 50


def test_the_suite_runs_on_tiny_bodies_and_writes_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench_cli, "QUICK", TINY)
    output = tmp_path / "results" / "latest.json"

    assert bench_cli.main(["--quick", "--output", str(output)]) == 0

    report = json.loads(output.read_text())
    names = [check["name"] for check in report["checks"]]
    assert len(names) == 21
    for expected in (
        "fold overhead",
        "responses.stream()",
        "per-event time growth",
        "memory peak",
        "guard",
        "JSON",
        "max_response_bytes",
        "deadline overshoot",
        "telemetry per request",
        "telemetry per tool call",
        "instrumented / plain SSE fold",
        "get_streaming_response / raw SDK iteration",
        "time to first update",
        "instrumented / plain SSE stream",
    ):
        assert any(expected in name for name in names), expected
    assert all(math.isfinite(check["value"]) for check in report["checks"])
    assert report["environment"]["sizes"]["fold_deltas"] == 20
    printed = capsys.readouterr().out
    assert all(name in printed for name in names)


def test_a_missed_target_is_shown_as_missed() -> None:
    missed = Check("fold overhead", 1.3, "ratio", "<= 1.05", False, "slow")
    table = bench_cli.render_table([missed, Check("guard", 4.0, "us/call", "report", None)])
    assert "MISSED" in table.splitlines()[2]
    assert table.splitlines()[3].rstrip().endswith("-")
    assert "- fold overhead: slow" in table
