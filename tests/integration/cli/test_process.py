"""The installed ``meeting-agents`` script in its own process, as a user or a script runs it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.cli import EXIT_INTERRUPTED, EXIT_MODEL_FAILED, EXIT_OK, EXIT_USAGE
from adapters.offline import OfflineResponsesServer
from tests.integration.cli.support import (
    OFFLINE_NOTE,
    PLANTED_KEY,
    PROCESS_TIMEOUT,
    SCRIPT,
    TRANSCRIPT,
    WORKFLOW,
    OnTerminal,
    run_probe,
    run_process,
    screen_lines,
)
from tests.support.doc_blocks import environment, run_python, section_block
from tests.support.processes import clean_environment, start

OPTIONS = ["--format", "json", "--no-streaming", "--scenario", "malformed-arguments"]


def test_options_before_or_after_the_command_and_stdin_give_the_same_json() -> None:
    before = run_process(*OPTIONS, "summarize", str(TRANSCRIPT))
    after = run_process("summarize", str(TRANSCRIPT), *OPTIONS)
    piped = run_process(*OPTIONS, "summarize", "-", stdin=b"\xef\xbb\xbf" + TRANSCRIPT.read_bytes())
    for ran in (before, after, piped):
        assert ran.code == EXIT_OK, ran.err
        assert ran.err == OFFLINE_NOTE  # no banner, no log line: stderr is not a terminal and there is no -v
    document = before.json()  # the whole of stdout is one JSON object
    assert after.json() == document
    assert piped.json() == document
    assert [call["error"] for call in document["tool_calls"] if call["guarded"]] == ["invalid_tool_arguments"]


def test_bad_configuration_is_one_line_and_exit_2() -> None:
    ran = run_process("summarize", str(TRANSCRIPT), environ={"AGENT_BASE_URL": "not-a-url"})
    assert ran.code == EXIT_USAGE
    assert ran.err == (
        "meeting-agents: error: agent.base_url: expected an http(s) URL with a host, "
        "e.g. http://127.0.0.1:4000/v1, got 'not-a-url'\n"
    )
    assert ran.out == ""


def test_verbose_failure_logs_each_request_once_and_never_the_key() -> None:
    with OfflineResponsesServer() as server:
        environ = {
            "AGENT_BASE_URL": server.base_url,
            "AGENT_MODEL": "offline:http-401",
            "AGENT_API_KEY": PLANTED_KEY,
            "AGENT_MAX_RETRIES": "0",
        }
        ran = run_process("-v", "summarize", str(TRANSCRIPT), environ=environ)
    assert ran.code == EXIT_MODEL_FAILED
    assert PLANTED_KEY not in ran.out + ran.err
    assert len([line for line in ran.err_lines if "HTTP Request: POST" in line]) == 1
    assert len([line for line in ran.err_lines if line.startswith("meeting-agents: error: ")]) == 1
    assert "Traceback (most recent call last):" in ran.err


def test_python_dash_m_runs_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--version"],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=PROCESS_TIMEOUT,
        check=False,
    )
    assert done.returncode == EXIT_OK
    assert done.stdout.startswith("meeting-agents ")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_while_waiting_on_a_stalled_gateway_exits_130_with_one_line(tmp_path: Path) -> None:
    output = tmp_path / "edited.json"
    with OfflineResponsesServer() as server:
        environ = {
            "AGENT_BASE_URL": server.base_url,
            "AGENT_MODEL": "offline:stall",
            "AGENT_API_KEY": PLANTED_KEY,
        }
        argv = [str(SCRIPT), "edit-workflow", str(WORKFLOW), "remove Manual QA sign-off", "--output"]
        process = start([*argv, str(output)], environ=environ)
        try:
            deadline = time.monotonic() + PROCESS_TIMEOUT
            # Ready once the stalled request has reached the server; a bounded wait on the process
            # between looks notices a command that ended early instead of waiting for nothing.
            while not server.requests:
                assert time.monotonic() < deadline, "the command never sent its request"
                with pytest.raises(subprocess.TimeoutExpired):
                    process.wait(timeout=0.05)
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=PROCESS_TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate(timeout=PROCESS_TIMEOUT)
    assert process.returncode == EXIT_INTERRUPTED
    assert err.decode() == "meeting-agents: error: interrupted\n"
    assert out == b""
    assert list(tmp_path.iterdir()) == []  # the temporary output file went with it


LIVE = "meeting-agents: round"


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_terminal_shows_the_live_line_and_a_pipe_does_not(tmp_path: Path) -> None:
    argv = ["--stream", "summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments"]
    with OnTerminal(*argv, stdout=tmp_path / "out.txt") as terminal:
        shown = terminal.finish()
    piped = run_process(*argv)
    assert shown.code == piped.code == EXIT_OK, shown.err
    assert f"\r\x1b[K{LIVE} 1, " in shown.err
    assert "tool calls answered (1 refused by the guard)" in shown.err
    assert f"\r\x1b[K{LIVE} 2, " in shown.err
    assert not [line for line in screen_lines(shown.err) if line.startswith(LIVE)]  # erased at the end
    assert piped.err == OFFLINE_NOTE
    assert shown.out == piped.out
    assert shown.out.startswith("Meeting with ")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals and SIGINT to a child are POSIX")
def test_ctrl_c_during_a_streamed_run_exits_130_with_one_line(tmp_path: Path) -> None:
    with OfflineResponsesServer() as server:
        environ = {
            "AGENT_BASE_URL": server.base_url,
            "AGENT_MODEL": "offline:stall",
            "AGENT_API_KEY": PLANTED_KEY,
        }
        argv = ["summarize", str(TRANSCRIPT), "--stream"]
        with OnTerminal(*argv, stdout=tmp_path / "out.txt", environ=environ) as terminal:
            terminal.wait_for(lambda: bool(server.requests) and LIVE.encode() in terminal.written)
            terminal.process.send_signal(signal.SIGINT)
            shown = terminal.finish()
    assert shown.code == EXIT_INTERRUPTED
    screen = screen_lines(shown.err)
    assert screen[-1] == "meeting-agents: error: interrupted"
    assert [line for line in screen if line.startswith("meeting-agents: ")] == [screen[-1]]
    assert "Traceback" not in shown.err
    assert PLANTED_KEY not in shown.err
    assert shown.out == ""


def test_the_documented_host_program_runs_as_written(tmp_path: Path) -> None:
    done = run_python(section_block("docs/host-integration.md", "## The container"), environment(), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "- Ben: update the changelog (due Thursday)" in done.stdout
    assert '"name": "Manual QA sign-off"' not in done.stdout
    assert '"name": "Publish"' in done.stdout


def test_the_sdk_is_imported_before_the_run_s_clock_starts() -> None:
    # In a fresh process, as a user's first run: the live line's clock starts when LiveRun is built.
    probe = f"""
import sys
from adapters.cli.display import progress
from adapters.cli import main
imported = []
built = progress.LiveRun.__init__
def noting(self, *args, **kwargs):
    imported.append(all(name in sys.modules for name in ("openai", "adapters.container", "httpx")))
    built(self, *args, **kwargs)
progress.LiveRun.__init__ = noting
code = main(["summarize", {str(TRANSCRIPT)!r}, "--format", "json"], environ={{}})
print(code, imported)
"""
    done = run_probe(probe)
    assert done.stdout.strip().splitlines()[-1] == "0 [True]", done.stderr
