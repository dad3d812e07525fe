"""--save-run: each command writes its whole run as a document that application.loads reads back, atomically,
checked before any request, and without the key a gateway might echo."""

from __future__ import annotations

from pathlib import Path

from adapters.cli import EXIT_MODEL_FAILED, EXIT_OK, EXIT_USAGE
from adapters.cli.files import AtomicOutput
from adapters.cli.run_document import save_run
from adapters.offline import OfflineResponsesServer
from adapters.redaction import Redactor
from application import MeetingSummary, ToolRun, WorkflowEdit, loads, workflow_from_json
from domain import ChatMessage, ChatResponse
from tests.integration.cli.support import PLANTED_KEY, REMOVE_QA, TRANSCRIPT, WORKFLOW, edit_without_qa, run
from tests.support.processes import gateway_environment


def test_summarize_saves_the_run_it_printed(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    ran = run("summarize", str(TRANSCRIPT), "--format", "json", "--save-run", str(saved))

    assert ran.code == EXIT_OK, ran.err
    summary = loads(saved.read_text(encoding="utf-8"))
    assert isinstance(summary, MeetingSummary)
    printed = ran.json()
    assert summary.text == printed["text"]
    assert [record.call.call_id for record in summary.tool_calls] == [
        c["call_id"] for c in printed["tool_calls"]
    ]
    assert summary.run.responses[-1].status == "completed"
    assert [path.name for path in tmp_path.iterdir()] == ["run.json"]


def test_edit_workflow_saves_the_run_beside_its_output(tmp_path: Path) -> None:
    saved, output = tmp_path / "run.json", tmp_path / "edited.json"
    ran = edit_without_qa(
        "--output",
        str(output),
        "--save-run",
        str(saved),
    )

    assert ran.code == EXIT_OK, ran.err
    edit = loads(saved.read_bytes())
    assert isinstance(edit, WorkflowEdit)
    assert edit.workflow == workflow_from_json(output.read_text(encoding="utf-8"))
    assert "remove_step" in [record.call.name for record in edit.tool_calls]


def test_a_failed_run_saves_what_it_had(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    ran = run(
        "summarize",
        str(TRANSCRIPT),
        "--scenario",
        "response-failed",
        "--save-run",
        str(saved),
        environ={"AGENT_MAX_RETRIES": "0"},
    )

    assert ran.code == EXIT_MODEL_FAILED
    assert isinstance(loads(saved.read_text(encoding="utf-8")), ToolRun)


def test_an_unusable_save_run_is_refused_before_any_request(tmp_path: Path) -> None:
    with OfflineResponsesServer() as server:
        environ = gateway_environment(server.base_url, api_key=PLANTED_KEY)
        missing = run(
            "summarize", str(TRANSCRIPT), "--save-run", str(tmp_path / "no" / "run.json"), environ=environ
        )
        clash = tmp_path / "same.json"
        both = run(
            "edit-workflow",
            str(WORKFLOW),
            REMOVE_QA,
            "--output",
            str(clash),
            "--save-run",
            str(clash),
            environ=environ,
        )
        over_input = run("summarize", str(TRANSCRIPT), "--save-run", str(TRANSCRIPT), environ=environ)

        assert server.requests == ()
    assert missing.code == EXIT_USAGE
    assert missing.err_lines[-1].startswith("meeting-agents: error: --save-run ")
    assert "does not exist" in missing.err
    assert both.code == EXIT_USAGE
    assert "is the --output file" in both.err
    assert over_input.code == EXIT_USAGE
    assert "is the input file TRANSCRIPT_FILE" in over_input.err
    assert list(tmp_path.iterdir()) == []


def test_a_key_the_gateway_echoed_never_reaches_the_saved_run(tmp_path: Path) -> None:
    echoed = ChatResponse((ChatMessage.assistant(f"your key is {PLANTED_KEY}"),), response_id="resp_1")
    path = tmp_path / "run.json"
    with AtomicOutput.open(path, option="--save-run") as output:
        assert save_run(output, ToolRun(responses=(echoed,)), Redactor([PLANTED_KEY])) is None

    text = path.read_text(encoding="utf-8")
    assert PLANTED_KEY not in text
    assert loads(text).responses[0].text == "your key is [REDACTED]"
