"""How a result reads (adapters/cli/display/report.py): guarded and refused calls, error codes, usage."""

from __future__ import annotations

from adapters.cli.display.report import (
    error_code,
    line_label,
    summary_details,
    summary_text,
    usage_json,
    usage_line,
)
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import ActionItem, Decision, MeetingSummary, SummaryAgent, ToolCallRecord, ToolRun
from domain import ChatMessage, ChatResponse, FunctionCallContent, FunctionResultContent, Usage

BAD = {"error": "invalid_tool_arguments", "message": "m"}


def record(call_id: str, name: str, raw: str, *, guarded: bool = False) -> ToolCallRecord:
    call = FunctionCallContent.parse(call_id=call_id, name=name, raw_arguments=raw)
    result = FunctionResultContent(call_id, BAD if guarded else {"recorded": 1}, is_error=guarded)
    return ToolCallRecord(call, result, guarded=guarded)


def answer(*records: ToolCallRecord) -> ChatResponse:
    """The model answer that made ``records``' calls."""
    return ChatResponse(messages=(ChatMessage("assistant", tuple(r.call for r in records)),))


def summary_of(records: tuple[ToolCallRecord, ...], run: ToolRun) -> MeetingSummary:
    return MeetingSummary(text="", action_items=(), decisions=(), tool_calls=records, run=run, complete=True)


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
    records = (
        record("a", "record_decision", '{"decision": ', guarded=True),
        record("b", "list_participants", "{}"),
        record("c", "record_decision", '{"decision": "Ship"}'),
    )
    text = summary_text(summary_of(records, ToolRun()))  # no answers: rounds unknown, any later call
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
    # The share of the input the provider read from its prompt cache, when it reported one.
    cached = Usage(12_000, 600, cached_input_tokens=9_000)
    assert (
        usage_line(cached, 2)
        == "Usage: 2 requests, 12,000 input (75% cached) + 600 output tokens, cost not reported"
    )
    assert usage_json(usage, 3) == {
        "requests": 3,
        "input_tokens": 12_345,
        "output_tokens": 678,
        "total_tokens": 13_023,
        "cached_input_tokens": None,
        "reasoning_tokens": 40,
        "cost_usd": 0.0123456,
    }


def test_cited_lines_read_as_ranges() -> None:
    assert line_label((12,)) == "L12"
    assert line_label((14, 12, 13)) == "L12-14"
    assert line_label((3, 12, 13, 14, 20)) == "L3, L12-14, L20"


def test_items_show_their_lines_quote_them_and_name_what_was_not_covered() -> None:
    summary = MeetingSummary(
        text="t",
        action_items=(ActionItem("Tom", "fix the build", "Friday", (2, 3)),),
        decisions=(Decision("Ship on Monday", (4,)),),
        complete=False,
        tool_calls=(),
        run=ToolRun(),
        failed_chunks=((90, 180),),
    )
    transcript = (
        "Ana: hi",
        "Ana: the build is red",
        "Tom: I'll fix it by Friday.",
        "Ana: we ship on Monday.",
    )

    plain = summary_details(summary)
    quoted = summary_details(summary, transcript).splitlines()

    assert "  1. Tom: fix the build (due Friday) [L2-3]" in plain
    assert "  1. Ship on Monday [L4]" in plain
    assert "Not covered: L90-180 (those parts of the meeting failed; see stderr)" in plain
    at = quoted.index("  1. Tom: fix the build (due Friday) [L2-3]")
    assert quoted[at + 1 : at + 3] == [
        "       L2 | Ana: the build is red",
        "       L3 | Tom: I'll fix it by Friday.",
    ]
    assert quoted[quoted.index("  1. Ship on Monday [L4]") + 1] == "       L4 | Ana: we ship on Monday."


def test_a_refused_call_pairs_with_the_call_of_the_next_round_that_asked_for_the_same_thing() -> None:
    maya = '{"owner": "Maya", "task": "update the release notes", "due": "Thursday noon"}'
    # Not JSON (single quotes), so not a prefix of the call sent again, yet plainly the same item.
    refused = record("bad", "record_action_item", maya.replace('"', "'"), guarded=True)
    same_round = record("dev", "record_action_item", '{"owner": "Dev", "task": "pair with Alex"}')
    first_round = (refused, same_round)
    # In the next round the model records someone else's item first, then re-issues Maya's.
    second_round = (
        record(
            "priya", "record_action_item", '{"owner": "Priya", "task": "book the retro room", "due": null}'
        ),
        record("maya", "record_action_item", maya),
        record("note", "record_decision", maya),  # as near, but another tool
    )
    run = ToolRun(responses=(answer(*first_round), answer(*second_round), ChatResponse()))
    text = summary_text(summary_of((*first_round, *second_round), run))
    [guarded] = [line for line in text.splitlines() if "GUARDED" in line]
    assert guarded.endswith(
        '; re-issued as [maya] record_action_item(owner="Maya", '
        'task="update the release notes", due="Thursday noon")'
    )


def test_a_refused_call_pairs_with_a_later_round_when_the_next_has_no_call_of_its_tool() -> None:
    refused = record("bad", "record_decision", '{"decision": "Sh', guarded=True)
    other = record("who", "list_participants", "{}")
    later = record("ship", "record_decision", '{"decision": "Ship it"}')
    run = ToolRun(responses=(answer(refused), answer(other), answer(later), ChatResponse()))
    text = summary_text(summary_of((refused, other, later), run))
    assert "[bad]: arguments rejected" in text
    assert '; re-issued as [ship] record_decision(decision="Ship it")' in text
