"""The summary pipeline over the scripted model: tools, guard, participants and the result."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import ActionItem, Decision, LoopSettings, SummaryAgent, ToolRunError, find_participants
from application.framing import unframe_numbered
from application.meetings.summary import transcript_message
from application.runs.events import RunFinished
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatTransportError,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningOptions,
    Usage,
)
from tests.strategies import PlannedCall, call_turns, planned_chat, summary_calls

TRANSCRIPT = """\
[00:00] Ann: Let's start with the release.
[00:01] Bob Smith: The build is red again.
Chen: I will fix the build by Friday.
Ann: Agreed: we ship on Monday.
"""
PARTICIPANTS = ["Ann", "Bob Smith", "Chen"]


def error_code(result: FunctionResultContent) -> object:
    assert isinstance(result.result, dict)
    return result.result["error"]


@given(turns=call_turns(summary_calls), concurrent=st.booleans())
async def test_tools_run_exactly_for_well_formed_calls_and_every_call_is_answered_once(
    turns: list[list[PlannedCall]], concurrent: bool
) -> None:
    chat, ids = planned_chat(turns, final_text="The team agreed to ship.")
    settings = LoopSettings(max_consecutive_tool_errors=len(turns) + 1, concurrent_tool_calls=concurrent)

    summary = await SummaryAgent(chat, settings).summarize(TRANSCRIPT)

    planned = [call for turn in turns for call in turn]
    valid = [c for c in planned if c.kind == "valid"]
    # Every valid call cites lines that show it; the summary lists items in the meeting's order.
    items = [dict(c.arguments or {}) for c in valid if c.name == "record_action_item"]
    assert summary.action_items == tuple(
        sorted(
            (ActionItem("Chen", a["task"], a["due"], tuple(sorted(set(a["lines"])))) for a in items),
            key=lambda item: item.lines[:1],
        )
    )
    assert summary.decisions == tuple(
        Decision(str((c.arguments or {})["decision"]), (4,)) for c in valid if c.name == "record_decision"
    )
    assert [r.call.call_id for r in summary.tool_calls] == ids
    for call, record in zip(planned, summary.tool_calls, strict=True):
        assert record.guarded == (call.kind == "malformed")
        assert record.result.is_error == (call.kind != "valid")
        if call.kind != "valid":
            assert error_code(record.result) == "invalid_tool_arguments"
        elif call.name == "list_participants":
            assert record.result.result == {"participants": PARTICIPANTS}
    answered = [
        r.call_id for m in summary.run.messages for r in m.contents if isinstance(r, FunctionResultContent)
    ]
    assert answered == ids
    for t in range(len(turns)):
        follow_up = chat.requests[t + 1].messages
        sent = [c.raw_arguments for m in follow_up for c in m.function_calls]
        assert sent == [c.raw for turn in turns[: t + 1] for c in turn]
    assert len(chat.requests) == len(turns) + 1
    assert summary.text == "The team agreed to ship."


async def test_a_summary_collects_what_the_model_recorded() -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "list_participants", "{}"),), usage=Usage(100, 10, 110)),
        ScriptedTurn(
            calls=(
                (
                    "c2",
                    "record_action_item",
                    '{"owner": "Chen", "task": "Fix the build", "due": "Friday", "lines": [3]}',
                ),
                ("c3", "record_decision", '{"decision": "Ship on Monday.", "lines": [4]}'),
                (
                    "c4",
                    "record_action_item",
                    '{"owner": "bob", "task": "Check the build", "due": null, "lines": [2]}',
                ),
            ),
            usage=Usage(200, 20, 220),
        ),
        ScriptedTurn(
            text="The build is red; Chen fixes it and the team ships Monday.", usage=Usage(300, 30, 330)
        ),
    )

    summary = await SummaryAgent(chat, LoopSettings()).summarize(TRANSCRIPT)

    assert summary.text == "The build is red; Chen fixes it and the team ships Monday."
    # Bob is named only as the speaker of line 2, who states a fact but takes nothing on: refused.
    assert summary.action_items == (ActionItem("Chen", "Fix the build", "Friday", (3,)),)
    assert summary.decisions == (Decision("Ship on Monday.", (4,)),)
    results = [r.result.result for r in summary.tool_calls]
    assert results[:3] == [
        {"participants": PARTICIPANTS},
        {"recorded": "action_item", "count": 1, "lines": [3]},
        {"recorded": "decision", "count": 1, "lines": [4]},
    ]
    assert isinstance(results[3], dict)
    assert results[3]["error"] == "ungrounded"
    assert summary.tool_calls[3].guarded is False
    assert summary.run.usage == Usage(600, 60, 660)
    assert summary.run.final.response_id == "resp_scripted_3"


async def test_a_missing_due_date_means_none_was_said() -> None:
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(("c1", "record_action_item", '{"owner": "Chen", "task": "Fix the build", "lines": [3]}'),)
        ),
        ScriptedTurn(text="ok"),
    )
    summary = await SummaryAgent(chat, LoopSettings()).summarize(TRANSCRIPT)
    assert summary.action_items == (ActionItem("Chen", "Fix the build", None, (3,)),)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"decision": "Ship on Monday"}', "Invalid tool arguments: required field is missing @ $.lines."),
        ('{"decision": "   ", "lines": [4]}', "Invalid tool arguments: must not be empty @ $."),
    ],
    ids=["without lines", "blank decision"],
)
async def test_a_decision_with_invalid_arguments_is_refused_with_why_and_not_recorded(
    arguments: str, message: str
) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "record_decision", arguments),)),
        ScriptedTurn(text="ok"),
    )
    summary = await SummaryAgent(chat, LoopSettings()).summarize(TRANSCRIPT)
    assert summary.decisions == ()
    assert summary.tool_calls[0].result.result == {"error": "invalid_tool_arguments", "message": message}


async def test_the_request_offers_the_three_tools_with_strict_schemas_and_the_instructions() -> None:
    chat = ScriptedChat(ScriptedTurn(text="ok"))
    base = ChatOptions(model="gpt-5.5", reasoning=ReasoningOptions(effort="low"), instructions="ignored")

    await SummaryAgent(chat, LoopSettings(), options=base).summarize(TRANSCRIPT)

    (request,) = chat.requests
    assert request.options is not None
    assert request.options.model == "gpt-5.5"
    assert request.options.reasoning == ReasoningOptions(effort="low")
    assert request.options.instructions is not None
    assert "record_action_item" in request.options.instructions
    tools = {spec.name: json.loads(json.dumps(dict(spec.parameters))) for spec in request.options.tools}
    assert tools["list_participants"] == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    action: dict[str, Any] = tools["record_action_item"]
    assert action["required"] == ["owner", "task", "due", "lines", "quote"]
    assert action["properties"]["quote"]["type"] == ["string", "null"]
    assert action["additionalProperties"] is False
    assert action["properties"]["owner"]["type"] == "string"
    assert action["properties"]["due"]["type"] == ["string", "null"]
    assert action["properties"]["lines"]["type"] == "array"
    assert action["properties"]["lines"]["items"] == {"type": "integer"}
    assert tools["record_decision"]["required"] == ["decision", "lines", "quote"]
    assert all(spec.strict for spec in request.options.tools)
    assert unframe_numbered(request.messages[0].text, "transcript") == tuple(
        enumerate(TRANSCRIPT.splitlines(), 1)
    )
    assert request.messages[0].role == "user"


async def test_a_short_meeting_is_one_run_asked_the_framed_transcript_whole_or_as_events() -> None:
    # A meeting that fits in one chunk runs as each chunk of a long one does (one implementation),
    # with the message transcript_message() frames for the whole file.
    whole, streamed = ScriptedChat(ScriptedTurn(text="ok")), ScriptedChat(ScriptedTurn(text="ok"))

    summary = await SummaryAgent(whole, LoopSettings()).summarize(TRANSCRIPT)
    events = [event async for event in SummaryAgent(streamed, LoopSettings()).summarize_events(TRANSCRIPT)]

    for chat in (whole, streamed):
        (request,) = chat.requests
        assert request.messages == (ChatMessage.user(transcript_message(TRANSCRIPT)),)
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.text == summary.text == "ok"
    assert events[-1].result.run.messages == summary.run.messages


async def test_each_run_starts_with_empty_notes() -> None:
    record = ScriptedTurn(calls=(("c1", "record_decision", '{"decision": "Ship.", "lines": [4]}'),))
    chat = ScriptedChat(record, ScriptedTurn(text="one"), record, ScriptedTurn(text="two"))
    agent = SummaryAgent(chat, LoopSettings())

    first = await agent.summarize(TRANSCRIPT)
    second = await agent.summarize(TRANSCRIPT)

    assert first.decisions == second.decisions == (Decision("Ship.", (4,)),)


async def test_a_failed_request_raises_with_the_run_so_far() -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "record_decision", '{"decision": "Ship.", "lines": [4]}'),)),
        ChatTransportError("timed out", attempts=3),
    )
    with pytest.raises(ChatTransportError) as caught:
        await SummaryAgent(chat, LoopSettings()).summarize(TRANSCRIPT)
    assert isinstance(caught.value, ToolRunError)
    assert [m.role for m in caught.value.run.messages] == ["assistant", "tool"]


def final_answer(text: str, status: str | None) -> ChatResponse:
    finish: FinishReason = "length" if status == "incomplete" else "stop"
    return ChatResponse(
        messages=(ChatMessage.assistant(text),), response_id="resp_final", status=status, finish_reason=finish
    )


@given(status=st.sampled_from(["completed", "incomplete", "in_progress", None]) | st.text(max_size=12))
async def test_a_summary_is_complete_unless_the_final_answer_is_incomplete(status: str | None) -> None:
    chat = ScriptedChat(
        ScriptedTurn(calls=(("c1", "record_decision", '{"decision": "Ship.", "lines": [4]}'),)),
        final_answer("The team agreed to sh", status),
    )

    summary = await SummaryAgent(chat, LoopSettings()).summarize(TRANSCRIPT)

    assert summary.complete is (status != "incomplete")
    assert summary.text == "The team agreed to sh"
    assert summary.decisions == (Decision("Ship.", (4,)),)


async def test_only_the_final_answer_decides_completeness() -> None:
    cut_round = ChatResponse(
        messages=(
            ChatMessage(
                "assistant",
                (FunctionCallContent.parse(call_id="c1", name="list_participants", raw_arguments="{}"),),
            ),
        ),
        status="incomplete",
        finish_reason="length",
    )
    chat = ScriptedChat(cut_round, ScriptedTurn(text="Done."))

    summary = await SummaryAgent(chat, LoopSettings()).summarize(TRANSCRIPT)

    assert summary.complete is True
    assert summary.tool_calls[0].result.result == {"participants": PARTICIPANTS}


async def test_scripted_turns_are_complete() -> None:
    summary = await SummaryAgent(ScriptedChat(ScriptedTurn(text="ok")), LoopSettings()).summarize(TRANSCRIPT)
    assert summary.complete is True


@pytest.mark.parametrize(
    ("transcript", "expected"),
    [
        ("Ann: hi\nBob: hello\nAnn: bye", ("Ann", "Bob")),
        ("[00:01] Ann: hi\n[01:02:03] Bob Smith: yo", ("Ann", "Bob Smith")),
        ("(00:01) Ann: hi\n10:30 Chen: yes", ("Ann", "Chen")),
        ("  Dr. O'Neil-Smith: present", ("Dr. O'Neil-Smith",)),
        ("Zoë: hallo\nJosé María: hola", ("Zoë", "José María")),
        ("no speakers here\njust prose", ()),
        ("10:30: the meeting starts\n[00:01] : nobody", ()),
        ("Ann:\nBob: said something", ("Bob",)),
        ("One Two Three Four Five: too many words", ()),
        ("", ()),
    ],
)
def test_participants_are_the_speakers_in_order_of_first_appearance(
    transcript: str, expected: tuple[str, ...]
) -> None:
    assert find_participants(transcript) == expected
