"""The table of a benchmark run, written into the marked section of ``docs/performance.md``.

:func:`markdown_table` renders a run's checks and its environment as Markdown; :func:`write_section`
puts a text between the page's ``<!-- bench:start -->`` and ``<!-- bench:end -->`` markers, leaving
everything else of the page as it is. ``make bench`` does both after a full run;
``python -m benchmarks.page [REPORT]`` rewrites the section from a saved report
(``benchmarks/results/latest.json`` by default) without running anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks.harness import Check

__all__ = [
    "END",
    "PAGE",
    "START",
    "MarkersError",
    "check_markers",
    "checks_of",
    "main",
    "markdown_table",
    "write_section",
]

PAGE: Final = Path(__file__).resolve().parents[1] / "docs" / "performance.md"
START: Final = "<!-- bench:start -->"
END: Final = "<!-- bench:end -->"


class MarkersError(ValueError):
    """The page does not hold exactly one start marker followed by exactly one end marker."""


def _cell(text: str) -> str:
    """``text`` as one Markdown table cell: a pipe would end the cell, a line break the row."""
    return " ".join(text.split()).replace("|", "\\|")


def _value(check: Check) -> str:
    return f"{check.value:.3f} {check.unit}"


def _run_line(environment: Mapping[str, Any]) -> str:
    """One sentence on where and when the run was made, from the report's ``environment``."""
    parts = [
        str(environment[key]) if key != "runs" else f"{environment[key]} runs a variant"
        for key in ("date", "load", "cores", "runs")
        if key in environment
    ]
    versions = ", ".join(
        f"{name} {environment[key]}"
        for name, key in (
            ("CPython", "python"),
            ("openai", "openai"),
            ("pydantic", "pydantic"),
            ("httpx", "httpx"),
        )
        if key in environment
    )
    return "Measured by `make bench`: " + "; ".join([*parts, versions] if versions else parts) + "."


def markdown_table(checks: Sequence[Check], environment: Mapping[str, Any]) -> str:
    """The run as the page shows it: where and when, then one row per check."""
    lines = [
        _run_line(environment),
        "",
        "| benchmark | value | spread | target | verdict |",
        "|---|---|---|---|---|",
    ]
    lines += [
        "| "
        + " | ".join(
            _cell(cell)
            for cell in (check.name, _value(check), check.spread or "-", check.target, check.verdict.lower())
        )
        + " |"
        for check in checks
    ]
    return "\n".join(lines)


def _marked(page: Path) -> tuple[str, str]:
    """The page up to its start marker and from its end marker on."""
    text = page.read_text(encoding="utf-8")
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise MarkersError(f"{page}: expected one {START} line followed by one {END} line")
    return text[: text.index(START) + len(START)], text[text.index(END) :]


def check_markers(page: Path) -> None:
    """Refuse, before a run of many minutes, a page whose section could not be written after it."""
    _marked(page)


def write_section(page: Path, content: str) -> None:
    """Replace what lies between the page's markers with ``content``; the rest stays byte for byte."""
    before, after = _marked(page)
    page.write_text(f"{before}\n{content.strip()}\n{after}", encoding="utf-8")


def checks_of(report: Mapping[str, Any]) -> list[Check]:
    """The checks of a saved report (``benchmarks/results/latest.json``)."""
    return [Check(**check) for check in report["checks"]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.page", description=__doc__.splitlines()[0])
    parser.add_argument(
        "report",
        nargs="?",
        type=Path,
        default=Path(__file__).parent / "results" / "latest.json",
        help="a report written by python -m benchmarks",
    )
    parser.add_argument("--page", type=Path, default=PAGE, help="the page whose marked section is rewritten")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    report = json.loads(args.report.read_text(encoding="utf-8"))
    write_section(args.page, markdown_table(checks_of(report), report.get("environment", {})))
    print(f"written: {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
