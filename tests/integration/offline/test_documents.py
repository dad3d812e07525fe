"""Run documents of real runs: both pipelines against the offline endpoint, through both adapters, load back
equal; a run stored here and loaded in another process is equal and sends the same next request."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from application import MeetingSummary, WorkflowEdit, dumps, loads
from domain import ChatMessage, ChatOptions
from tests.integration.offline.support import ContainerFactory
from tests.integration.offline.test_pipelines import ADAPTERS, edit_example, summarize
from tests.support.doc_blocks import section_block
from tests.support.gateway import JSON, Recorder, adapters_for, answer, response_document
from tests.support.processes import CHECKOUT, checkout_first, clean_environment

FOLLOW_UP = ChatMessage.user("And what comes next?")

# Loads the document named on the command line, prints it dumped again, then the bytes of the next request
# each adapter sends for the run's conversation and a follow-up question (hex, one line each).
_OTHER_PROCESS = """
import asyncio, json, sys
from application import dumps, loads
from domain import ChatMessage, ChatOptions
from tests.support.gateway import JSON, Recorder, adapters_for, answer, response_document

result = loads(open(sys.argv[1], encoding="utf-8").read())
print(type(result).__name__)
print(dumps(result))

async def next_requests():
    recorder = Recorder([answer(json.dumps(response_document([])), JSON)])
    for adapter in adapters_for(recorder):
        await adapter.get_response(
            [*result.run.messages, ChatMessage.user("And what comes next?")], ChatOptions(initiator="agent")
        )
    for request in recorder.requests:
        print(request.content.hex())

asyncio.run(next_requests())
"""


async def next_requests(result: MeetingSummary | WorkflowEdit) -> list[str]:
    recorder = Recorder([answer(json.dumps(response_document([])), JSON)])
    for adapter in adapters_for(recorder):
        await adapter.get_response([*result.run.messages, FOLLOW_UP], ChatOptions(initiator="agent"))
    return [request.content.hex() for request in recorder.requests]


@ADAPTERS
async def test_a_real_run_of_each_pipeline_loads_back_equal(
    containers: ContainerFactory, streaming: bool
) -> None:
    container = containers("offline:malformed-arguments", streaming=streaming)
    for result in (await summarize(container), await edit_example(container)):
        loaded = loads(dumps(result))

        assert loaded == result
        assert loaded.run.usage == result.run.usage
        assert any(
            call.parse_error is not None for call in loaded.run.responses[0].function_calls
        ) or isinstance(result, WorkflowEdit)


@ADAPTERS
async def test_a_run_stored_here_loads_equal_in_another_process_and_sends_the_same_next_request(
    containers: ContainerFactory, streaming: bool, tmp_path: Path
) -> None:
    container = containers("offline:malformed-arguments", streaming=streaming)
    for result in (await summarize(container), await edit_example(container)):
        stored = tmp_path / "run.json"
        stored.write_text(dumps(result), encoding="utf-8")

        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _OTHER_PROCESS,
            str(stored),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=CHECKOUT,
            env=checkout_first(),
        )
        out, err = await asyncio.wait_for(process.communicate(), timeout=120)

        assert process.returncode == 0, err.decode()
        kind, document, *requests = out.decode("utf-8").splitlines()
        assert kind == type(result).__name__
        assert loads(document) == result
        assert document == dumps(result)
        assert requests == await next_requests(result)
        assert len(requests) == 2


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
async def test_the_next_request_sends_each_output_item_back_whole(
    containers: ContainerFactory, streaming: bool
) -> None:
    summary = await summarize(containers("offline", streaming=streaming))
    (sent, _) = [json.loads(bytes.fromhex(request)) for request in await next_requests(summary)]

    calls = [item for item in sent["input"] if item["type"] == "function_call"]
    assert calls
    assert all(item["id"].startswith("fc_") and item["status"] == "completed" for item in calls)
    assert [item["arguments"] for item in calls] == [
        call.raw_arguments for message in summary.run.messages for call in message.function_calls
    ]


async def test_the_documented_example_of_storing_a_run_runs_as_written(tmp_path: Path) -> None:
    code = section_block("docs/host-integration.md", "## Storing a run and loading it again")
    script = tmp_path / "stored.py"
    script.write_text(code, encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=tmp_path,
        env=checkout_first(clean_environment()),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)

    assert process.returncode == 0, err.decode()
    shown = out.decode("utf-8")
    assert 'value[0].role: expected one of "system", "developer", "user", "assistant", "tool"' in shown
    assert '{"format":"meeting-agents","version":1,"kind":"messages"' in shown
    assert loads((tmp_path / "run.json").read_text(encoding="utf-8")).run.responses
