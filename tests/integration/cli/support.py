"""Running the command in a test: in this process (fast, seen by coverage) or in a new one, as users do."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import attrs

from adapters.cli import main
from tests.support.processes import clean_environment

ROOT: Final = Path(__file__).resolve().parents[3]
TRANSCRIPT: Final = ROOT / "examples" / "standup-transcript.txt"
WORKFLOW: Final = ROOT / "examples" / "release-workflow.json"
SCRIPT: Final = Path(sys.executable).with_name("meeting-agents")
PLANTED_KEY: Final = "sk-PLANTED-cli-9911"
REMOVE_QA: Final = "remove Manual QA sign-off"
# What a run on the offline stand-in writes to stderr even when no one watches: it, and only it.
OFFLINE_NOTE: Final = (
    "meeting-agents: no gateway is configured (AGENT_BASE_URL): the offline stand-in answers, "
    "a rule-based model, not a language model\n"
)
# Only bounds a hang: a subprocess start costs about a second on an idle machine, but at a load average
# of 20 three processes importing DBOS and the SDK under coverage took more than 120 s to take a request.
PROCESS_TIMEOUT: Final = 300.0


@attrs.frozen
class Ran:
    """One run of the command: its exit code and what it wrote."""

    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        """stderr's lines but the stand-in's note (its own tests read ``err`` itself)."""
        return self.err.removeprefix(OFFLINE_NOTE).splitlines()

    def json(self) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.out)
        return document


def run(
    *argv: str,
    environ: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    stdout: io.StringIO | None = None,
    stderr: io.StringIO | None = None,
) -> Ran:
    """``main`` in this process with fresh stdio: not a tty, as under a pipe, unless the test hands in
    a stream that says it is one as ``stdout`` or ``stderr``."""
    out, err = stdout or io.StringIO(), stderr or io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(argv), environ=dict(environ or {}))
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return Ran(code, out.getvalue(), err.getvalue())


def edit_without_qa(*argv: str, environ: Mapping[str, str] | None = None) -> Ran:
    """``edit-workflow`` in this process, told to remove the example workflow's QA step with every call
    approved, and ``argv`` after."""
    return run("edit-workflow", str(WORKFLOW), REMOVE_QA, "--approve", "all", *argv, environ=environ)


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


def run_probe(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -c code argv...`` in a new interpreter working at the checkout's root, its environment
    without any AGENT_* variable: how a probe sees what a fresh process imports. Its output as text."""
    return subprocess.run(  # noqa: S603  # our own interpreter and probe
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT,
        cwd=ROOT,
        env=clean_environment(),
        check=False,
    )


# What the live line writes: a carriage return and an erase to the end of the line.
_ERASE_LINE: Final = re.compile("(\r\x1b\\[K|\n)")


def screen_lines(written: str) -> list[str]:
    """The lines a terminal shows after ``written``: an erased line is gone, a redrawn one replaced."""
    lines: list[str] = []
    current = ""
    for token in _ERASE_LINE.split(written.replace("\r\n", "\n")):
        if token == "\n":
            lines.append(current)
            current = ""
        elif token.startswith("\r"):
            current = ""
        else:
            current += token
    return [*lines, current] if current else lines


class OnTerminal:
    """The console script in a new process with stderr on a pseudo-terminal, as a person runs it.

    stdout goes to ``stdout`` (a file: the test reads it at the end). Read the terminal with
    :meth:`wait_for` while the command runs, then :meth:`finish`. With ``typing``, stdin is the
    terminal too and :meth:`answer` answers the command's questions. Leaving the block kills a command
    still running.
    """

    def __init__(
        self, *argv: str, stdout: Path, environ: Mapping[str, str] | None = None, typing: bool = False
    ) -> None:
        self._stdout = stdout
        self._master, slave = pty.openpty()
        self.written = b""
        try:
            with stdout.open("wb") as out:
                self.process = subprocess.Popen(  # noqa: S603  # our own console script with the test's arguments
                    [str(SCRIPT), *argv],
                    stdin=slave if typing else subprocess.DEVNULL,
                    stdout=out,
                    stderr=slave,
                    env=clean_environment(environ),
                )
        finally:
            # Only the child holds the terminal now: the reads end (EIO) once it exits.
            os.close(slave)
        self._deadline = time.monotonic() + PROCESS_TIMEOUT
        self._open = True

    def _read(self, seconds: float) -> None:
        if not self._open:
            return
        ready, _, _ = select.select([self._master], [], [], seconds)
        if not ready:
            return
        try:
            data = os.read(self._master, 65536)
        except OSError:  # Linux reports a terminal whose other end is closed as EIO
            data = b""
        self.written += data
        self._open = bool(data)

    def wait_for(self, condition: Callable[[], bool]) -> None:
        """Read the terminal until ``condition()`` holds; fails if the command ended first or hung."""
        while not condition():
            assert time.monotonic() < self._deadline, f"still waiting; the terminal shows {self.written!r}"
            assert self.process.poll() is None or self._open, f"the command ended: {self.written!r}"
            self._read(0.05)

    def answer(self, text: str) -> None:
        """Type ``text`` at the terminal, as a person answering the command would."""
        os.write(self._master, text.encode("utf-8"))

    def finish(self) -> Ran:
        """Read the terminal to its end, wait for the command: its code, stdout, what the terminal got."""
        while self._open:
            assert time.monotonic() < self._deadline, f"the command never ended: {self.written!r}"
            self._read(0.05)
        code = self.process.wait(timeout=max(0.0, self._deadline - time.monotonic()))
        return Ran(code, self._stdout.read_text(encoding="utf-8"), self.written.decode("utf-8"))

    def __enter__(self) -> OnTerminal:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=PROCESS_TIMEOUT)
        os.close(self._master)
