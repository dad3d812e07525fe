"""The command's parts on their own: reading input, atomic output, explaining an edit, failure lines."""

from __future__ import annotations

import importlib.metadata
import io
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.cli.failures import describe_failure, failure_details, shown_url
from adapters.cli.files import AtomicOutput, InputError, read_text
from adapters.cli.instruction import why_not_carried_out
from adapters.cli.parser import program_version
from adapters.cli.report import edit_text, error_code, summary_text, usage_line
from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.settings import AgentSettings
from application import (
    MeetingSummary,
    SummaryAgent,
    ToolCallRecord,
    ToolRun,
    ToolRunError,
    WorkflowEdit,
    WorkflowEditorAgent,
    workflow_from_json,
)
from domain import (
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    FunctionCallContent,
    FunctionResultContent,
    JsonValue,
    MalformedResponseError,
    ResponseFailedError,
)
from tests.integration.cli.support import WORKFLOW

RELEASE = workflow_from_json(WORKFLOW.read_text(encoding="utf-8"))
AGENT = AgentSettings(base_url="http://user:pw@127.0.0.1:4000/v1", model="m")

# ---------------------------------------------------------------- reading input


FILE_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"))


@given(FILE_TEXT)
def test_any_utf8_text_reads_back_whole_with_or_without_a_bom(text: str) -> None:
    encoded = text.encode("utf-8")
    assert read_text("-", "TRANSCRIPT_FILE", io.BytesIO(b"\xef\xbb\xbf" + encoded)) == text
    assert read_text("-", "TRANSCRIPT_FILE", io.BytesIO(encoded)) == text.removeprefix("\ufeff")


@given(st.binary())
def test_any_bytes_are_text_or_one_line_naming_the_input(data: bytes) -> None:
    try:
        read_text("-", "TRANSCRIPT_FILE", io.BytesIO(data))
    except InputError as error:
        message = str(error)
        assert message.startswith("TRANSCRIPT_FILE (stdin): ")
        assert "\n" not in message


def test_an_unreadable_file_names_the_reason(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"TRANSCRIPT_FILE '.*': cannot be read \(Is a directory\)"):
        read_text(str(tmp_path), "TRANSCRIPT_FILE", io.BytesIO())


# ---------------------------------------------------------------- atomic output


def test_output_is_committed_once(tmp_path: Path) -> None:
    output = AtomicOutput.open(tmp_path / "out.json")
    output.commit("{}\n")
    assert (tmp_path / "out.json").read_text(encoding="utf-8") == "{}\n"
    with pytest.raises(RuntimeError, match="already committed or discarded"):
        output.commit("again")
    output.discard()  # nothing left to discard, and no harm done
    assert [path.name for path in tmp_path.iterdir()] == ["out.json"]


def test_a_discarded_output_leaves_nothing(tmp_path: Path) -> None:
    with AtomicOutput.open(tmp_path / "out.json") as output:
        assert len(list(tmp_path.iterdir())) == 1  # the temporary file, made before any request
    assert output.target == tmp_path / "out.json"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_removes_the_temporary_file(tmp_path: Path) -> None:
    output = AtomicOutput.open(tmp_path / "out.json")
    (tmp_path / "out.json").mkdir()  # the target turned into a folder while the model ran
    with pytest.raises(OSError, match="Is a directory"):
        output.commit("{}")
    assert [path.name for path in tmp_path.iterdir()] == ["out.json"]


def test_output_may_be_an_input_read_from_stdin(tmp_path: Path) -> None:
    with AtomicOutput.open(tmp_path / "out.json", inputs=[("WORKFLOW_JSON", "-")]) as output:
        assert output.target.parent == tmp_path


# ---------------------------------------------------------------- was the instruction carried out?


async def edit_with(*turns: ScriptedTurn, instruction: str) -> WorkflowEdit:
    agent = WorkflowEditorAgent(ScriptedChat(*turns))
    return await agent.edit(RELEASE, instruction)


async def test_a_changed_workflow_was_carried_out() -> None:
    edit = await edit_with(
        ScriptedTurn(calls=(("c1", "remove_step", '{"step_id": "step-4"}'),)),
        ScriptedTurn(text="Removed it."),
        instruction="remove Manual QA sign-off",
    )
    assert why_not_carried_out(RELEASE, edit, "remove Manual QA sign-off") is None


async def test_an_edit_that_changes_nothing_still_did_what_was_asked() -> None:
    edit = await edit_with(
        ScriptedTurn(calls=(("c1", "move_step", '{"step_id": "step-2", "position": 2}'),)),
        ScriptedTurn(text="It is already second."),
        instruction="move Build release candidate to position 2",
    )
    assert edit.workflow == RELEASE
    assert why_not_carried_out(RELEASE, edit, "move Build release candidate to position 2") is None


async def test_edits_that_all_failed_are_named_with_their_codes() -> None:
    instruction = "rename Build release candidate to Build RC"
    edit = await edit_with(
        ScriptedTurn(calls=(("c1", "rename_step", '{"step_id": "step-9", "name": "Build RC"}'),)),
        ScriptedTurn(text="I could not."),
        instruction=instruction,
    )
    assert why_not_carried_out(RELEASE, edit, instruction) == (
        "every edit the model tried failed (rename_step -> unknown_step)"
    )
    assert '  error   rename_step(step_id="step-9", name="Build RC") -> unknown_step' in edit_text(
        RELEASE, edit
    )


@pytest.mark.parametrize(
    ("instruction", "why"),
    [
        (
            "rename 'release' to 'Ship'",
            "several steps match 'release': 'Freeze the release branch', 'Build release candidate', "
            "'Announce in #releases'",
        ),
        ("move the step Smoke test to the top", "no such step: 'Smoke test' matches none of the 6 steps"),
        ('add a step "Notes" after the "Deploy" step', "no such step: 'Deploy' matches none"),
        ("Add X before release and remove step-4", "several steps match 'release'"),
        ("remove step-4; delete ''", "nothing understood: the model made no edit"),
    ],
)
async def test_the_step_an_instruction_names_explains_an_unchanged_workflow(
    instruction: str, why: str
) -> None:
    edit = await edit_with(ScriptedTurn(text=""), instruction=instruction)
    reason = why_not_carried_out(RELEASE, edit, instruction)
    assert reason is not None
    assert reason.startswith(why)


# ---------------------------------------------------------------- how a result reads


async def test_a_refused_duplicate_call_is_shown_as_refused_with_its_code() -> None:
    turns = (
        ScriptedTurn(
            calls=(
                ("c1", "record_decision", '{"decision": "Ship"}'),
                ("c1", "record_decision", '{"decision": "Ship"}'),
            )
        ),
        ScriptedTurn(text="Done."),
    )
    summary: MeetingSummary = await SummaryAgent(ScriptedChat(*turns)).summarize("Ana: we decided to ship")
    text = summary_text(summary)
    assert (
        "GUARDED record_decision [c1]: refused; not run, the model got duplicate_call_id; not re-issued"
        in text
    )


# ---------------------------------------------------------------- failure lines


def test_a_url_is_shown_without_its_credentials() -> None:
    assert shown_url("http://user:pw@127.0.0.1:4000/v1") == "http://127.0.0.1:4000/v1"
    assert shown_url("https://token@[::1]/v1") == "https://[::1]/v1"
    assert shown_url("http://127.0.0.1:4000/v1") == "http://127.0.0.1:4000/v1"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ChatError("odd"), "the request failed: odd [POST http://127.0.0.1:4000/v1/responses; model m]"),
        (ResponseFailedError("no", code=None, request_id="r1"), "the model failed: no [POST"),
        (MalformedResponseError("bad body", response_id="resp_1"), "; response id resp_1]"),
        (ChatTransportError("HTTP 500 from x", status_code=500, attempts=3), "; 3 attempts]"),
        (ChatTransportError("refused", status_code=409, attempts=1), "; 1 attempt; HTTP 409]"),
    ],
)
def test_a_failure_line_names_what_and_where(error: ChatError, line: str) -> None:
    described = describe_failure(error, AGENT)
    assert line in described
    assert "pw" not in described


def test_a_transport_failure_names_its_root_cause() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as cause:
            raise ChatTransportError("the connection failed", attempts=2) from cause
    except ChatTransportError as error:
        described = describe_failure(error, AGENT)
    assert "2 attempts; cause ConnectionRefusedError: [Errno 111] Connection refused]" in described


def test_details_show_what_had_arrived_before_the_traceback() -> None:
    half = ChatResponse(messages=(ChatMessage.assistant("half an answer"),))
    details = failure_details(MalformedResponseError("cut", partial=half))
    assert details[0] == "what had arrived (14 characters of text): half an answer"
    assert details[1] == "domain.errors.MalformedResponseError: cut"  # never raised, so no frames


def test_details_of_a_run_show_its_last_whole_answer() -> None:
    earlier = ChatResponse(messages=(ChatMessage.assistant("x" * 600),))
    details = failure_details(ToolRunError("failed later", run=ToolRun(responses=(earlier,))))
    assert details[0] == f"what had arrived (600 characters of text): {'x' * 500}..."


def test_the_version_of_a_source_tree_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert program_version() == "unknown (not installed)"


def test_umask_is_left_as_it_was(tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        AtomicOutput.open(tmp_path / "out.json").commit("x")
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(before)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o640


def test_a_guarded_call_is_matched_only_to_a_later_call_of_the_same_tool() -> None:
    def record(call_id: str, name: str, raw: str, *, guarded: bool, result: JsonValue) -> ToolCallRecord:
        call = FunctionCallContent.parse(call_id=call_id, name=name, raw_arguments=raw)
        return ToolCallRecord(call, FunctionResultContent(call_id, result, is_error=guarded), guarded=guarded)

    bad = {"error": "invalid_tool_arguments", "message": "m"}
    records = (
        record("a", "record_decision", '{"decision": ', guarded=True, result=bad),
        record("b", "list_participants", "{}", guarded=False, result={"participants": []}),
        record("c", "record_decision", '{"decision": "Ship"}', guarded=False, result={"recorded": 1}),
    )
    summary = MeetingSummary(
        text="", action_items=(), decisions=(), tool_calls=records, run=ToolRun(), complete=True
    )
    text = summary_text(summary)
    assert (
        "[a]: arguments rejected (invalid_json, 13 chars); not run, the model got invalid_tool_arguments; "
        in text
    )
    assert 're-issued as [c] record_decision(decision="Ship")' in text


def test_an_error_result_that_is_not_an_object_still_has_a_code() -> None:
    call = FunctionCallContent.parse(call_id="a", name="t", raw_arguments="{}")
    assert (
        error_code(ToolCallRecord(call, FunctionResultContent("a", "boom", is_error=True), guarded=False))
        == "error"
    )
    assert usage_line(None, 2) == "Token usage: not reported (2 model turns)"


def test_a_run_error_chained_from_the_adapters_names_no_cause_twice() -> None:
    try:
        try:
            raise ChatTransportError("no complete answer within agent.deadline_seconds=1 s")
        except ChatTransportError as adapter_error:
            raise ChatTransportError(adapter_error.message) from adapter_error
    except ChatTransportError as error:
        described = describe_failure(error, AGENT)
    assert "cause" not in described
    assert described.count("deadline_seconds") == 1
