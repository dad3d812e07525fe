"""Both pipelines end to end through the container against the offline endpoint: the example transcript,
the example workflow, a malformed tool call caught by the guard, and the X-Initiator headers on the wire."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from dependency_injector import providers

from adapters.container import Container
from adapters.offline import OfflineResponsesServer, RecordedRequest
from application import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Deny,
    MeetingSummary,
    ToolCallRecord,
    WorkflowEdit,
    workflow_from_json,
)
from domain import Workflow, WorkflowStep
from tests.integration.offline.support import (
    DECISIONS,
    EXAMPLES,
    STANDUP_ACTION_ITEMS,
    ContainerFactory,
    bounded,
)

R = TypeVar("R", MeetingSummary, WorkflowEdit)
ADAPTERS = pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
TRANSCRIPT = (EXAMPLES / "standup-transcript.txt").read_text(encoding="utf-8")
WORKFLOW = workflow_from_json((EXAMPLES / "release-workflow.json").read_text(encoding="utf-8"))
INSTRUCTION = (
    "add a step Smoke test of kind test after Build release candidate, "
    "rename Announce in #releases to Announce the release, "
    "move Manual QA sign-off to position 2 and remove Run regression suite"
)
# The example workflow after the instruction, worked out by hand; a new step gets the next free number.
EDITED = Workflow(
    "Mobile app release",
    (
        WorkflowStep("step-1", "Freeze the release branch", "manual"),
        WorkflowStep("step-4", "Manual QA sign-off", "approval"),
        WorkflowStep("step-2", "Build release candidate", "build"),
        WorkflowStep("step-7", "Smoke test", "test"),
        WorkflowStep("step-5", "Publish to app stores", "deploy"),
        WorkflowStep("step-6", "Announce the release", "notify"),
    ),
)


async def summarize(container: Container) -> MeetingSummary:
    return await bounded(container.summary_agent().summarize(TRANSCRIPT))


async def approve(request: ApprovalRequest) -> ApprovalDecision:
    return Approve()


async def edit_example(container: Container) -> WorkflowEdit:
    # The removal the instruction asks for waits for approval: the container's approver gives it.
    container.approver.override(providers.Object(approve))
    return await bounded(container.workflow_editor_agent().edit(WORKFLOW, INSTRUCTION))


def initiators(server: OfflineResponsesServer) -> list[str]:
    return [request.headers.get("x-initiator", "<missing>") for request in server.requests]


def input_items(request: RecordedRequest, item_type: str) -> list[dict[str, Any]]:
    return [item for item in request.body["input"] if item.get("type") == item_type]


async def guarded_run(
    containers: ContainerFactory,
    server: OfflineResponsesServer,
    streaming: bool,
    run: Callable[[Container], Awaitable[R]],
) -> tuple[R, ToolCallRecord]:
    """``run``'s result with one malformed call, and that call: refused and sent back verbatim."""
    result = await run(containers("offline:malformed-arguments", streaming=streaming))
    guarded = [record for record in result.tool_calls if record.guarded]
    assert len(guarded) == 1, f"expected one guarded call, got {len(guarded)}"
    assert guarded[0].result.is_error
    assert_sent_back_verbatim(server, guarded[0])
    return result, guarded[0]


def assert_sent_back_verbatim(server: OfflineResponsesServer, guarded: ToolCallRecord) -> None:
    """The request after the guarded call carries its raw arguments and the guard's error, unchanged."""
    follow_ups = [
        request
        for request in server.requests
        if any(item["call_id"] == guarded.call.call_id for item in input_items(request, "function_call"))
    ]
    assert follow_ups, "no request carried the malformed call back to the model"
    call_id = guarded.call.call_id
    (sent_call,) = [i for i in input_items(follow_ups[0], "function_call") if i["call_id"] == call_id]
    (output,) = [i for i in input_items(follow_ups[0], "function_call_output") if i["call_id"] == call_id]
    assert sent_call["arguments"] == guarded.call.raw_arguments
    assert sent_call["name"] == guarded.call.name
    with pytest.raises(json.JSONDecodeError):
        json.loads(sent_call["arguments"])  # what went back really is the broken string
    assert json.loads(output["output"])["error"] == "invalid_tool_arguments"


@ADAPTERS
async def test_summary_of_the_example_transcript(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    summary = await summarize(containers("offline", streaming=streaming))

    assert len(summary.action_items) == 6
    assert set(summary.action_items) == STANDUP_ACTION_ITEMS
    assert summary.decisions == DECISIONS
    assert "Priya, Tom, Maya, Alex and Dev" in summary.text
    assert not any(record.guarded or record.result.is_error for record in summary.tool_calls)
    assert {record.call.name for record in summary.tool_calls} == {
        "list_participants",
        "record_action_item",
        "record_decision",
    }
    assert all(request.body["stream"] is streaming for request in server.requests)
    assert summary.run.usage is not None
    assert summary.run.usage.total_tokens


@ADAPTERS
async def test_workflow_edit_of_the_example(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    edit = await edit_example(containers("offline", streaming=streaming))

    assert edit.workflow == EDITED
    assert WORKFLOW.steps[2].name == "Run regression suite"  # the original is left as it was
    assert [record.call.name for record in edit.tool_calls if record.call.name != "list_steps"] == [
        "add_step",
        "rename_step",
        "move_step",
        "remove_step",
    ]
    assert not any(record.result.is_error for record in edit.tool_calls)
    assert "Smoke test" in edit.text
    assert all(request.body["stream"] is streaming for request in server.requests)


@pytest.mark.parametrize("decision", [Approve(), Deny(reason="keep the regression suite")])
async def test_a_removal_waits_for_approval_and_the_resumed_edit_goes_on_over_http(
    containers: ContainerFactory, server: OfflineResponsesServer, decision: ApprovalDecision
) -> None:
    container = containers("offline")
    paused = await bounded(container.workflow_editor_agent().edit(WORKFLOW, INSTRUCTION))

    assert paused.status == "awaiting_approval"
    assert [(request.name, dict(request.arguments)) for request in paused.pending] == [
        ("remove_step", {"step_id": "step-3"})
    ]
    # The other edits of the held answer wait with it.
    assert paused.workflow == WORKFLOW
    assert paused.state is not None
    sent = len(server.requests)
    edit = await bounded(
        container.workflow_editor_agent().resume(paused.state, {paused.pending[0].call_id: decision})
    )

    assert edit.status == "done"
    assert len(server.requests) == sent + 1
    kept = "Run regression suite" in [step.name for step in edit.workflow.steps]
    assert kept is isinstance(decision, Deny)
    assert ("approval_denied" in edit.text) is isinstance(decision, Deny)


@ADAPTERS
async def test_a_malformed_summary_call_is_guarded_and_reissued(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    summary, guarded = await guarded_run(containers, server, streaming, summarize)

    assert guarded.call.parse_error is not None
    assert guarded.call.parse_error.kind == "invalid_json"
    assert isinstance(guarded.result.result, dict)
    assert guarded.result.result["error"] == "invalid_tool_arguments"
    assert guarded.call.raw_arguments not in guarded.result.result["message"]
    # The tool did not run for the broken call: each item is recorded once, from the re-issued call.
    assert len(summary.action_items) == 6
    assert set(summary.action_items) == STANDUP_ACTION_ITEMS
    assert summary.decisions == DECISIONS
    reissued = [
        record
        for record in summary.tool_calls
        if record.call.name == guarded.call.name
        and record.call.raw_arguments.startswith(guarded.call.raw_arguments)
        and not record.guarded
    ]
    assert len(reissued) == 1
    assert not reissued[0].result.is_error
    assert reissued[0].call.call_id != guarded.call.call_id


@ADAPTERS
async def test_a_malformed_edit_call_is_guarded_and_the_edit_still_lands(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool
) -> None:
    edit, _ = await guarded_run(containers, server, streaming, edit_example)

    assert edit.workflow == EDITED  # applied once each: the broken call changed nothing


@ADAPTERS
@pytest.mark.parametrize("pipeline", ["summary", "workflow"])
async def test_x_initiator_is_user_first_then_agent_after_tool_results(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool, pipeline: str
) -> None:
    container = containers("offline:malformed-arguments", streaming=streaming)
    run = summarize if pipeline == "summary" else edit_example

    await run(container)
    await run(container)

    sent = initiators(server)
    runs = len(sent) // 2
    assert runs >= 3  # a tool round, the retry of the broken call, the closing answer
    assert sent == (["user"] + ["agent"] * (runs - 1)) * 2
    for request in server.requests:
        has_results = bool(input_items(request, "function_call_output"))
        assert has_results is (request.headers["x-initiator"] == "agent")


@ADAPTERS
@pytest.mark.parametrize("fault", ["connection-reset*1", "truncated-stream*1", "http-500*1", "http-429*1"])
@pytest.mark.parametrize("pipeline", ["summary", "workflow"])
async def test_a_transient_fault_gives_the_same_result_in_both_modes(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool, fault: str, pipeline: str
) -> None:
    # The first request breaks once; the SDK's retries (or the adapters', for a broken body) recover.
    container = containers(f"offline:{fault}", streaming=streaming, max_retries=2)

    if pipeline == "summary":
        summary = await summarize(container)
        assert set(summary.action_items) == STANDUP_ACTION_ITEMS
        assert summary.decisions == DECISIONS
        assert summary.complete
    else:
        edit = await edit_example(container)
        assert edit.workflow == EDITED
        assert edit.complete
    broken, again = server.requests[0], server.requests[1]
    # The retried request is the same request: the same payload, the same X-Initiator.
    assert broken.body == again.body
    assert broken.headers.get("x-initiator") == again.headers.get("x-initiator") == "user"
