"""The summary pipeline over imported transcripts: what the model reads, the speakers it is grounded in, and
the times and speakers each item carries, on the scripted model."""

from __future__ import annotations

import json
from typing import Final

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import ActionItem, Decision, LoopSettings, SummaryAgent, Transcript
from application.framing import unframe_numbered
from application.runs.events import RunFinished

# As Teams writes it: a display name with the company in brackets, a turn cut into two cues.
TEAMS: Final = """\ufeffWEBVTT\r
\r
3f2a/10-0\r
00:00:01.000 --> 00:00:04.000\r
<v Ana Souza (Contoso)>The build on main is red again.</v>\r
\r
3f2a/11-0\r
00:00:05.000 --> 00:00:07.000\r
<v Ben Ito>I'll fix the build by Friday.</v>\r
\r
3f2a/11-1\r
00:00:07.500 --> 00:00:09.250\r
<v Ben Ito>It is the cache again.\r
\r
3f2a/12-0\r
00:01:10.000 --> 00:01:13.000\r
<v Ana Souza (Contoso)>Agreed: we ship on Monday. I'll send the release notes.</v>\r
"""


_Call = tuple[str, str, dict[str, object]]


def _recording(*calls: _Call) -> ScriptedChat:
    return ScriptedChat(
        ScriptedTurn(
            calls=tuple((call_id, name, json.dumps(arguments)) for call_id, name, arguments in calls)
        ),
        ScriptedTurn(text="Ben fixes the build; the team ships Monday."),
    )


ANA: Final = "Ana Souza (Contoso)"
ITEMS: Final[tuple[_Call, ...]] = (
    ("c1", "record_action_item", {"owner": "Ben Ito", "task": "Fix the build", "due": "Friday",
           "lines": [2]}),
    ("c2", "record_decision", {"decision": "Ship on Monday", "lines": [3]}),
    # The speaker is who the import says, brackets and all: "Ana Souza" is her, committing in her own line.
    ("c3", "record_action_item", {"owner": "Ana Souza", "task": "send the release notes", "lines": [3]}),
    # Being named is not committing: refused, as it would be in plain text.
    ("c4", "record_action_item", {"owner": "Ana Souza", "task": "check the red build", "lines": [1]}),
)  # fmt: skip


async def test_the_model_reads_numbered_lines_with_short_times_and_the_imported_speakers() -> None:
    chat = _recording()

    await SummaryAgent(chat, LoopSettings()).summarize(Transcript.parse(TEAMS))

    framed = unframe_numbered(chat.requests[0].messages[-1].text, "transcript")
    assert framed == (
        (1, "[00:01] Ana Souza (Contoso): The build on main is red again."),
        (2, "[00:05] Ben Ito: I'll fix the build by Friday. It is the cache again."),
        (3, "[01:10] Ana Souza (Contoso): Agreed: we ship on Monday. I'll send the release notes."),
    )


async def test_each_item_carries_when_it_was_said_and_who_spoke() -> None:
    summary = await SummaryAgent(_recording(*ITEMS), LoopSettings()).summarize(Transcript.parse(TEAMS))

    assert summary.action_items == (
        ActionItem("Ben Ito", "Fix the build", "Friday", (2,), 5.0, 9.25, ("Ben Ito",)),
        ActionItem("Ana Souza (Contoso)", "send the release notes", None, (3,), 70.0, 73.0, (ANA,)),
    )
    assert summary.decisions == (Decision("Ship on Monday", (3,), 70.0, 73.0, (ANA,)),)
    errors = [record.result.result for record in summary.tool_calls if record.result.is_error]
    assert [error["error"] for error in errors if isinstance(error, dict)] == ["ungrounded"]


async def test_the_events_end_with_the_summary_the_call_returns() -> None:
    transcript = Transcript.parse(TEAMS)
    summary = await SummaryAgent(_recording(*ITEMS), LoopSettings()).summarize(transcript)

    events = [
        event async for event in SummaryAgent(_recording(*ITEMS), LoopSettings()).summarize_events(transcript)
    ]

    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.action_items == summary.action_items
    assert finished.result.decisions == summary.decisions
    assert finished.result.action_items[0].start == 5.0


async def test_a_plain_string_is_summarized_as_ever_without_times_or_speakers() -> None:
    text = "Ana: The build is red.\nBen: I'll fix the build by Friday.\nAna: Agreed: we ship on Monday.\n"
    calls = ITEMS[:2]

    from_text = await SummaryAgent(_recording(*calls), LoopSettings()).summarize(text)
    imported = await SummaryAgent(_recording(*calls), LoopSettings()).summarize(
        Transcript.parse(text, speakers={"Ben": "Ben Ito"})
    )

    assert from_text.action_items == (ActionItem("Ben", "Fix the build", "Friday", (2,)),)
    assert imported.action_items == (
        ActionItem("Ben Ito", "Fix the build", "Friday", (2,), speakers=("Ben Ito",)),
    )
    assert imported.decisions == (Decision("Ship on Monday", (3,), speakers=("Ana",)),)
