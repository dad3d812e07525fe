"""Approval on the command line: a question on a terminal, --approve all|none, and exit code 5 otherwise."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from adapters.cli.exit_codes import EXIT_NOT_CARRIED_OUT, EXIT_OK, EXIT_USAGE, EXIT_WAITING
from adapters.offline import OfflineResponsesServer
from application import RunState, loads, workflow_from_json
from tests.integration.cli.support import (
    REMOVE_QA,
    WORKFLOW,
    OnTerminal,
    Ran,
    edit_without_qa,
    run,
    run_process,
)
from tests.support.processes import gateway_environment
from tests.support.states import held_calls, pending_emptied, pending_renamed, raw_arguments_edited

QUESTION = 'Remove step step-4 "Manual QA sign-off"? [y/N] '


def step_names(text: str) -> list[str]:
    return [step.name for step in workflow_from_json(text).steps]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize(
    ("answer", "removed"), [("y\n", True), ("yes\n", True), ("\n", False), ("n\n", False)]
)
def test_on_a_terminal_the_command_asks_and_no_is_the_default(
    tmp_path: Path, answer: str, removed: bool
) -> None:
    output = tmp_path / "edited.json"
    argv = ["edit-workflow", str(WORKFLOW), REMOVE_QA, "--output", str(output)]
    with OnTerminal(*argv, stdout=tmp_path / "out.txt", typing=True) as terminal:
        terminal.wait_for(lambda: QUESTION.encode() in terminal.written)
        terminal.answer(answer)
        shown = terminal.finish()

    assert shown.err.count(QUESTION) == 1
    if removed:
        assert shown.code == EXIT_OK, shown.err
        assert "Manual QA sign-off" not in step_names(output.read_text(encoding="utf-8"))
        assert "  - step-4: Manual QA sign-off (approval)\n" in shown.out
    else:
        assert shown.code == EXIT_NOT_CARRIED_OUT, shown.err
        assert "remove_step -> approval_denied" in shown.err
        assert not output.exists()


@pytest.mark.parametrize(("choice", "code"), [("all", EXIT_OK), ("none", EXIT_NOT_CARRIED_OUT)])
def test_approve_decides_without_asking(choice: str, code: int) -> None:
    ran = run("edit-workflow", str(WORKFLOW), REMOVE_QA, "--approve", choice, "--format", "json")
    assert ran.code == code, ran.err
    document = ran.json()
    assert document["status"] == "done"
    assert document["pending"] == []
    removals = [call for call in document["tool_calls"] if call["name"] == "remove_step"]
    assert [call["error"] for call in removals] == [None if choice == "all" else "approval_denied"]
    assert ("Manual QA sign-off" in [step["name"] for step in document["workflow"]["steps"]]) is (
        choice == "none"
    )


def test_with_nobody_to_ask_the_command_stops_with_exit_5_and_writes_nothing(tmp_path: Path) -> None:
    output = tmp_path / "edited.json"
    ran = run("edit-workflow", str(WORKFLOW), REMOVE_QA, "--format", "json", "--output", str(output))

    assert ran.code == EXIT_WAITING
    document = ran.json()
    assert document["status"] == "awaiting_approval"
    [pending] = document["pending"]
    assert pending["name"] == "remove_step"
    assert pending["arguments"] == {"step_id": "step-4"}
    assert json.loads(pending["raw_arguments"]) == pending["arguments"]
    unchanged = workflow_from_json(WORKFLOW.read_text(encoding="utf-8"))
    assert workflow_from_json(json.dumps(document["workflow"])) == unchanged
    [line] = ran.err_lines
    assert f"waits for approval of 1 call ({pending['call_id']})" in line
    assert "--output not written" in line
    assert list(tmp_path.iterdir()) == []


def test_the_text_result_names_the_call_waiting_and_the_step_it_would_remove() -> None:
    ran = run("edit-workflow", str(WORKFLOW), REMOVE_QA)
    assert ran.code == EXIT_WAITING
    assert "Waiting for approval (1)\n  [call_" in ran.out
    assert '] Remove step step-4 "Manual QA sign-off"\n' in ran.out
    assert "(no change)" in ran.out


def test_summaries_need_no_approval() -> None:
    ran = run("summarize", str(WORKFLOW.with_name("standup-transcript.txt")), "--format", "json")
    assert ran.code == EXIT_OK, ran.err
    assert ran.json()["status"] == "done"


# ---------------------------------------------------------------- --state and resume


def paused_to(state: Path) -> str:
    """Run the removal with nobody to ask, keeping it in ``state``; the call id it waits for."""
    ran = run("edit-workflow", str(WORKFLOW), REMOVE_QA, "--state", str(state), "--format", "json")
    assert ran.code == EXIT_WAITING, ran.err
    [pending] = ran.json()["pending"]
    call_id: str = pending["call_id"]
    [line] = ran.err_lines
    assert f"kept in {state}: go on with meeting-agents resume {state} --approve {call_id}" in line
    return call_id


@pytest.mark.parametrize(
    ("flag", "code", "kept"), [("--approve", EXIT_OK, False), ("--deny", EXIT_NOT_CARRIED_OUT, True)]
)
def test_a_paused_edit_is_kept_with_state_and_resume_goes_on(
    tmp_path: Path, flag: str, code: int, kept: bool
) -> None:
    state = tmp_path / "paused.json"
    call_id = paused_to(state)
    stored = state.read_text(encoding="utf-8")
    paused = loads(stored)
    assert isinstance(paused, RunState)
    assert [request.call_id for request in paused.pending] == [call_id]

    output = tmp_path / "edited.json"
    ran = run("resume", str(state), flag, call_id, "--output", str(output), "--format", "json")

    assert ran.code == code, ran.err
    document = ran.json()
    assert document["status"] == "done"
    names = [step["name"] for step in document["workflow"]["steps"]]
    assert ("Manual QA sign-off" in names) is kept
    assert output.exists() is (not kept)
    assert state.read_text(encoding="utf-8") == stored  # the state resumed from is left as it was


def test_resume_in_a_new_process_gives_what_approving_at_once_gives(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    call_id = paused_to(state)
    resumed = run_process("resume", str(state), "--approve", call_id, "--format", "json")
    at_once = edit_without_qa("--format", "json")
    assert resumed.code == at_once.code == EXIT_OK, resumed.err
    # The whole run, the requests before the pause included: the same result, tool calls and usage.
    assert resumed.json() == at_once.json()


@pytest.mark.parametrize(
    ("decide", "words"),
    [
        ([], "no decision given"),
        (["--approve", "call_nope"], "not waiting for approval: 'call_nope'"),
        (["--approve", "ID", "--deny", "ID"], "decided more than once"),
    ],
)
def test_bad_decisions_are_refused_before_any_request(tmp_path: Path, decide: list[str], words: str) -> None:
    state = tmp_path / "paused.json"
    call_id = paused_to(state)
    with OfflineResponsesServer() as server:
        environ = gateway_environment(server.base_url)
        ran = run("resume", str(state), *[call_id if a == "ID" else a for a in decide], environ=environ)
        assert server.requests == ()
    assert ran.code == EXIT_USAGE
    [line] = ran.err_lines
    assert words in line
    assert call_id in line


def test_a_file_that_is_not_a_paused_edit_is_refused(tmp_path: Path) -> None:
    not_state = tmp_path / "x.json"
    not_state.write_text('{"format": "meeting-agents", "version": 1, "kind": "messages", "value": []}')
    for path in (WORKFLOW, not_state):
        ran = run("resume", str(path), "--approve", "x")
        assert ran.code == EXIT_USAGE
        assert "STATE_FILE" in ran.err_lines[0]


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_resume_on_a_terminal_asks_about_the_calls_not_named(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    paused_to(state)
    with OnTerminal("resume", str(state), stdout=tmp_path / "out.txt", typing=True) as terminal:
        terminal.wait_for(lambda: QUESTION.encode() in terminal.written)
        terminal.answer("y\n")
        shown = terminal.finish()
    assert shown.code == EXIT_OK, shown.err
    assert "  - step-4: Manual QA sign-off (approval)\n" in shown.out


# ---------------------------------------------------------------- a tampered state, on a terminal


_RAW_EDITED: Final = raw_arguments_edited('{"step_id": "step-1"}')


def _second_call_added(document: dict[str, Any]) -> None:
    """A second removal in the held answer, everything but ``pending`` made to agree with it."""
    value = document["value"]
    [first, _] = held_calls(document)
    extra = {
        **first,
        "call_id": "call_extra",
        "raw_arguments": '{"step_id": "step-1"}',
        "provider_item": None,
    }
    answer = value["responses"][-1]["messages"]
    for messages in (answer, value["produced"][-len(answer) :]):
        messages[-1]["contents"].append(dict(extra))
    value["held"].append(None)
    value["answered"] = sorted([*value["answered"], "call_extra"])


def _tampered(state: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = json.loads(state.read_text(encoding="utf-8"))
    change(document)
    state.write_text(json.dumps(document), encoding="utf-8")


def test_a_state_without_the_answer_it_stopped_on_is_exit_2(tmp_path: Path) -> None:
    state = tmp_path / "paused.json"
    call_id = paused_to(state)
    _tampered(state, lambda document: document["value"].update(responses=[]))
    ran = run("resume", str(state), "--approve", call_id)
    assert ran.code == EXIT_USAGE, ran.err
    [line] = ran.err_lines
    assert "value.responses: empty" in line


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize(
    ("change", "words"),
    [
        (_RAW_EDITED, "pending[0].raw_arguments"),
        (pending_emptied, "pending: empty"),
        (pending_renamed("list_steps"), "pending[0].name"),
        (_second_call_added, "leaves out 'call_extra'"),
    ],
)
def test_a_tampered_state_is_refused_on_a_terminal_before_any_question_or_request(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], words: str
) -> None:
    state = tmp_path / "paused.json"
    paused_to(state)
    _tampered(state, change)
    output = tmp_path / "edited.json"
    with OfflineResponsesServer() as server:
        environ = gateway_environment(server.base_url)
        argv = ["resume", str(state), "--output", str(output)]
        with OnTerminal(*argv, stdout=tmp_path / "out.txt", environ=environ, typing=True) as terminal:
            terminal.wait_for(lambda: b"? [y/N] " in terminal.written or b"error: " in terminal.written)
            if b"? [y/N] " in terminal.written:
                terminal.answer("y\n")  # a person who believes the question
            shown = terminal.finish()
        assert server.requests == ()
    assert shown.code == EXIT_USAGE, shown.err
    assert "? [y/N]" not in shown.err
    [line] = [line for line in shown.err.splitlines() if line.strip()]
    assert f"STATE_FILE {str(state)!r}" in line
    assert words in line
    assert not output.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_the_question_on_a_terminal_names_the_step_the_held_call_removes(tmp_path: Path) -> None:
    """Held call and pending both rewritten to step-1, in agreement: the question names step-1, the
    step that goes, never the step-4 the run was paused on."""
    state = tmp_path / "paused.json"
    paused_to(state)

    def both(document: dict[str, Any]) -> None:
        _RAW_EDITED(document)
        document["value"]["pending"][0].update(
            arguments={"step_id": "step-1"}, raw_arguments='{"step_id": "step-1"}'
        )

    _tampered(state, both)
    with OnTerminal("resume", str(state), stdout=tmp_path / "out.txt", typing=True) as terminal:
        terminal.wait_for(lambda: b"? [y/N] " in terminal.written)
        terminal.answer("n\n")
        shown = terminal.finish()
    assert 'Remove step step-1 "' in shown.err
    assert "step-4" not in shown.err


# ---------------------------------------------------------------- signed states

STATE_SECRET = "state-SECRET-cli-5522"


def test_with_agent_state_secret_the_kept_state_is_signed_and_resume_checks_it(tmp_path: Path) -> None:
    signing = {"AGENT_STATE_SECRET": STATE_SECRET}
    state = tmp_path / "paused.json"
    ran = run(
        "edit-workflow", str(WORKFLOW), REMOVE_QA, "--state", str(state), "--format", "json", environ=signing
    )
    assert ran.code == EXIT_WAITING, ran.err
    [pending] = ran.json()["pending"]
    stored = state.read_text(encoding="utf-8")
    assert isinstance(loads(stored, secret=STATE_SECRET), RunState)
    unsigned = json.loads(stored)
    del unsigned["signature"]
    forged = json.loads(stored)
    for call in held_calls(forged):
        call["raw_arguments"] = '{"step_id": "step-1"}'
    forged["value"]["pending"][0].update(
        arguments={"step_id": "step-1"}, raw_arguments='{"step_id": "step-1"}'
    )

    outcomes: list[Ran] = []
    for document, environ, words in (
        (unsigned, signing, "signature: missing"),
        (forged, signing, "signature: does not match"),
        (json.loads(stored), {"AGENT_STATE_SECRET": "another"}, "signature: does not match"),
    ):
        state.write_text(json.dumps(document), encoding="utf-8")
        refused = run("resume", str(state), "--approve", pending["call_id"], environ=environ)
        assert refused.code == EXIT_USAGE, refused.err
        [line] = refused.err_lines
        assert words in line
        outcomes.append(refused)
    state.write_text(stored, encoding="utf-8")
    resumed = run("resume", str(state), "--approve", pending["call_id"], "--format", "json", environ=signing)
    assert resumed.code == EXIT_OK, resumed.err
    assert "Manual QA sign-off" not in [step["name"] for step in resumed.json()["workflow"]["steps"]]
    for shown in (ran, resumed, *outcomes):
        assert STATE_SECRET not in shown.out + shown.err
