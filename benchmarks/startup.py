"""How soon ``meeting-agents`` gets to work: start to first request, and ``--version`` and ``--help``.

``python -m benchmarks.startup [--runs N]`` starts the offline stand-in on 127.0.0.1 and points the command at
it as at a gateway (``AGENT_BASE_URL``); per run it spawns ``meeting-agents summarize`` on a small transcript
and takes the time from the spawn to the stand-in's first ``POST /v1/responses`` (the command is then left to
finish), and the time of ``meeting-agents --version`` and ``--help`` from spawn to exit: wall seconds, and
the process's CPU seconds (at the first request read from ``/proc``: Linux), which waiting for a core on a
busy machine does not inflate. Beside them, as floors no command line can go under, the same times of
``python -c "import openai"`` (the SDK's own import, which the first request cannot do without) and of
importing the libraries the first request goes through (:data:`LIBRARIES`), each up to the end of its
imports; and the first request once more in a process that finds none of :data:`GATEWAY_EXTRA`, the test
tier's packages that those libraries import when installed. The commands run in turn
(A B C D E A B C D E ...) after a warm-up round, so drift on the machine hits them all alike; each figure is
a median.
"""

from __future__ import annotations

import argparse
import os
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from adapters.offline import OfflineResponsesServer
from benchmarks.harness import Check, Sizes

__all__ = ["TARGET_SECONDS", "startup"]

TARGET_SECONDS: Final = 0.6
"""Issue 41: from the command's start to its first request."""

LIBRARIES: Final = ("openai", "httpx", "dependency_injector.containers")
"""What the first request goes through that is not ours: the SDK, the HTTP client, the container's library."""

GATEWAY_EXTRA: Final = ("fastapi", "starlette", "pydantic_settings", "aiohttp", "rich")
"""What the gateway extra (``litellm[proxy]``, the gateway test tier's) installs that the libraries of a run
import whenever they find it: dependency-injector's FastAPI, Starlette and pydantic-settings integrations, the
SDK's aiohttp transport, httpx's own command line. A plain install (the cli and offline extras) has none."""
# Run as the command in a process that finds none of GATEWAY_EXTRA, as when it is not installed.
_PLAIN: Final = (
    "import sys\n"
    "sys.modules.update(dict.fromkeys({hidden!r}))\n"
    "from adapters.cli import main\n"
    "sys.exit(main())\n"
)

# A meeting of a few lines: what is timed is the way to the first request, not the model's work.
TRANSCRIPT: Final = """\
Ana: Let's keep the stand-up short. Ben, the changelog?
Ben: I'll update the changelog by Thursday.
Ana: We decided to ship the release on Friday.
"""
# Every wait of a run is bounded: a command that never asks or never ends fails the benchmark.
_DEADLINE_SECONDS: Final = 60.0
_POLL_SECONDS: Final = 0.001


class StartupError(AssertionError):
    """A command did not do what it is timed for (no request, or a failing exit code)."""


def _command_line() -> Path:
    """The ``meeting-agents`` script installed beside the interpreter that runs the benchmark."""
    return Path(sys.executable).with_name("meeting-agents")


def _environment(base_url: str, bytecode: Path) -> dict[str, str]:
    """This process's environment without any ``AGENT_*``/``OTEL_*`` variable, pointed at ``base_url``, and
    with compiled modules kept under ``bytecode``: a user's second run reads its modules compiled, whatever
    ``PYTHONDONTWRITEBYTECODE`` says here, and the warm-up round writes them there, not into the tree."""
    environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AGENT_", "OTEL_")) and key != "PYTHONDONTWRITEBYTECODE"
    }
    return environ | {
        "AGENT_BASE_URL": base_url,
        "AGENT_API_KEY": "sk-benchmark",
        "AGENT_MODEL": "offline",
        "PYTHONPYCACHEPREFIX": str(bytecode),
    }


@attrs.frozen
class Timed:
    """One run of a command from its spawn: wall seconds, and the process's CPU seconds (user and system)."""

    wall: float
    cpu: float


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pid: int) -> float:
    """The CPU seconds a running process has had so far (Linux: ``/proc/PID/stat``'s utime and stime)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    # The fields after the command's name, which is in parentheses and may hold spaces: state is the first.
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _until_exit(argv: Sequence[str], environ: Mapping[str, str]) -> Timed:
    """``argv`` from its spawn to its exit, which must be 0."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603  # our own command line and interpreter
        argv, env=environ, capture_output=True, timeout=_DEADLINE_SECONDS, check=False
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise StartupError(f"{argv[1:]} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return Timed(wall, _children_cpu() - cpu_before)


def _until_first_request(
    argv: Sequence[str], environ: Mapping[str, str], server: OfflineResponsesServer
) -> Timed:
    """``argv`` from its spawn to the server's next request (polled each millisecond); it must then exit 0."""
    before = len(server.requests)
    started = time.perf_counter()
    process = subprocess.Popen(  # noqa: S603  # our own command line
        argv, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        while len(server.requests) == before:
            if process.poll() is not None or time.perf_counter() - started > _DEADLINE_SECONDS:
                _, errors = process.communicate(timeout=_DEADLINE_SECONDS)
                raise StartupError(f"{argv[1:]} sent no request: {errors.decode(errors='replace')}")
            time.sleep(_POLL_SECONDS)
        timed = Timed(time.perf_counter() - started, _cpu_of(process.pid))
        _, errors = process.communicate(timeout=_DEADLINE_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=_DEADLINE_SECONDS)
    if process.returncode != 0:
        raise StartupError(f"{argv[1:]} exited {process.returncode}: {errors.decode(errors='replace')}")
    return timed


def _until_imported(modules: Sequence[str], environ: Mapping[str, str]) -> Timed:
    """A new interpreter from its spawn to the end of ``import`` of ``modules``, before it tears them down:
    the wall time to the line it prints then, and the CPU time it reports in that line."""
    report = f"import {', '.join(modules)}; import time; print(time.process_time(), flush=True)"
    started = time.perf_counter()
    process = subprocess.Popen(  # noqa: S603  # this interpreter, on a fixed line of code
        [sys.executable, "-c", report], env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert process.stdout is not None  # piped above
        ready, _, _ = select.select([process.stdout], [], [], _DEADLINE_SECONDS)
        line = process.stdout.readline() if ready else b""
        wall = time.perf_counter() - started
        _, errors = process.communicate(timeout=_DEADLINE_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=_DEADLINE_SECONDS)
    if process.returncode != 0 or not line.strip():
        shown = errors.decode(errors="replace")
        raise StartupError(f"import {', '.join(modules)} failed ({process.returncode}): {shown}")
    return Timed(wall, float(line))


def measure(runs: int) -> dict[str, list[Timed]]:
    """Per command, each of ``runs`` interleaved runs (after one warm-up round)."""
    command = str(_command_line())
    with tempfile.TemporaryDirectory() as folder, OfflineResponsesServer() as server:
        transcript = Path(folder) / "standup.txt"
        transcript.write_text(TRANSCRIPT, encoding="utf-8")
        environ = _environment(server.base_url, Path(folder) / "bytecode")
        variants: dict[str, Callable[[], Timed]] = {
            "first_request": lambda: _until_first_request(
                [command, "summarize", str(transcript)], environ, server
            ),
            "first_request_plain": lambda: _until_first_request(
                [sys.executable, "-c", _PLAIN.format(hidden=GATEWAY_EXTRA), "summarize", str(transcript)],
                environ,
                server,
            ),
            "version": lambda: _until_exit([command, "--version"], environ),
            "help": lambda: _until_exit([command, "--help"], environ),
            "import_openai": lambda: _until_imported(["openai"], environ),
            "import_libraries": lambda: _until_imported(LIBRARIES, environ),
        }
        for variant in variants.values():
            variant()
        timed: dict[str, list[Timed]] = {name: [] for name in variants}
        for _ in range(runs):
            for name, variant in variants.items():
                timed[name].append(variant())
    return timed


def _range(values: Sequence[float]) -> str:
    return f"{min(values):.3f}-{max(values):.3f}"


def _median(runs: Sequence[Timed], figure: Literal["wall", "cpu"]) -> float:
    return statistics.median(run.wall if figure == "wall" else run.cpu for run in runs)


def checks_of(timed: Mapping[str, Sequence[Timed]]) -> list[Check]:
    """The rows, in wall seconds: the first request of a plain install (what ``make demo`` and
    ``pip install -e '.[offline]'`` install) against its target, then the same in a virtualenv that also has
    the gateway test extra's packages, ``--version`` and ``--help`` reported; each row's detail gives the
    process's CPU seconds, and the second row's the libraries' floors."""
    wall = {name: _median(runs, "wall") for name, runs in timed.items()}
    cpu = {name: _median(runs, "cpu") for name, runs in timed.items()}
    first = wall["first_request_plain"]
    over = first - TARGET_SECONDS
    verdict = f"{-over:.3f} s under the target" if over <= 0 else f"missed by {over:.3f} s"
    floors = (
        f"python -c 'import openai' takes {wall['import_openai']:.3f} s ({cpu['import_openai']:.3f} s CPU) "
        f"and importing {', '.join(LIBRARIES)} {wall['import_libraries']:.3f} s "
        f"({cpu['import_libraries']:.3f} s CPU): the command's own work above them is "
        f"{cpu['first_request'] - cpu['import_libraries']:.3f} s CPU"
    )
    runs = len(timed["first_request"])

    def row(name: str, label: str, target: str, met: bool | None, detail: str) -> Check:
        return Check(
            label,
            wall[name],
            "s",
            target,
            met,
            f"wall time, median of {runs}; {cpu[name]:.3f} s CPU (the process's, median){detail}",
            _range([run.wall for run in timed[name]]),
        )

    return [
        row(
            "first_request_plain",
            "meeting-agents summarize: start to first request",
            f"<= {TARGET_SECONDS:g}",
            over <= 0,
            f", from its spawn to the stand-in's first POST /v1/responses, with none of "
            f"{', '.join(GATEWAY_EXTRA)} to import, as in a plain install; {verdict}",
        ),
        row(
            "first_request",
            "meeting-agents summarize: start to first request, with the gateway extra installed",
            "report",
            None,
            f", the same where the gateway test extra's packages are installed (the libraries import them "
            f"when they find them): {wall['first_request'] - first:.3f} s more; {floors}",
        ),
        row("version", "meeting-agents --version", "report", None, ", from spawn to exit"),
        row("help", "meeting-agents --help", "report", None, ", from spawn to exit"),
    ]


async def startup(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """The suite's rows: the command's start, measured in processes of its own."""
    timed = measure(sizes.runs)
    timings["startup"] = {
        name: {"runs_wall_s": [run.wall for run in runs], "runs_cpu_s": [run.cpu for run in runs]}
        for name, runs in timed.items()
    }
    return checks_of(timed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__)
    parser.add_argument("--runs", type=int, default=Sizes().runs, help="timed runs per command (median)")
    args = parser.parse_args(argv)
    timed = measure(args.runs)
    for name, runs in timed.items():
        walls = _range([run.wall for run in runs])
        print(f"{name}: {_median(runs, 'wall'):.3f} s wall ({walls}), {_median(runs, 'cpu'):.3f} s CPU")
    for check in checks_of(timed):
        print(f"{check.name}: {check.value:.3f} {check.unit}, target {check.target}: {check.verdict}")
        print(f"  {check.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
