"""Both pipelines end to end through the container, configured with the proxy's base URL, in both modes."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest
from dependency_injector import providers

from adapters.container import Container
from adapters.responses import ResponsesJsonAdapter, ResponsesSseAdapter
from application import ActionItem, Decision
from domain import Workflow, WorkflowStep
from tests.integration.gateway.proxy import MASTER_KEY
from tests.integration.gateway.support import Gateway
from tests.support.upstreams import SUMMARY_TEXT, SUMMARY_TOOL_ROUNDS, WORKFLOW_TEXT, RecordedRequest

pytestmark = pytest.mark.gateway

WORKFLOW = Workflow(
    "Weekly sync",
    (WorkflowStep("s1", "Gather agenda", "manual"), WorkflowStep("s2", "Hold meeting", "meeting")),
)


@pytest.fixture(params=[True, False], ids=["streaming", "json"])
async def container(gateway: Gateway, request: pytest.FixtureRequest) -> AsyncIterator[Container]:
    built = Container()
    built.environ.override(providers.Object({}))  # the developer's AGENT_* variables must not leak in
    built.config.from_dict(
        {
            "agent": {
                "base_url": gateway.proxy.base_url,
                "api_key": MASTER_KEY,
                "model": "gw-agent",
                "use_streaming": request.param,
            }
        }
    )
    yield built
    await built.aclose()
    built.reset_override()


def _asked(gateway: Gateway, nonce: str) -> list[RecordedRequest]:
    return [r for r in gateway.upstream.requests if r.mentions(nonce)]


async def test_the_summary_pipeline_records_items_and_guards_the_malformed_call(
    gateway: Gateway, container: Container
) -> None:
    nonce = f"summary-{uuid.uuid4()}"
    transcript = (
        f"Ana: I will ship the gateway tier by Friday. ({nonce})\n"
        "Ben: Then we stream every response.\n"
        "Ana: Agreed.\n"
    )
    expected_adapter = ResponsesSseAdapter if container.config.agent.use_streaming() else ResponsesJsonAdapter
    assert isinstance(container.chat_adapter(), expected_adapter)

    summary = await container.summary_agent().summarize(transcript)

    assert summary.text == SUMMARY_TEXT
    assert summary.action_items == (ActionItem("Ana", "Ship the gateway tier", "Friday", (1,)),)
    assert summary.decisions == (Decision("Stream every response", (2, 3)),)
    guarded = [record for record in summary.tool_calls if record.guarded]
    [malformed_name, malformed_arguments] = SUMMARY_TOOL_ROUNDS[0][2]
    assert [(r.call.name, r.call.raw_arguments) for r in guarded] == [(malformed_name, malformed_arguments)]
    assert guarded[0].result.is_error
    requests = _asked(gateway, nonce)
    assert len(requests) == 2
    follow_up = requests[-1].body["messages"]
    sent_arguments = [c["function"]["arguments"] for m in follow_up for c in m.get("tool_calls") or ()]
    assert sent_arguments == [arguments for _, arguments in SUMMARY_TOOL_ROUNDS[0]]
    results = {m["tool_call_id"]: json.loads(m["content"]) for m in follow_up if m.get("role") == "tool"}
    assert results[guarded[0].call.call_id]["error"] == "invalid_tool_arguments"


async def test_the_workflow_editor_edits_a_copy_through_the_proxy(
    gateway: Gateway, container: Container
) -> None:
    nonce = f"workflow-{uuid.uuid4()}"

    edit = await container.workflow_editor_agent().edit(
        WORKFLOW, f"Add a publish step at the end and rename the first step. ({nonce})"
    )

    assert edit.text == WORKFLOW_TEXT
    assert [(s.name, s.kind) for s in edit.workflow.steps] == [
        ("Collect agenda items", "manual"),
        ("Hold meeting", "meeting"),
        ("Publish notes", "action"),
    ]
    assert [s.name for s in WORKFLOW.steps] == ["Gather agenda", "Hold meeting"]
    assert [r.call.name for r in edit.tool_calls] == ["add_step", "rename_step"]
    assert not any(r.result.is_error for r in edit.tool_calls)
    assert len(_asked(gateway, nonce)) == 3
