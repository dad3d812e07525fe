"""The command's results and exit codes, run in this process against real servers on 127.0.0.1."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import socket
import stat
import sys
from pathlib import Path

import pytest

from adapters.cli import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_MODEL_FAILED,
    EXIT_NOT_CARRIED_OUT,
    EXIT_OK,
    EXIT_USAGE,
    main,
)
from adapters.cli import app as cli_app
from adapters.cli.files import AtomicOutput
from adapters.offline import OfflineResponsesServer
from application import workflow_from_json
from tests.integration.cli.support import (
    OFFLINE_NOTE,
    PLANTED_KEY,
    REMOVE_QA,
    TRANSCRIPT,
    WORKFLOW,
    Ran,
    edit_without_qa,
    run,
)
from tests.support.processes import gateway_environment
from tests.support.upstreams import FakeServer, echo_route

SUMMARY_KEYS = {
    "text",
    "action_items",
    "decisions",
    "complete",
    "failed_chunks",
    "tool_calls",
    "stop_reason",
    "usage",
    "status",
    "pending",
}
EDIT_KEYS = {"workflow", "text", "complete", "tool_calls", "stop_reason", "usage", "status", "pending"}
CALL_KEYS = {"call_id", "name", "guarded", "error"}


def planted_environment(server: OfflineResponsesServer) -> dict[str, str]:
    """The stand-in ``server`` as the command's gateway, with the planted key."""
    return gateway_environment(server.base_url, api_key=PLANTED_KEY)


def one_error_line(ran: Ran) -> str:
    """The one line on stderr, besides the stand-in's note when the stand-in answered."""
    assert len(ran.err_lines) == 1, ran.err
    line = ran.err_lines[0]
    assert line.startswith("meeting-agents: error: "), line
    return line


# ---------------------------------------------------------------- results


def test_summary_text_shows_the_guarded_call_its_error_kind_and_its_replacement() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments")
    assert ran.code == EXIT_OK, ran.err
    assert ran.err == OFFLINE_NOTE  # not a terminal and no -v: no banner, no usage line
    assert "Action items (6)" in ran.out
    assert "  1. Tom: fix the flaky checkout test (due Wednesday) [L13]" in ran.out
    assert "Decisions (3)" in ran.out
    assert "  1. Ship 2.4 on Thursday without the new onboarding flow [L28]" in ran.out
    assert "Tool calls (11, 1 guarded)" in ran.out
    [guarded] = [line for line in ran.out.splitlines() if "GUARDED" in line]
    assert "record_action_item" in guarded
    assert "arguments rejected (invalid_json" in guarded
    assert "; re-issued as [call_" in guarded
    # The call that replaced it is the same item sent whole, not merely the next call of that tool.
    assert 'owner="Maya", task="update the release notes"' in guarded


def test_the_demo_shows_an_ungrounded_call_cited_again_and_quote_prints_the_cited_lines() -> None:
    ran = run(
        "summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments+ungrounded-citation", "--quote"
    )
    assert ran.code == EXIT_OK, ran.err
    assert "Tool calls (12, 1 guarded, 1 ungrounded)" in ran.out
    [refused] = [line for line in ran.out.splitlines() if "UNGROUNDED" in line]
    assert 'owner="Tom", task="fix the flaky checkout test", due="Wednesday", lines=[12]' in refused
    assert "; cited again as [call_" in refused
    assert 'due="Wednesday", lines=[13], quote="Then Tom wil' in refused.split("; cited again as")[1]
    lines = ran.out.splitlines()
    at = lines.index("  1. Tom: fix the flaky checkout test (due Wednesday) [L13]")
    assert lines[at + 1] == (
        "       L13 | [01:48] Priya: Then Tom will fix the flaky checkout test by Wednesday, and shout if "
        "you need a second pair of eyes."
    )
    assert "L12 |" not in ran.out


def test_summary_json_is_exactly_the_contract_shape() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--scenario", "malformed-arguments", "--format", "json")
    assert ran.code == EXIT_OK, ran.err
    assert ran.err == OFFLINE_NOTE
    document = ran.json()
    assert set(document) == SUMMARY_KEYS
    assert document["complete"] is True
    assert {
        "owner": "Tom",
        "task": "fix the flaky checkout test",
        "due": "Wednesday",
        "lines": [13],
        "start": None,
        "end": None,
        "speakers": ["Priya"],
    } in document["action_items"]
    cited = {"lines", "start", "end", "speakers"}
    assert all(set(item) == {"owner", "task", "due", *cited} for item in document["action_items"])
    assert all(set(decision) == {"text", *cited} for decision in document["decisions"])
    assert document["decisions"][0] == {
        "text": "Ship 2.4 on Thursday without the new onboarding flow",
        "lines": [28],
        "start": None,
        "end": None,
        "speakers": ["Priya"],
    }
    assert len(document["decisions"]) == 3
    assert document["failed_chunks"] == []
    assert all(set(call) == CALL_KEYS for call in document["tool_calls"])
    guarded = [call for call in document["tool_calls"] if call["guarded"]]
    assert [(call["name"], call["error"]) for call in guarded] == [
        ("record_action_item", "invalid_tool_arguments")
    ]
    assert all(call["error"] is None for call in document["tool_calls"] if not call["guarded"])


def test_both_adapters_give_the_same_json_summary() -> None:
    streamed = run("summarize", str(TRANSCRIPT), "--format", "json")
    plain = run("summarize", str(TRANSCRIPT), "--format", "json", "--no-streaming")
    assert (streamed.code, plain.code) == (EXIT_OK, EXIT_OK)
    assert {k: v for k, v in plain.json().items() if k != "tool_calls"} == {
        k: v for k, v in streamed.json().items() if k != "tool_calls"
    }


def test_edit_workflow_json_carries_a_workflow_the_command_can_read_back(tmp_path: Path) -> None:
    ran = edit_without_qa("--format", "json")
    assert ran.code == EXIT_OK, ran.err
    document = ran.json()
    assert set(document) == EDIT_KEYS
    assert document["complete"] is True
    edited = workflow_from_json(json.dumps(document["workflow"]))
    assert "Manual QA sign-off" not in [step.name for step in edited.steps]
    assert [call["name"] for call in document["tool_calls"]] == ["list_steps", "remove_step"]


def test_edit_workflow_text_shows_the_diff() -> None:
    ran = edit_without_qa()
    assert ran.code == EXIT_OK, ran.err
    assert "  - step-4: Manual QA sign-off (approval)\n" in ran.out
    assert "    step-5: Publish to app stores (deploy)\n" in ran.out
    assert "Model: Edited Mobile app release" in ran.out


def test_verbose_shows_the_banner_mode_and_usage_on_stderr_only() -> None:
    ran = run("summarize", str(TRANSCRIPT), "-v", "--format", "json", "--no-streaming")
    assert ran.code == EXIT_OK, ran.err
    assert set(ran.json()) == SUMMARY_KEYS  # stdout is still nothing but the JSON
    assert "Endpoint: OFFLINE stand-in at http://127.0.0.1:" in ran.err
    assert "not a language model" in ran.err
    assert "Mode: JSON (ResponsesJsonAdapter)" in ran.err
    assert re.search(
        r"^Usage: \d+ requests, [\d,]+ input \(\d+% cached\) \+ [\d,]+ output tokens, cost not reported$",
        ran.err,
        re.M,
    )


HELP_EXIT_CODES = (
    "0    done",
    "1    the model or the gateway failed",
    "2    bad input or configuration, found before any request",
    "3    the model's answer was incomplete",
    "4    edit-workflow: the instruction was not carried out",
    "130  interrupted",
)


def test_help_documents_every_exit_code() -> None:
    ran = run("--help")
    assert ran.code == EXIT_OK
    for documented in HELP_EXIT_CODES:
        assert documented in ran.out
    assert run("edit-workflow", "--help").code == EXIT_OK


def test_each_command_documents_its_exit_codes() -> None:
    summarize, edit = run("summarize", "--help"), run("edit-workflow", "--help")
    assert (summarize.code, edit.code) == (EXIT_OK, EXIT_OK)
    assert "3 incomplete answer, 130 Ctrl-C" in summarize.out
    assert "4 instruction not carried out (workflow unchanged; stderr says why)" in edit.out
    assert "--output is written only on exit code 0" in edit.out


def test_version_names_the_installed_distribution() -> None:
    ran = run("--version")
    assert ran.out.strip().startswith("meeting-agents ")
    assert ran.out.split()[1][0].isdigit()


# ---------------------------------------------------------------- options before or after the command


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--config", "/nonexistent/agents.yaml"], "config file '/nonexistent/agents.yaml': cannot be read"),
        (["--no-streaming", "-v"], "Mode: JSON (ResponsesJsonAdapter)"),
        (["--scenario", "http-500"], "HTTP 500"),
        (["-v"], "Endpoint: OFFLINE stand-in"),
        (["--format", "json"], '"action_items"'),
    ],
)
def test_a_global_option_means_the_same_before_and_after_the_command(
    options: list[str], expected: str
) -> None:
    environ = {"AGENT_MAX_RETRIES": "0"}
    before = run(*options, "summarize", str(TRANSCRIPT), environ=environ)
    after = run("summarize", str(TRANSCRIPT), *options, environ=environ)
    assert before.code == after.code
    assert expected in before.out + before.err
    assert expected in after.out + after.err


def test_the_later_of_two_spellings_wins() -> None:
    ran = run("--format", "json", "summarize", str(TRANSCRIPT), "--format", "text")
    assert ran.code == EXIT_OK
    assert ran.out.startswith("Summary\n")
    assert (
        run("--streaming", "-v", "summarize", str(TRANSCRIPT), "--no-streaming").err.count("Mode: JSON") == 1
    )


# ---------------------------------------------------------------- bad input: exit 2, one line, no request


def test_an_unknown_option_is_one_line() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--colour")
    assert ran.code == EXIT_USAGE
    assert "unrecognized arguments: --colour (see meeting-agents --help)" in one_error_line(ran)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "Ana: café au lait, then we decided to ship\n".encode("latin-1"),
            "not UTF-8 text (byte 0xe9 at offset 8)",
        ),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "a binary file, not text (a NUL byte at offset 8)"),
        ("Ana: hi".encode("utf-16"), "UTF-16 text; save it as UTF-8"),
        (b"", "empty; there is nothing to summarize"),
        (b"\xef\xbb\xbf \n\t\n", "empty; there is nothing to summarize"),
    ],
)
def test_an_unusable_transcript_is_refused_before_any_request(
    offline_server: OfflineResponsesServer, tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "transcript.txt"
    path.write_bytes(content)
    ran = run("summarize", str(path), environ=planted_environment(offline_server))
    assert ran.code == EXIT_USAGE
    assert f"TRANSCRIPT_FILE {str(path)!r}: {message}" in one_error_line(ran)
    assert offline_server.requests == ()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("AGENT_DEADLINE_SECONDS", "nan"),
        ("AGENT_DEADLINE_SECONDS", "inf"),
        ("AGENT_TIMEOUT_SECONDS", "nan"),
        ("AGENT_TIMEOUT_SECONDS", "-3"),
        ("AGENT_MAX_RESPONSE_BYTES", "-1"),
        ("AGENT_MAX_OUTPUT_ITEMS", "0"),
        ("AGENT_MAX_TRANSCRIPT_BYTES", "-5"),
    ],
)
def test_a_number_that_is_not_finite_and_positive_is_exit_2_naming_the_key(
    offline_server: OfflineResponsesServer, key: str, value: str
) -> None:
    ran = run("summarize", str(TRANSCRIPT), environ={**planted_environment(offline_server), key: value})
    assert ran.code == EXIT_USAGE
    name = key.removeprefix("AGENT_").lower()
    assert f"agent.{name}: expected a finite " in one_error_line(ran)
    assert offline_server.requests == ()


@pytest.mark.parametrize("source", ["/dev/zero", "a file one byte over the limit", "stdin over the limit"])
def test_a_transcript_over_max_transcript_bytes_is_refused_without_reading_it_all(
    offline_server: OfflineResponsesServer, tmp_path: Path, source: str
) -> None:
    environ = planted_environment(offline_server)
    stdin = None
    if source == "/dev/zero":
        # Endless: reading it whole would run out of memory; the limit stops it at the default 50 MiB.
        argument = "/dev/zero"
    else:
        environ["AGENT_MAX_TRANSCRIPT_BYTES"] = "100"
        content = b"Ana: we decided to ship it. " * 3 + b"Ben: ok!" + b"x" * (101 - 92)
        assert len(content) == 101
        if source.startswith("stdin"):
            argument, stdin = "-", content
        else:
            path = tmp_path / "long.txt"
            path.write_bytes(content)
            argument = str(path)
    ran = run("summarize", argument, environ=environ, stdin=stdin)
    assert ran.code == EXIT_USAGE
    assert "larger than agent.max_transcript_bytes" in one_error_line(ran)
    assert offline_server.requests == ()


def test_a_transcript_at_max_transcript_bytes_is_read(
    offline_server: OfflineResponsesServer, tmp_path: Path
) -> None:
    path = tmp_path / "exact.txt"
    path.write_bytes(TRANSCRIPT.read_bytes())
    environ = {**planted_environment(offline_server), "AGENT_MAX_TRANSCRIPT_BYTES": str(path.stat().st_size)}
    assert run("summarize", str(path), environ=environ).code == 0


def test_a_missing_transcript_names_the_file(offline_server: OfflineResponsesServer) -> None:
    ran = run("summarize", "no-such-file.txt", environ=planted_environment(offline_server))
    assert ran.code == EXIT_USAGE
    assert "TRANSCRIPT_FILE 'no-such-file.txt': cannot be read (No such file or directory)" in one_error_line(
        ran
    )
    assert offline_server.requests == ()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["edit-workflow", str(TRANSCRIPT), REMOVE_QA], "WORKFLOW_JSON"),
        (["edit-workflow", str(WORKFLOW), "  "], "INSTRUCTION: empty"),
        (
            ["summarize", str(TRANSCRIPT), "--scenario", "no-such"],
            "--scenario: unknown offline scenario 'no-such'",
        ),
        (
            ["summarize", str(TRANSCRIPT), "--scenario", "http-429*abc"],
            "unknown offline scenario 'http-429*abc'",
        ),
    ],
)
def test_bad_arguments_are_refused_before_any_request(
    offline_server: OfflineResponsesServer, argv: list[str], message: str
) -> None:
    ran = run(*argv, environ=planted_environment(offline_server))
    assert ran.code == EXIT_USAGE
    assert message in one_error_line(ran)
    assert offline_server.requests == ()


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"AGENT_BASE_URL": "not-a-url"}, "agent.base_url: expected an http(s) URL with a host"),
        ({"AGENT_BASE_URL": "ftp://127.0.0.1/v1"}, "agent.base_url: expected an http(s) URL"),
        ({"AGENT_OFFLINE_SCENARIO": "http-429*abc"}, "agent.offline_scenario: unknown offline scenario"),
        ({"AGENT_OFFLINE_SCENARIO": "nope"}, "agent.offline_scenario: unknown offline scenario 'nope'"),
        ({"AGENT_USE_STREAMING": "maybe"}, "agent.use_streaming: expected one of true/false/1/0/yes/no"),
        (
            {"AGENT_TRANSCRIPT_WARNING_CHARS": "0"},
            "agent.transcript_warning_chars: expected a finite positive number",
        ),
        ({"AGENT_BASE_URL": "http://127.0.0.1:9/v1", "AGENT_API_KEY": "sk-x"}, "agent.model: not set"),
        ({"AGENT_BASE_URL": "http://127.0.0.1:9/v1", "AGENT_MODEL": "m"}, "agent.api_key: not set"),
        (
            {
                "AGENT_BASE_URL": "http://127.0.0.1:9/v1",
                "AGENT_MODEL": "m",
                "AGENT_OFFLINE_SCENARIO": "stall",
            },
            "agent.offline_scenario: applies only to the offline stand-in",
        ),
    ],
)
def test_bad_configuration_is_one_line_before_the_banner(environ: dict[str, str], message: str) -> None:
    ran = run("-v", "summarize", str(TRANSCRIPT), environ=environ)
    assert ran.code == EXIT_USAGE
    assert message in one_error_line(ran)  # -v, yet not even the banner came first


def test_a_misspelt_gateway_variable_is_refused_naming_the_right_one(
    offline_server: OfflineResponsesServer,
) -> None:
    environ = {
        "AGENT_API_KEY": PLANTED_KEY,
        "AGENT_MODEL": "offline",
        "AGENT_BASEURL": offline_server.base_url,
    }
    ran = run("summarize", str(TRANSCRIPT), environ=environ)
    assert ran.code == EXIT_USAGE
    line = one_error_line(ran)  # no summary from the stand-in, and no other line
    assert line.startswith(
        "meeting-agents: error: AGENT_BASEURL: unknown environment variable; did you mean AGENT_BASE_URL? "
    )
    assert PLANTED_KEY not in line
    assert ran.out == ""
    assert offline_server.requests == ()


@pytest.mark.parametrize(
    ("environ", "config", "named"),
    [
        ({"AGENT_API_KEY": PLANTED_KEY}, "", "but AGENT_API_KEY is; "),
        ({"AGENT_MODEL": "gpt-test"}, "", "but AGENT_MODEL is; "),
        (
            {"AGENT_MODEL": "gpt-test"},
            f'api_key = "{PLANTED_KEY}"\n',
            "but agent.api_key in --config and AGENT_MODEL are; ",
        ),
    ],
)
def test_a_gateway_setting_without_a_base_url_is_refused_instead_of_running_the_stand_in(
    tmp_path: Path, environ: dict[str, str], config: str, named: str
) -> None:
    path = tmp_path / "agents.toml"
    path.write_text("[agent]\n" + config, encoding="utf-8")
    ran = run("summarize", str(TRANSCRIPT), "--config", str(path), environ=environ)
    assert ran.code == EXIT_USAGE
    line = one_error_line(ran)
    assert line.startswith("meeting-agents: error: agent.base_url: not set, " + named)
    assert "set AGENT_BASE_URL (or agent.base_url in --config)" in line
    assert PLANTED_KEY not in line
    assert ran.out == ""


def test_without_any_gateway_setting_the_stand_in_says_so_in_one_line() -> None:
    ran = run("summarize", str(TRANSCRIPT), environ={"AGENT_USE_STREAMING": "false"})
    assert ran.code == EXIT_OK
    assert ran.err == OFFLINE_NOTE
    assert ran.out.startswith("Summary\n")


def test_a_scenario_flag_against_a_real_gateway_is_refused(offline_server: OfflineResponsesServer) -> None:
    ran = run(
        "summarize", str(TRANSCRIPT), "--scenario", "http-500", environ=planted_environment(offline_server)
    )
    assert ran.code == EXIT_USAGE
    assert "--scenario: applies only to the offline stand-in" in one_error_line(ran)
    assert offline_server.requests == ()


def test_a_model_from_the_config_file_counts(offline_server: OfflineResponsesServer, tmp_path: Path) -> None:
    config = tmp_path / "agents.toml"
    config.write_text(
        f'[agent]\nbase_url = "{offline_server.base_url}"\nmodel = "offline"\n', encoding="utf-8"
    )
    ran = run("--config", str(config), "summarize", str(TRANSCRIPT), environ={"AGENT_API_KEY": PLANTED_KEY})
    assert ran.code == EXIT_OK, ran.err
    assert len(offline_server.requests) > 1


def test_a_bad_config_file_value(tmp_path: Path) -> None:
    config = tmp_path / "agents.toml"
    config.write_text('[agent]\nmax_retries = "lots"\n', encoding="utf-8")
    ran = run("summarize", str(TRANSCRIPT), "--config", str(config))
    assert ran.code == EXIT_USAGE
    assert "agent.max_retries: expected a whole number, got 'lots'" in one_error_line(ran)


# ---------------------------------------------------------------- input encodings and stdin


def test_a_bom_does_not_cost_the_first_speaker(tmp_path: Path) -> None:
    text = "Ana: I'll send the invite by Friday.\nBen: Fine.\n"
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    with_bom = run("summarize", str(path), "--format", "json")
    assert with_bom.code == EXIT_OK, with_bom.err
    assert with_bom.json()["action_items"] == [
        {
            "owner": "Ana",
            "task": "send the invite",
            "due": "Friday",
            "lines": [1],
            "start": None,
            "end": None,
            "speakers": ["Ana"],
        }
    ]


def test_stdin_reads_the_transcript_and_the_workflow() -> None:
    from_file = run("summarize", str(TRANSCRIPT), "--format", "json")
    from_stdin = run("summarize", "-", "--format", "json", stdin=b"\xef\xbb\xbf" + TRANSCRIPT.read_bytes())
    assert from_stdin.code == EXIT_OK, from_stdin.err
    assert from_stdin.json() == from_file.json()
    edited = run(
        "edit-workflow", "-", REMOVE_QA, "--approve", "all", "--format", "json", stdin=WORKFLOW.read_bytes()
    )
    assert edited.code == EXIT_OK, edited.err
    assert len(edited.json()["workflow"]["steps"]) == 5


def test_empty_stdin_is_an_empty_transcript() -> None:
    ran = run("summarize", "-")
    assert ran.code == EXIT_USAGE
    assert "TRANSCRIPT_FILE (stdin): empty" in one_error_line(ran)


def test_a_long_transcript_gets_one_warning_with_its_size() -> None:
    ran = run("summarize", str(TRANSCRIPT), environ={"AGENT_TRANSCRIPT_WARNING_CHARS": "1000"})
    assert ran.code == EXIT_OK
    [warning, note] = ran.err.splitlines()  # the warning before the stand-in starts
    assert note + "\n" == OFFLINE_NOTE
    size = len(TRANSCRIPT.read_text(encoding="utf-8"))
    assert warning.startswith(f"meeting-agents: warning: the transcript is {size:,} characters (about ")
    assert "over agent.transcript_warning_chars=1000" in warning


# ---------------------------------------------------------------- the model or the gateway failed: exit 1


@pytest.mark.parametrize(
    ("scenario", "what"),
    [
        ("response-failed", "the model failed (server_error): "),
        ("error-event", "the model failed"),
        ("truncated-stream", "the gateway's answer could not be read: "),
        ("http-500", "the gateway request failed: HTTP 500"),
        ("http-400", "the gateway request failed: HTTP 400"),
        ("http-401", "the gateway request failed: HTTP 401"),
    ],
)
def test_a_model_or_gateway_failure_is_one_line_naming_where(scenario: str, what: str) -> None:
    ran = run("summarize", str(TRANSCRIPT), "--scenario", scenario, environ={"AGENT_MAX_RETRIES": "0"})
    assert ran.code == EXIT_MODEL_FAILED
    line = one_error_line(ran)
    assert what in line
    assert "POST http://127.0.0.1:" in line
    assert "/v1/responses" in line
    assert f"model offline:{scenario}" in line
    assert "request id req_" in line


def test_retries_are_counted_in_the_line() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--scenario", "http-500", environ={"AGENT_MAX_RETRIES": "2"})
    assert ran.code == EXIT_MODEL_FAILED
    assert "; 3 attempts;" in one_error_line(ran)


def test_an_idle_gateway_names_the_timeout_that_ran_out() -> None:
    environ = {"AGENT_TIMEOUT_SECONDS": "0.5", "AGENT_MAX_RETRIES": "0"}
    ran = run("summarize", str(TRANSCRIPT), "--scenario", "stall", environ=environ)
    assert ran.code == EXIT_MODEL_FAILED
    assert "idle timeout agent.timeout_seconds=0.5 s" in one_error_line(ran)


def test_an_unreachable_gateway_names_the_url_and_the_attempts() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {
        "AGENT_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "AGENT_MODEL": "m",
        "AGENT_API_KEY": PLANTED_KEY,
        "AGENT_MAX_RETRIES": "1",
    }
    ran = run("summarize", str(TRANSCRIPT), environ=environ)
    assert ran.code == EXIT_MODEL_FAILED
    line = one_error_line(ran)
    assert "the gateway request failed: the connection to the Responses endpoint failed" in line
    assert f"[POST http://127.0.0.1:{port}/v1/responses; model m; 2 attempts;" in line


def test_verbose_failure_adds_details_and_log_lines() -> None:
    ran = run(
        "summarize", str(TRANSCRIPT), "--scenario", "http-500", "-v", environ={"AGENT_MAX_RETRIES": "1"}
    )
    assert ran.code == EXIT_MODEL_FAILED
    assert "Traceback (most recent call last):" in ran.err
    assert "ChatTransportError" in ran.err
    requests = [line for line in ran.err_lines if "HTTP Request: POST" in line]
    assert len(requests) == 2  # two attempts, each logged once


# ---------------------------------------------------------------- incomplete: exit 3


def test_an_incomplete_summary_is_printed_and_exits_3() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--scenario", "incomplete", "--format", "json")
    assert ran.code == EXIT_INCOMPLETE
    assert ran.json()["complete"] is False
    assert "the model's answer is incomplete (the output token limit was reached)" in one_error_line(ran)


def test_an_incomplete_edit_does_not_write_its_output(tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    ran = edit_without_qa(
        "--scenario",
        "incomplete",
        "--output",
        str(output),
    )
    assert ran.code == EXIT_INCOMPLETE
    assert "--output not written" in one_error_line(ran)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- an instruction not carried out: exit 4


@pytest.mark.parametrize(
    ("instruction", "why"),
    [
        (
            "remove release",
            "several steps match 'release': 'Freeze the release branch', 'Build release candidate'",
        ),
        ("remove Deploy to staging", "no such step: 'Deploy to staging' matches none of the 6 steps"),
        (
            "make it better",
            "nothing understood: the model made no edit (the model said: Left Mobile app release",
        ),
    ],
)
def test_an_instruction_not_carried_out_says_why_and_exits_4(
    tmp_path: Path, instruction: str, why: str
) -> None:
    output = tmp_path / "out.json"
    ran = run("edit-workflow", str(WORKFLOW), instruction, "--output", str(output))
    assert ran.code == EXIT_NOT_CARRIED_OUT
    line = one_error_line(ran)
    assert "the instruction was not carried out, the workflow is unchanged: " in line
    assert why in line
    assert "(no change)" in ran.out
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- --output


def test_output_is_written_whole_with_no_temporary_file_left(tmp_path: Path) -> None:
    output = tmp_path / "edited.json"
    ran = edit_without_qa("--output", str(output))
    assert ran.code == EXIT_OK, ran.err
    assert [path.name for path in tmp_path.iterdir()] == ["edited.json"]
    assert len(workflow_from_json(output.read_text(encoding="utf-8")).steps) == 5
    mode = stat.S_IMODE(output.stat().st_mode)
    assert mode == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def test_output_replaces_an_existing_file_and_keeps_its_mode(tmp_path: Path) -> None:
    output = tmp_path / "edited.json"
    output.write_text("old", encoding="utf-8")
    output.chmod(0o640)
    ran = edit_without_qa("--output", str(output))
    assert ran.code == EXIT_OK, ran.err
    assert output.read_text(encoding="utf-8").startswith("{")
    assert stat.S_IMODE(output.stat().st_mode) == 0o640
    assert [path.name for path in tmp_path.iterdir()] == ["edited.json"]


def test_a_failed_request_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    output = tmp_path / "edited.json"
    output.write_text("old", encoding="utf-8")
    environ = {"AGENT_MAX_RETRIES": "0"}
    ran = run(
        "edit-workflow",
        str(WORKFLOW),
        REMOVE_QA,
        "--output",
        str(output),
        "--scenario",
        "http-500",
        environ=environ,
    )
    assert ran.code == EXIT_MODEL_FAILED
    assert output.read_text(encoding="utf-8") == "old"
    assert [path.name for path in tmp_path.iterdir()] == ["edited.json"]


def test_the_input_file_is_never_replaced_without_force(tmp_path: Path) -> None:
    workflow = tmp_path / "workflow.json"
    original = WORKFLOW.read_bytes()
    workflow.write_bytes(original)
    link = tmp_path / "same.json"
    link.symlink_to(workflow)
    for target in (workflow, link):
        ran = run("edit-workflow", str(workflow), REMOVE_QA, "--approve", "all", "--output", str(target))
        assert ran.code == EXIT_USAGE
        assert "is the input file WORKFLOW_JSON; add --force to replace it" in one_error_line(ran)
        assert workflow.read_bytes() == original
    forced = run(
        "edit-workflow", str(workflow), REMOVE_QA, "--approve", "all", "--output", str(workflow), "--force"
    )
    assert forced.code == EXIT_OK, forced.err
    assert len(workflow_from_json(workflow.read_bytes()).steps) == 5
    assert sorted(path.name for path in tmp_path.iterdir()) == ["same.json", "workflow.json"]


def test_output_through_a_link_writes_the_file_it_points_to(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    ran = edit_without_qa("--output", str(link))
    assert ran.code == EXIT_OK, ran.err
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8").startswith("{")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("{tmp}", "is a folder; name a file"),
        ("{tmp}/missing/out.json", "the folder '{tmp}/missing' does not exist"),
        ("/dev/null", "is not a regular file"),
        pytest.param(
            "/proc/meeting-agents-out.json",
            "cannot write in '/proc'",
            marks=pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's"),
        ),
    ],
)
def test_an_unusable_output_is_refused_before_any_request(
    offline_server: OfflineResponsesServer, tmp_path: Path, target: str, message: str
) -> None:
    path = target.format(tmp=tmp_path)
    ran = edit_without_qa(
        "--output",
        path,
        environ=planted_environment(offline_server),
    )
    assert ran.code == EXIT_USAGE
    assert f"--output {path!r}: {message.format(tmp=tmp_path)}" in one_error_line(ran)
    assert offline_server.requests == ()


def test_a_state_file_that_cannot_be_opened_discards_every_output_opened_before_it(
    offline_server: OfflineResponsesServer, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    state = tmp_path / "missing" / "state.json"
    ran = run(
        "edit-workflow",
        str(WORKFLOW),
        REMOVE_QA,
        "--output",
        str(outputs / "edited.json"),
        "--save-run",
        str(outputs / "run.json"),
        "--state",
        str(state),
        environ=planted_environment(offline_server),
    )
    assert ran.code == EXIT_USAGE
    assert f"--state {str(state)!r}: the folder" in one_error_line(ran)
    assert offline_server.requests == ()
    assert list(outputs.iterdir()) == []  # neither --output's nor --save-run's temporary file is left


# ---------------------------------------------------------------- secrets


@pytest.mark.parametrize("verbose", [[], ["-v"]], ids=["quiet", "verbose"])
@pytest.mark.parametrize(
    ("model", "code"),
    [("echo-text", EXIT_OK), ("echo-401", EXIT_MODEL_FAILED), ("echo-failed", EXIT_MODEL_FAILED)],
)
@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_planted_key_never_appears_even_when_the_gateway_echoes_it(
    verbose: list[str], model: str, code: int, output_format: str
) -> None:
    with FakeServer(echo_route) as echo:
        environ = gateway_environment(echo.base_url, model, PLANTED_KEY)
        ran = run("summarize", str(TRANSCRIPT), "--format", output_format, *verbose, environ=environ)
    assert ran.code == code, ran.err
    assert PLANTED_KEY not in ran.out + ran.err
    if model == "echo-text":
        assert "Your key is [REDACTED]." in ran.out


@pytest.mark.parametrize(
    ("model", "verbose", "code"),
    [
        ("echo-straddle", ["-v"], EXIT_MODEL_FAILED),
        ("echo-call", [], EXIT_OK),
        ("echo-call", ["-v"], EXIT_OK),
    ],
)
def test_a_key_across_a_cut_is_cut_out_before_the_cut(model: str, verbose: list[str], code: int) -> None:
    """The -v details cut what had arrived at 500 characters, the text report a call's arguments at
    100: the key straddles each cut, and redaction comes first, so no part of it is shown."""
    with FakeServer(echo_route) as echo:
        environ = gateway_environment(echo.base_url, model, PLANTED_KEY)
        ran = run("summarize", str(TRANSCRIPT), *verbose, environ=environ)
    assert ran.code in (code, EXIT_INCOMPLETE), ran.err
    shown = ran.out + ran.err
    # What is cut now is the marker that stands for the key: "[REDAC..." at the cut.
    assert "[REDAC" in shown
    for length in range(6, len(PLANTED_KEY) + 1):
        assert PLANTED_KEY[:length] not in shown, PLANTED_KEY[:length]


@pytest.mark.parametrize("stream", [[], ["--stream"]], ids=["whole", "streamed"])
def test_terminal_escapes_from_the_gateway_never_reach_the_terminal(stream: list[str]) -> None:
    with FakeServer(echo_route) as echo:
        environ = {
            "AGENT_BASE_URL": echo.base_url,
            "AGENT_MODEL": "echo-escapes",
            "AGENT_API_KEY": PLANTED_KEY,
        }
        ran = run("summarize", str(TRANSCRIPT), *stream, environ=environ)
    assert ran.code == EXIT_OK, ran.err
    assert not any(ch in ran.out + ran.err for ch in "\x1b\x9b\x07\r")
    # The escapes are gone (streamed, a sequence split between two pieces leaves its harmless text).
    assert "Summary. red over" in ran.out


# ---------------------------------------------------------------- the streams and the unexpected


@pytest.mark.parametrize(("encoding", "escaped"), [("utf-8", False), ("latin-1", True)])
def test_json_survives_any_stdout_encoding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, encoding: str, escaped: bool
) -> None:
    transcript = tmp_path / "t.txt"
    transcript.write_text("Zoë: I'll book Ōsaka by Friday.\n", encoding="utf-8")
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding=encoding, write_through=True)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(["summarize", str(transcript), "--format", "json"], environ={}) == EXIT_OK
    written = raw.getvalue().decode(encoding)
    assert ("\\u014csaka" in written) is escaped
    assert json.loads(written)["action_items"][0]["task"] == "book Ōsaka"


def test_no_standard_input_at_all_is_an_empty_transcript(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["summarize", "-"], environ={}) == EXIT_USAGE
    assert "TRANSCRIPT_FILE (stdin): empty" in err.getvalue()


def test_an_output_that_cannot_be_written_at_the_end_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def disk_full(self: AtomicOutput, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(AtomicOutput, "commit", disk_full)
    ran = run(
        "edit-workflow", str(WORKFLOW), REMOVE_QA, "--approve", "all", "--output", str(tmp_path / "out.json")
    )
    assert ran.code == EXIT_USAGE
    assert "cannot be written (No space left on device)" in one_error_line(ran)


@pytest.mark.parametrize("verbose", [False, True])
def test_a_bug_of_ours_is_still_one_line(monkeypatch: pytest.MonkeyPatch, verbose: bool) -> None:
    def broken(*args: object) -> int:
        raise RuntimeError(f"broken with {PLANTED_KEY}")

    monkeypatch.setattr(cli_app, "_work", broken)
    verbosity = ["-v"] if verbose else []
    environ = gateway_environment("http://127.0.0.1:9/v1", "m", PLANTED_KEY)
    ran = run("summarize", str(TRANSCRIPT), *verbosity, environ=environ)
    assert ran.code == EXIT_MODEL_FAILED
    assert PLANTED_KEY not in ran.err
    lines = [line for line in ran.err_lines if line.startswith("meeting-agents: ")]
    assert lines == [
        "meeting-agents: error: internal error: RuntimeError: broken with [REDACTED] "
        "(run with -v for the traceback)"
    ]
    assert ("Traceback (most recent call last):" in ran.err) is verbose


def test_an_interrupt_before_the_request_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def interrupted(*args: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_app, "_work", interrupted)
    ran = run(
        "edit-workflow", str(WORKFLOW), REMOVE_QA, "--approve", "all", "--output", str(tmp_path / "out.json")
    )
    assert ran.code == EXIT_INTERRUPTED
    assert ran.err == "meeting-agents: error: interrupted\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fault", ["connection-reset*1", "truncated-stream*1"])
def test_a_transient_fault_gives_the_same_summary_in_both_modes(fault: str) -> None:
    clean = run("summarize", str(TRANSCRIPT), "--format", "json").json()
    for mode in ("--streaming", "--no-streaming"):
        ran = run("summarize", str(TRANSCRIPT), "--format", "json", "--scenario", fault, mode)
        assert ran.code == EXIT_OK, ran.err
        assert ran.json() == clean


def test_json_carries_the_runs_usage() -> None:
    ran = run("summarize", str(TRANSCRIPT), "--format", "json")
    assert ran.code == EXIT_OK, ran.err
    usage = ran.json()["usage"]
    assert set(usage) == {
        "requests",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cached_input_tokens",
        "reasoning_tokens",
        "cost_usd",
    }
    assert usage["requests"] >= 2
    assert usage["input_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    # The offline stand-in bills nothing: no cost header, no cost.
    assert usage["cost_usd"] is None
    assert ran.json()["stop_reason"] is None


@pytest.mark.parametrize("command", ["summarize", "edit-workflow"])
def test_a_budget_stop_exits_3_with_the_reason_on_stderr_and_what_arrived_printed(command: str) -> None:
    argv = [str(TRANSCRIPT)] if command == "summarize" else [str(WORKFLOW), REMOVE_QA]
    ran = run(command, *argv, "--format", "json", environ={"AGENT_RUN_BUDGET__REQUESTS": "1"})
    assert ran.code == EXIT_INCOMPLETE, ran.err
    result = ran.json()
    assert (result["complete"], result["stop_reason"], result["usage"]["requests"]) == (
        False,
        "budget.requests",
        1,
    )
    assert result["tool_calls"]  # the first round's calls were answered before the stop
    assert ran.err.removeprefix(OFFLINE_NOTE).strip().splitlines() == [
        "meeting-agents: error: the run stopped early at its limit "
        "(budget.requests: agent.run_budget.requests); what arrived is printed"
    ]


def test_without_uvicorn_the_stand_in_is_exit_2_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as after a plain `pip install`, without the extra
    ran = run("summarize", str(TRANSCRIPT))
    assert ran.code == EXIT_USAGE
    line = one_error_line(ran)
    assert "pip install 'meeting-assistant-agents[offline]'" in line
    assert "internal error" not in line
    assert ran.out == ""
