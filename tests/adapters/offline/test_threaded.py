"""uvicorn in a thread of its own: started and stopped from sync code, uvicorn imported only to serve."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import uvicorn

from adapters.offline.threaded import (
    Receive,
    Scope,
    Send,
    ThreadedServer,
    listening,
    read_request,
)

ROOT = Path(__file__).resolve().parents[3]


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with what it read: method, path and body."""
    request = await read_request(scope, receive)
    body = f"{request.method} {request.path} {request.headers['x-probe']} ".encode() + request.body
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]}
    )
    await send({"type": "http.response.body", "body": body})


def test_a_request_is_read_whole_with_its_query_and_lower_cased_headers() -> None:
    with ThreadedServer(echo, name="echo") as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.port}/any/path?q=1&r=%20",
            content=iter([b"one ", b"two ", b"three"]),  # sent chunked, in three pieces
            headers={"X-Probe": "Seen"},
        )

    assert reply.text == "POST /any/path?q=1&r=%20 Seen one two three"
    assert server.state == "stopped"


def test_start_is_idempotent_stop_may_repeat_and_a_stopped_server_stays_stopped() -> None:
    server = ThreadedServer(echo, name="echo")
    assert server.state == "not started"
    assert server.open_connections == 0
    server.stop()

    assert server.start() is server.start()
    assert server.state == "running"
    server.stop()
    server.stop()

    assert server.state == "stopped"
    with pytest.raises(RuntimeError, match="echo cannot be restarted once stopped"):
        server.start()
    with pytest.raises(RuntimeError, match="echo is not running"):
        _ = server.port


def test_a_taken_port_fails_in_the_callers_thread() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken, pytest.raises(OSError, match="in use"):
        ThreadedServer(echo, name="echo", port=taken.getsockname()[1]).start()


def test_a_server_that_dies_while_starting_says_so_with_the_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing_startup(self: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
        raise OSError("no file descriptors left")

    monkeypatch.setattr(uvicorn.Server, "startup", failing_startup)
    server = ThreadedServer(echo, name="echo")

    with pytest.raises(RuntimeError, match="echo stopped before it started serving") as caught:
        server.start()

    assert isinstance(caught.value.__cause__, OSError)
    assert server.state == "stopped"


def test_without_uvicorn_starting_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)

    with pytest.raises(ModuleNotFoundError, match=r"pip install 'meeting-assistant-agents\[offline\]'"):
        ThreadedServer(echo, name="echo").start()


def test_importing_the_stand_in_imports_no_uvicorn() -> None:
    probe = "import sys, adapters.offline, adapters.cli; print('uvicorn' in sys.modules)"

    done = subprocess.run(  # noqa: S603  # this interpreter, on a fixed line of code
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )

    assert done.stdout.strip() == "False"


def test_an_idle_connection_outlives_the_clients_keep_alive_so_the_client_always_lets_go_first() -> None:
    # Equal limits (uvicorn's and httpx's defaults are both 5 s) let a client pick a pooled connection in the
    # instant the server closes it: "Server disconnected" before any response, on a loaded machine above all.
    server, listener = listening(echo, grace_seconds=1)
    listener.close()

    expiry = httpx.Limits().keepalive_expiry  # a client built without the container keeps httpx's default
    assert expiry is not None
    assert server.config.timeout_keep_alive > expiry
