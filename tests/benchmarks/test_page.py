"""`make bench` writes its table into the marked section of docs/performance.md, and nothing else of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import benchmarks.__main__ as bench_cli
from benchmarks import page
from benchmarks.harness import Check
from benchmarks.suite import Sizes

CHECKS = [
    Check("large text: get_response", 0.199, "ratio", "<= 1.02", True, "detail", "0.13-0.31"),
    Check("telemetry on | off", 1.061, "ratio", "<= 1.05", False),
    Check("guard + registry overhead per tool call", 22.0, "us/call", "report", None),
]
ENVIRONMENT = {
    "date": "2026-12-02 17:43 UTC",
    "cores": "2 cores",
    "runs": 9,
    "python": "3.11.7",
    "openai": "3.57.0",
}
PAGE_TEXT = (
    "# Performance\n\nIntroduction, kept.\n\n"
    f"{page.START}\nthe table of an earlier run\n{page.END}\n\n## Boundary\n\nKept too.\n"
)


def _page(tmp_path: Path, text: str = PAGE_TEXT) -> Path:
    path = tmp_path / "performance.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_table_has_a_row_per_check_with_its_value_spread_target_and_verdict() -> None:
    table = page.markdown_table(CHECKS, ENVIRONMENT)
    lines = table.splitlines()
    assert lines[0].startswith("Measured by `make bench`: 2026-12-02 17:43 UTC; 2 cores; 9 runs a variant;")
    assert "CPython 3.11.7, openai 3.57.0" in lines[0]
    assert lines[2:4] == ["| benchmark | value | spread | target | verdict |", "|---|---|---|---|---|"]
    assert lines[4:] == [
        "| large text: get_response | 0.199 ratio | 0.13-0.31 | <= 1.02 | met |",
        "| telemetry on \\| off | 1.061 ratio | - | <= 1.05 | missed |",
        "| guard + registry overhead per tool call | 22.000 us/call | - | report | - |",
    ]


def test_the_section_between_the_markers_is_replaced_and_the_rest_kept(tmp_path: Path) -> None:
    path = _page(tmp_path)
    page.write_section(path, "| new | table |\n")
    assert path.read_text(encoding="utf-8") == PAGE_TEXT.replace(
        "the table of an earlier run", "| new | table |"
    )
    page.write_section(path, "again")  # the section can be written any number of times
    assert path.read_text(encoding="utf-8") == PAGE_TEXT.replace("the table of an earlier run", "again")


@pytest.mark.parametrize(
    "text",
    [
        "no markers at all\n",
        f"{page.START}\nonly a start\n",
        f"{page.END}\nend first\n{page.START}\n",
        f"{page.START}\n{page.START}\ntwo starts\n{page.END}\n",
    ],
)
def test_a_page_without_one_marked_section_is_refused_and_left_alone(tmp_path: Path, text: str) -> None:
    path = _page(tmp_path, text)
    with pytest.raises(page.MarkersError):
        page.write_section(path, "table")
    assert path.read_text(encoding="utf-8") == text


def test_the_performance_page_has_its_marked_section() -> None:
    page.check_markers(page.PAGE)


def _fake_suite(ran: list[Sizes]) -> Any:
    async def run_suite(sizes: Sizes) -> tuple[list[Check], dict[str, Any]]:
        ran.append(sizes)
        return CHECKS, {"wall_s": 1.0}

    return run_suite


def test_a_full_run_writes_its_table_into_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[Sizes] = []
    monkeypatch.setattr(bench_cli, "run_suite", _fake_suite(ran))
    path = _page(tmp_path)
    output = tmp_path / "latest.json"

    assert bench_cli.main(["--runs", "3", "--output", str(output), "--page", str(path)]) == 0

    text = path.read_text(encoding="utf-8")
    assert "the table of an earlier run" not in text
    assert "| large text: get_response | 0.199 ratio | 0.13-0.31 | <= 1.02 | met |" in text
    assert "3 runs a variant" in text
    assert text.startswith("# Performance\n\nIntroduction, kept.\n")
    assert text.endswith("## Boundary\n\nKept too.\n")
    # The saved report writes the same section again.
    assert page.main([str(output), "--page", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == text
    assert json.loads(output.read_text())["environment"]["runs"] == 3


def test_a_quick_run_or_no_page_leaves_the_page_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench_cli, "run_suite", _fake_suite([]))
    path = _page(tmp_path)
    output = tmp_path / "latest.json"
    assert bench_cli.main(["--quick", "--output", str(output), "--page", str(path)]) == 0
    assert bench_cli.main(["--no-page", "--output", str(output), "--page", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == PAGE_TEXT


def test_a_page_without_markers_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[Sizes] = []
    monkeypatch.setattr(bench_cli, "run_suite", _fake_suite(ran))
    path = _page(tmp_path, "# Performance\n")
    with pytest.raises(page.MarkersError):
        bench_cli.main(["--output", str(tmp_path / "latest.json"), "--page", str(path)])
    assert ran == []
