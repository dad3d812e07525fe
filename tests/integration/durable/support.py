"""Durable batches in tests: the command in a process of its own, a gateway that counts and kills.

DBOS is a process-global singleton, so every run that launches it is a new process (as users run it);
the test process only starts gateways and servers on 127.0.0.1 and reads what the runs left.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import psycopg
from dbos import DBOSClient

from adapters.durable import Outcome, Runtime
from adapters.durable.engine import SUMMARIZE_WORKFLOW, serializer
from adapters.offline import OfflineResponsesServer
from adapters.offline.threaded import Receive, Scope, Send
from adapters.redaction import Redactor
from application import SummaryAgent, WorkflowEditorAgent
from domain import ChatPort
from tests.integration.cli.support import PROCESS_TIMEOUT, Ran
from tests.support import processes
from tests.support.processes import gateway_environment as gateway_environment  # re-exported for the tests
from tests.support.processes import python_module
from tests.support.upstreams import FakeServer, echo_route

# Each offline summary of a short transcript takes two requests: one for the tool calls, one for the text.
REQUESTS_PER_TRANSCRIPT: Final = 2
TRANSCRIPTS: Final = {
    "standup.txt": "Ana: Good morning. We decided to ship the release on Friday.\n"
    "Ben: I will update the changelog by Thursday.\n",
    "planning.md": "Cy: We decided to drop the old API.\nDee: I will write the migration guide by Monday.\n",
    "retro.txt": "Eve: We decided to keep the weekly demo.\nFay: I will book the room by Tuesday.\n",
}


def numbered_meetings(count: int) -> dict[str, str]:
    """``count`` short transcripts, ``meeting-0.txt`` on, each with one decision and one action item."""
    return {
        f"meeting-{number}.txt": f"Ann: We decided to try plan {number}.\nBo: I will call {number} people.\n"
        for number in range(count)
    }


def write_transcripts(folder: Path, transcripts: Mapping[str, str] = TRANSCRIPTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in transcripts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def write_numbered_meetings(folder: Path, count: int) -> tuple[dict[str, str], Path]:
    """``count`` meetings of :func:`numbered_meetings` written to ``folder``: the meetings, and the folder."""
    meetings = numbered_meetings(count)
    return meetings, write_transcripts(folder, meetings)


@contextlib.contextmanager
def echo_gateway(
    model: str, api_key: str = "sk-test", **extra: str
) -> Iterator[tuple[FakeServer, dict[str, str]]]:
    """The echo gateway (:func:`tests.support.upstreams.echo_route`, ``model`` says what it answers) running
    until the block ends, and the environment that points a command at it with ``api_key`` and ``extra``."""
    with FakeServer(echo_route) as echo:
        yield echo, gateway_environment(echo.base_url, model, api_key, **extra)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def command(*argv: str) -> list[str]:
    return python_module("adapters.cli", *argv)


def start(*argv: str, environ: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """The command in a new process, its stderr piped (a pipe, not a terminal: one line per transcript)."""
    return processes.start(command(*argv), environ=environ, stdin=subprocess.PIPE)


def start_worker(database: str, executor: str, environ: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """``meeting-agents worker`` on ``database`` as executor ``executor``, in a new process."""
    return start("worker", "--db", database, "--id", executor, environ=environ)


def finish(process: subprocess.Popen[bytes], stdin: bytes = b"") -> Ran:
    out, err = process.communicate(stdin, timeout=PROCESS_TIMEOUT)
    return Ran(process.returncode, out.decode("utf-8"), err.decode("utf-8"))


def run_batch(*argv: str, environ: Mapping[str, str] | None = None, stdin: bytes = b"") -> Ran:
    return finish(start(*argv, environ=environ), stdin)


def canonical(body: bytes) -> str:
    """One request body as a comparable text: the same request sent twice reads the same."""
    return json.dumps(json.loads(body), sort_keys=True)


class CountingGateway(OfflineResponsesServer):
    """The offline stand-in, counting each request as it arrives and each answer once sent whole.

    ``kill_at(n, pid)``: the n-th request to arrive (counted over the gateway's life) is not answered;
    the process ``pid`` is killed with SIGKILL instead, while its request is in flight (``killed`` is set
    then). ``hold()``: requests arriving wait until ``release()`` before they are answered (bounded by
    ``PROCESS_TIMEOUT``), so the processes sending them keep their transcripts meanwhile.
    """

    def __init__(self) -> None:
        super().__init__()
        self._count_lock = threading.Lock()
        self.arrivals = 0
        self.completed: list[str] = []
        """The body of every request answered whole, in order."""
        self.killed_in_flight: list[str] = []
        self._kill: tuple[int, int] | None = None
        self.killed = threading.Event()
        self._open = threading.Event()
        self._open.set()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def kill_at(self, arrival: int, pid: int) -> None:
        with self._count_lock:
            self._kill = (arrival, pid)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = bytearray()

        async def recording() -> Any:
            message = await receive()
            if message.get("type") == "http.request":
                body.extend(message.get("body", b""))
            return message

        with self._count_lock:
            self.arrivals += 1
            kill = self._kill is not None and self._kill[0] == self.arrivals
            pid = self._kill[1] if self._kill is not None else 0
        if kill:
            while (await recording()).get("more_body"):
                pass
            os.kill(pid, signal.SIGKILL)
            self.killed_in_flight.append(canonical(bytes(body)))
            self.killed.set()
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if not self._open.is_set():
            await asyncio.to_thread(self._open.wait, PROCESS_TIMEOUT)
        await super()._serve(scope, recording, send)
        with self._count_lock:
            self.completed.append(canonical(bytes(body)))


def index(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "index.jsonl").read_text(encoding="utf-8").splitlines()]


def stored_values(database: Path) -> Iterator[bytes]:
    """Every value of every table of a SQLite file, and each one's base64 decoding where it has one
    (DBOS stores what it serializes as base64), so a secret cannot hide in an encoding."""
    connection = sqlite3.connect(database)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in connection.execute(f'SELECT * FROM "{table}"'):  # noqa: S608  # table names from the file itself
                for value in row:
                    if value is None:
                        continue
                    raw = value if isinstance(value, bytes) else str(value).encode("utf-8")
                    yield raw
                    with contextlib.suppress(binascii.Error, ValueError):
                        yield base64.b64decode(raw, validate=True)
    finally:
        connection.close()


def selected(database: str, query: str) -> list[tuple[Any, ...]]:
    """What ``query`` selects from the Postgres ``database``."""
    with psycopg.connect(database, connect_timeout=10) as connection:
        return connection.execute(query).fetchall()


def cut_liveness(database: str, executor_id: str) -> list[tuple[Any, ...]]:
    """The server ends the liveness connection of ``executor_id`` (as a restart or a network cut would)."""
    return selected(
        database,
        f"""SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE application_name = 'meeting-agents liveness {executor_id}'""",  # noqa: S608  # the test's own id
    )


def until_selected(
    database: str, query: str, reached: Callable[[list[tuple[Any, ...]]], bool]
) -> list[tuple[Any, ...]]:
    """The rows of ``query`` once they are ``reached`` (polled, bounded: a state never reached fails);
    none while the first process to launch has not made DBOS's tables yet."""
    deadline = time.monotonic() + PROCESS_TIMEOUT
    while True:
        try:
            found = selected(database, query)
        except psycopg.errors.UndefinedTable:
            found = []
        if reached(found):
            return found
        assert time.monotonic() < deadline, f"never reached: {found}"
        time.sleep(0.1)


def stored_outcomes(database: str) -> list[Outcome]:
    """Every transcript's outcome as DBOS stored it, read back as another process would (DBOS's client,
    with the engine's serializer)."""
    client = DBOSClient(system_database_url=database, serializer=serializer(Redactor()))
    try:
        statuses = client.list_workflows(name=SUMMARIZE_WORKFLOW, load_input=False)
    finally:
        client.destroy()
    outcomes = [status.output for status in statuses if isinstance(status.output, Outcome)]
    assert len(outcomes) == len(statuses), [status.output for status in statuses]
    return outcomes


def runtime_over(chat: ChatPort) -> Runtime:
    """The runtime in-process tests launch an engine with: both pipelines on ``chat``, a summary rendered
    as its text, a run's spending as its request count."""
    return Runtime(
        summary_agent=lambda: SummaryAgent(chat),
        chat=chat,
        render=lambda summary: {"text": summary.text},
        describe=str,
        redactor=Redactor(),
        spending=lambda run: {"requests": len(run.responses)},
        workflow_editor=lambda: WorkflowEditorAgent(chat),
    )
