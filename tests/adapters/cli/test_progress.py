"""The live line of a long meeting: the parts done and the calls they answered."""

from __future__ import annotations

from adapters.cli.display.progress import Progress
from application import ChunkFinished, ToolCallRecord
from domain import FunctionCallContent, FunctionResultContent


def record(call_id: str, *, guarded: bool) -> ToolCallRecord:
    call = FunctionCallContent.parse(call_id=call_id, name="record_action_item", raw_arguments="{")
    return ToolCallRecord(
        call, FunctionResultContent(call_id, {"error": "x"}, is_error=True), guarded=guarded
    )


def test_each_finished_part_counts_with_the_calls_it_answered() -> None:
    progress = Progress(started=0.0, max_retries=0, clock=lambda: 1.5)
    assert progress.line() == "meeting-agents: starting, 1.5 s"

    progress.observe(ChunkFinished(2, 3, (40, 80), (record("a", guarded=True), record("b", guarded=False))))
    progress.observe(ChunkFinished(0, 3, (1, 42), (), "ChatTransportError"))

    assert (
        progress.line()
        == "meeting-agents: 2 of 3 parts done, 2 tool calls answered (1 refused by the guard), 1.5 s"
    )
