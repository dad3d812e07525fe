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
from benchmarks.harness import QUICK
from benchmarks.report import render_table
from benchmarks.suite import Sizes, run_suite

DEFAULT_OUTPUT = Path(__file__).parent / "results" / "latest.json"


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
