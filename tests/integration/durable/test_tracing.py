"""A traced batch: DBOS's spans and ours in one trace per transcript, and no API key in any of them.

The command runs under :mod:`tests.integration.durable.traced`, a host that installs a global tracer
provider writing every span to a file: DBOS is a process-global, so each run is a process of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli.support import PROCESS_TIMEOUT
from tests.integration.durable.support import (
    TRANSCRIPTS,
    CountingGateway,
    echo_gateway,
    gateway_environment,
    index,
    write_transcripts,
)
from tests.support.processes import clean_environment

pytestmark = pytest.mark.slow

PLANTED_KEY = "sk-PLANTED-traced-7373"
WORKFLOW = "meeting_agents.summarize"
QUEUED_REQUEST = "meeting_agents.model_request"
DBOS_SCOPE = "dbos-tracer"


def _traced_batch(tmp_path: Path, folder: Path, environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """The batch over ``folder`` in a host that traces; every span it ended."""
    spans = tmp_path / "spans.jsonl"
    done = subprocess.run(  # noqa: S603  # our own command with the test's arguments
        [
            sys.executable,
            "-m",
            "tests.integration.durable.traced",
            "batch",
            str(folder),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        env=clean_environment({**environ, "TRACES_FILE": str(spans)}),
        timeout=PROCESS_TIMEOUT,
        check=False,
    )
    err = done.stderr.decode("utf-8")
    assert done.returncode in (0, 1), err
    assert "OTLP" not in err, "DBOS warned about its tracing setup"
    return [json.loads(line) for line in spans.read_text(encoding="utf-8").splitlines()]


def _by_trace(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        traces.setdefault(span["trace_id"], []).append(span)
    return traces


@pytest.mark.parametrize("requests_per_minute", [None, "6000"], ids=["steps", "rate-limited-queue"])
def test_each_transcript_is_one_trace_its_workflow_span_over_the_run_and_its_steps(
    tmp_path: Path, folder: Path, requests_per_minute: str | None
) -> None:
    extra = {"AGENT_BATCH_REQUESTS_PER_MINUTE": requests_per_minute} if requests_per_minute else {}
    with CountingGateway() as gateway:
        spans = _traced_batch(tmp_path, folder, gateway_environment(gateway.base_url, **extra))
        requests = len(gateway.completed)
    assert [line["status"] for line in index(tmp_path / "out")] == ["done"] * len(TRANSCRIPTS)
    traces = _by_trace(spans)
    assert len(traces) == len(TRANSCRIPTS)
    workflow_ids = set()
    model_steps = 0
    for trace in traces.values():
        by_id = {span["span_id"]: span for span in trace}
        assert len(by_id) == len(trace)

        def parent(span: dict[str, Any], by_id: dict[str, dict[str, Any]] = by_id) -> dict[str, Any]:
            assert span["parent_id"] in by_id, f"{span['name']}: its parent is not in its trace"
            return by_id[span["parent_id"]]

        roots = [span for span in trace if span["parent_id"] is None]
        assert [(root["scope"], root["name"]) for root in roots] == [(DBOS_SCOPE, WORKFLOW)]
        workflow = roots[0]
        workflow_ids.add(workflow["attributes"]["operationUUID"])
        [agent] = [span for span in trace if span["name"] == "invoke_agent meeting_summary"]
        assert parent(agent) is workflow
        chats = [span for span in trace if span["name"] == "chat offline"]
        tools = [span for span in trace if span["name"].startswith("execute_tool ")]
        assert chats
        assert tools
        for ours in chats + tools:
            assert parent(ours) is agent
        steps = [span for span in trace if span["scope"] == DBOS_SCOPE and span is not workflow]
        for step in steps:
            # The transcript's workflow, or a queued request's, a child workflow named after it.
            assert step["attributes"]["operationUUID"].startswith(workflow["attributes"]["operationUUID"])
            above = parent(step)
            if step["name"] == "model request":
                model_steps += 1
                if requests_per_minute is None:
                    assert above["name"] == "chat offline"
                else:
                    # Through the rate-limited queue: the request's own workflow, under the chat span.
                    assert above["name"] == QUEUED_REQUEST
                    assert parent(above)["name"] == "chat offline"
            elif step["name"] == QUEUED_REQUEST:
                assert requests_per_minute is not None
            else:
                assert step["name"].startswith("tool ")
                assert above["name"] == "execute_" + step["name"]
        # Every call the run made went through a step of its own.
        assert sum(span["name"] == "model request" for span in steps) == len(chats)
        assert sum(span["name"].startswith("tool ") for span in steps) == len(tools)
    # Each workflow is the meeting the index names by its key.
    assert workflow_ids == {line["key"] for line in index(tmp_path / "out")}
    assert model_steps == requests


def test_no_span_holds_the_api_key_even_echoed_back_with_content_captured(tmp_path: Path) -> None:
    folder = write_transcripts(tmp_path / "in", {"one.txt": TRANSCRIPTS["standup.txt"]})
    with echo_gateway("echo-text", PLANTED_KEY, AGENT_TELEMETRY_CAPTURE_CONTENT="true") as (echo, environ):
        spans = _traced_batch(tmp_path, folder, environ)
        assert any(PLANTED_KEY in request.headers.get("authorization", "") for request in echo.requests)
    names = {span["name"] for span in spans}
    assert {WORKFLOW, "model request", "invoke_agent meeting_summary", "chat echo-text"} <= names
    # The answer's text was captured: the key it quoted is there, redacted.
    assert any("Your key is" in value for span in spans for value in span["attributes"].values())
    assert PLANTED_KEY not in (tmp_path / "spans.jsonl").read_text(encoding="utf-8")
