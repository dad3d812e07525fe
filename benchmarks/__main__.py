"""``python -m benchmarks``: run the suite, print the table, write it as JSON and into docs/performance.md."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import attrs

from benchmarks import page, profile
from benchmarks.suite import Check, Sizes, run_suite

DEFAULT_OUTPUT = Path(__file__).parent / "results" / "latest.json"
QUICK = Sizes(
    fold=400,
    medium=100,
    scaling=(50, 200, 800),
    calls=10,
    call_chars=200,
    small_requests=5,
    json_calls=10,
    json_call_chars=2_000,
    json_repeats=2,
    memory_deltas=100,
    memory_delta_chars=20,
    memory_runs=2,
    tool_calls=200,
    runs=2,
    body_cap=256 * 1024,
    batch=8,
    backlog=600,
    cpu_items=500,
    memory_body=64 * 1024,
    paused_state=200_000,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--runs", type=int, default=Sizes().runs, help="timed runs per variant (median)")
    parser.add_argument("--quick", action="store_true", help="tiny bodies and two runs: a smoke test")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the JSON")
    parser.add_argument(
        "--page",
        type=Path,
        default=page.PAGE,
        help="the page whose marked section gets the table (a --quick run writes none)",
    )
    parser.add_argument("--no-page", action="store_true", help="write no page, only the JSON")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="instead: cProfile get_response on the large answer (python -m benchmarks.profile for the rest)",
    )
    return parser


def _verdict(check: Check) -> str:
    if check.met is None:
        return "-"
    return "met" if check.met else "MISSED"


def render_table(checks: Sequence[Check]) -> str:
    """A plain-text table: per check its value, spread of runs, target and verdict; details underneath."""
    rows = [("benchmark", "value", "spread", "target", "verdict")]
    rows += [(c.name, f"{c.value:.3f} {c.unit}", c.spread or "-", c.target, _verdict(c)) for c in checks]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.append("")
    lines += [f"- {c.name}: {c.detail}" for c in checks if c.detail]
    return "\n".join(lines)


def _environment(sizes: Sizes) -> dict[str, Any]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        **({"load": f"load {load:.1f} when it ended"} if load is not None else {}),
        "cores": f"{os.cpu_count()} cores",
        "runs": sizes.runs,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "system": platform.system(),
        "openai": version("openai"),
        "pydantic": version("pydantic"),
        "httpx": version("httpx"),
        "sizes": {
            **attrs.asdict(sizes),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sizes = QUICK if args.quick else Sizes(runs=args.runs)
    if args.profile:
        return profile.main(["large", "get_response"], sizes=sizes)
    writes_page = not (args.quick or args.no_page)
    if writes_page:
        page.check_markers(args.page)
    checks, timings = asyncio.run(run_suite(sizes))
    print(
        f"Process CPU time, medians of {sizes.runs} interleaved runs (spread: the range of the run-by-run "
        "ratios); bodies served by httpx.MockTransport.\n"
    )
    print(render_table(checks))
    environment = _environment(sizes)
    report = {
        "command": "make bench  (python -m benchmarks)",
        "environment": environment,
        "checks": [c.as_json() for c in checks],
        "timings": timings,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten: {args.output}")
    if writes_page:
        page.write_section(args.page, page.markdown_table(checks, environment))
        print(f"written: {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
