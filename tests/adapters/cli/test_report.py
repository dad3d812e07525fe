"""How a result reads (adapters/cli/report.py): guarded and refused calls, error codes, usage."""

from __future__ import annotations

from adapters.cli.report import error_code, summary_text, usage_json, usage_line
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import MeetingSummary, SummaryAgent, ToolCallRecord, ToolRun
from domain import FunctionCallContent, FunctionResultContent, JsonValue, Usage


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
    assert usage_line(None, 2) == "Usage: 2 requests, tokens and cost not reported"


def test_the_usage_line_says_requests_tokens_and_cost_in_one_line() -> None:
    usage = Usage(12_345, 678, 13_023, reasoning_tokens=40, cost_usd=0.0123456)
    assert usage_line(usage, 3) == (
        "Usage: 3 requests, 12,345 input + 678 output tokens (40 reasoning), cost $0.012346"
    )
    assert usage_line(Usage(5, None), 1) == "Usage: 1 request, 5 input + ? output tokens, cost not reported"
    assert usage_json(usage, 3) == {
        "requests": 3,
        "input_tokens": 12_345,
        "output_tokens": 678,
        "total_tokens": 13_023,
        "cached_input_tokens": None,
        "reasoning_tokens": 40,
        "cost_usd": 0.0123456,
    }
