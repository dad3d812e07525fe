"""Running the command in a test: in this process (fast, seen by coverage) or in a new one, as users do."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from adapters.cli import main

ROOT: Final = Path(__file__).resolve().parents[3]
TRANSCRIPT: Final = ROOT / "examples" / "standup-transcript.txt"
WORKFLOW: Final = ROOT / "examples" / "release-workflow.json"
SCRIPT: Final = Path(sys.executable).with_name("meeting-agents")
PLANTED_KEY: Final = "sk-PLANTED-cli-9911"
# Generous: a subprocess start costs about a second on this machine; this only bounds a hang.
PROCESS_TIMEOUT: Final = 120.0


@attrs.frozen
class Ran:
    """One run of the command: its exit code and what it wrote."""

    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()

    def json(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.out)
        return document


def run_in_process(
    *argv: str, environ: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> tuple[int, io.StringIO, io.StringIO]:
    """``main`` with fresh stdio. Returns the code and the two streams (not a tty, as under a pipe)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(argv), environ=dict(environ or {}))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return code, out, err


def run(*argv: str, environ: Mapping[str, str] | None = None, stdin: bytes | None = None) -> Ran:
    code, out, err = run_in_process(*argv, environ=environ, stdin=stdin)
    return Ran(code, out.getvalue(), err.getvalue())


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any AGENT_* variable, plus ``extra``."""
    environ = {name: value for name, value in os.environ.items() if not name.startswith("AGENT_")}
    return {**environ, **(extra or {})}


def run_process(*argv: str, environ: Mapping[str, str] | None = None, stdin: bytes | None = None) -> Ran:
    """The installed console script in a new process, as a user runs it."""
    done = subprocess.run(  # noqa: S603  # our own console script with the test's arguments
        [str(SCRIPT), *argv],
        input=stdin or b"",
        capture_output=True,
        env=clean_environment(environ),
        timeout=PROCESS_TIMEOUT,
        check=False,
    )
    return Ran(done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8"))
