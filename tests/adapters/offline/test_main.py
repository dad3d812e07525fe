"""Running the offline endpoint on its own, as a process."""

from __future__ import annotations

import io
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from adapters.offline.__main__ import main, serve

ROOT = Path(__file__).resolve().parents[3]


def read_lines(process: subprocess.Popen[bytes], count: int, within: float) -> list[str]:
    """The process's next ``count`` stdout lines, waiting at most ``within`` seconds for them."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    received = b""
    deadline = time.monotonic() + within
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while received.count(b"\n") < count:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(timeout=left):
                raise AssertionError(f"{count} lines not printed within {within} s: {received!r}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"the process ended after printing {received!r}")
            received += chunk
    return received.decode().splitlines()


def test_the_process_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "adapters.offline", "--dialect", "litellm"], cwd=ROOT, stdout=subprocess.PIPE
    )
    try:
        ready, hint = read_lines(process, 2, within=30.0)
        base_url = ready.rsplit(" ", 1)[-1]
        reply = httpx.post(f"{base_url}/responses", json={"model": "offline", "input": "hi", "stream": True})
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
        assert process.stdout is not None
        rest = process.stdout.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    assert ready.startswith(
        "Offline Responses endpoint (a rule-based stand-in) listening at http://127.0.0.1:"
    )
    assert f"AGENT_BASE_URL={base_url} AGENT_MODEL=offline AGENT_API_KEY=sk-offline" in hint
    assert reply.status_code == 200
    assert reply.text.rstrip().endswith("data: [DONE]")
    assert rest == "Stopped after 1 requests.\n"


def test_help_lists_every_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])

    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "not a language model" in out
    assert "  http-429               HTTP 429 with Retry-After: 0" in out


def test_serve_reports_where_and_how_much_and_stops_on_request() -> None:
    out = io.StringIO()
    stop = threading.Event()
    runner = threading.Thread(target=serve, kwargs={"port": 0, "dialect": "openai", "stop": stop, "out": out})
    runner.start()
    try:
        deadline = time.monotonic() + 10.0
        while "Ctrl-C" not in out.getvalue():
            assert time.monotonic() < deadline, "serve() never said where it listens"
            runner.join(0.01)  # yields to the serving thread; returns at once if it has ended
        base_url = out.getvalue().splitlines()[0].rsplit(" ", 1)[-1]
        reply = httpx.post(f"{base_url}/responses", json={"model": "offline", "input": "hi"})
    finally:
        stop.set()
        runner.join(10.0)

    assert not runner.is_alive()
    assert reply.json()["status"] == "completed"
    assert out.getvalue().endswith("Stopped after 1 requests.\n")
