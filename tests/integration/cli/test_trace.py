"""``--trace``: the run's span tree on stderr, drawn from real spans of a run against the offline stand-in."""

from __future__ import annotations

import json
import re
import sys

import pytest

from adapters.cli import EXIT_MODEL_FAILED, EXIT_OK, EXIT_USAGE
from adapters.offline import OfflineResponsesServer
from tests.integration.cli.support import PLANTED_KEY, TRANSCRIPT, run
from tests.support.doc_blocks import section_block
from tests.support.processes import gateway_environment

HEADER = "Trace (span, duration, tokens, error):"
DURATION = r"\d+\.\d+ m?s"


def tree(err: str) -> list[str]:
    lines = err.splitlines()
    return lines[lines.index(HEADER) + 1 :]


def test_a_summary_with_a_guarded_call_prints_its_tree_on_stderr_only() -> None:
    ran = run(
        "summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments", "--trace", "--format", "json"
    )

    assert ran.code == EXIT_OK
    assert ran.json()["complete"] is True  # stdout holds the result and nothing else
    lines = tree(ran.err)
    assert re.fullmatch(rf"invoke_agent meeting_summary +{DURATION}  tokens \d+ in / \d+ out", lines[0])
    chats = [line for line in lines if line[3:].startswith("chat offline:malformed-arguments")]
    assert len(chats) == 3
    # Nothing is shown before an answer is whole, so the command reads each answer whole: its first
    # update is the whole answer, handed over at the end of the request.
    whole = rf"{DURATION}  tokens \d+ in / \d+ out  first update after {DURATION}$"
    assert all(re.search(whole, line) for line in chats), chats
    refused = [line for line in lines if line.endswith("error invalid_tool_arguments")]
    assert len(refused) == 1
    assert refused[0].startswith("├─ execute_tool record_action_item")
    assert lines[-1].startswith("└─ chat ")
    assert all(line.startswith(("├─ ", "└─ ")) for line in lines[1:])


def test_a_streamed_run_shows_each_requests_time_to_its_first_update() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--stream", "--trace")
    assert ran.code == EXIT_OK
    chats = [line for line in tree(ran.err) if line[3:].startswith("chat offline")]
    assert len(chats) == 2
    streamed = rf"{DURATION}  tokens \d+ in / \d+ out  first update after {DURATION}$"
    assert all(re.search(streamed, line) for line in chats), chats


def test_a_retried_request_shows_its_attempts_and_a_failed_run_its_error() -> None:
    retried = run("summarize", str(TRANSCRIPT), "--scenario", "http-429*1", "--trace")
    failed = run("summarize", str(TRANSCRIPT), "--scenario", "http-500", "--trace")

    assert retried.code == EXIT_OK
    assert "attempts 2 (429, 200)" in tree(retried.err)[1]
    assert failed.code == EXIT_MODEL_FAILED
    agent, chat = tree(failed.err)
    assert agent.endswith("error ChatTransportError")
    assert chat.startswith("└─ chat offline:http-500")
    assert re.search(r"attempts 3 \(500, 500, 500\)  error ChatTransportError$", chat)


def test_trace_switches_the_telemetry_on_and_never_shows_the_key() -> None:
    with OfflineResponsesServer() as server:
        environ = gateway_environment(server.base_url, api_key=PLANTED_KEY, AGENT_TELEMETRY="false")
        ran = run("summarize", str(TRANSCRIPT), "--trace", environ=environ)

    assert ran.code == EXIT_OK
    assert tree(ran.err)[0].startswith("invoke_agent meeting_summary")
    assert PLANTED_KEY not in ran.err + ran.out


def test_without_trace_there_is_no_tree() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--format", "json")

    assert ran.code == EXIT_OK
    assert HEADER not in ran.err
    assert json.loads(ran.out)["decisions"]


def test_without_the_sdk_trace_is_refused_before_any_request_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "adapters.telemetry.console", raising=False)
    # None in sys.modules makes the import fail as it does when the SDK is not installed.
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)

    ran = run("summarize", str(TRANSCRIPT), "--trace")

    assert ran.code == EXIT_USAGE
    assert ran.out == ""
    (line,) = ran.err_lines
    assert line == (
        "meeting-agents: error: --trace needs the OpenTelemetry SDK, which is not installed: "
        "pip install 'meeting-assistant-agents[cli]'"
    )


def test_the_telemetry_page_shows_the_tree_the_demo_prints() -> None:
    shown = section_block("docs/telemetry.md", "## Seeing a run: `--trace`", "text")

    ran = run(
        "summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments+ungrounded-citation", "--trace"
    )

    def without_durations(lines: list[str]) -> list[str]:
        return [re.sub(rf" +{DURATION}", " ", line) for line in lines]

    assert ran.code == EXIT_OK
    assert without_durations(tree(ran.err)) == without_durations(tree(shown))
