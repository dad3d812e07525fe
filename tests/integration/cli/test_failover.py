"""The command with agent.fallbacks: -v says which target answered, and no target's key is ever shown."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Final

import pytest

from adapters.cli.exit_codes import EXIT_MODEL_FAILED, EXIT_OK
from adapters.offline import OfflineResponsesServer
from tests.integration.cli.support import PLANTED_KEY, TRANSCRIPT, run
from tests.support.processes import gateway_environment
from tests.support.upstreams import FakeServer, echo_route

BACKUP_KEY: Final = "sk-BACKUP-cli-7733"


@pytest.fixture
def refusing() -> Iterator[str]:
    """A base URL on 127.0.0.1 whose port is bound but not listening: every connection is refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/v1"


def _environ(primary: str, fallback: str, model: str) -> dict[str, str]:
    return gateway_environment(
        primary,
        "gpt-primary",
        PLANTED_KEY,
        AGENT_MAX_RETRIES="0",
        AGENT_FALLBACKS=json.dumps([{"base_url": fallback, "model": model, "api_key_env": "BACKUP_KEY"}]),
        BACKUP_KEY=BACKUP_KEY,
    )


def test_the_verbose_lines_name_the_fallbacks_and_the_target_that_answered(refusing: str) -> None:
    with OfflineResponsesServer() as backup:
        base_url = backup.base_url
        ran = run("-v", "summarize", str(TRANSCRIPT), environ=_environ(refusing, base_url, "offline"))
    assert ran.code == EXIT_OK, ran.err
    assert f"Fallback fallback-1: {base_url} (model offline)" in ran.err_lines
    answered = [line for line in ran.err_lines if line.startswith("INFO adapters.failover: Answered by")]
    assert answered
    assert set(answered) == {
        f"INFO adapters.failover: Answered by fallback-1 (model offline at {base_url}) "
        "after 1 failed target(s)"
    }
    assert any(
        line.startswith("WARNING adapters.failover: Failover: primary failed") for line in ran.err_lines
    )


@pytest.mark.parametrize("verbose", [[], ["-v"]], ids=["quiet", "verbose"])
@pytest.mark.parametrize(("model", "code"), [("echo-text", EXIT_OK), ("echo-401", EXIT_MODEL_FAILED)])
def test_a_fallback_key_is_never_shown_even_when_its_gateway_echoes_it(
    refusing: str, verbose: list[str], model: str, code: int
) -> None:
    with FakeServer(echo_route) as echo:
        ran = run("summarize", str(TRANSCRIPT), *verbose, environ=_environ(refusing, echo.base_url, model))
        sent = {request.headers.get("authorization") for request in echo.requests}
    assert ran.code == code, ran.err
    # The backup gateway got its own key, and it is cut from the answer, the error and every log line.
    assert sent == {f"Bearer {BACKUP_KEY}"}
    assert BACKUP_KEY not in ran.out + ran.err
    assert PLANTED_KEY not in ran.out + ran.err
    if model == "echo-text":
        assert "Your key is [REDACTED]." in ran.out
    else:
        # Both failures are told: the primary's refused connection and the backup's 401.
        assert "every target tried failed: primary: ChatTransportError" in ran.err
        assert "fallback-1: ChatTransportError: HTTP 401" in ran.err
