"""The span tree of ``--trace``: one line per span under its parent, with duration, tokens and error type;
``span_tree_recorder`` (the package's way to it) refuses with the install hint when the SDK is missing."""

from __future__ import annotations

import re
import sys

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import Telemetry, TracingUnavailableError, span_tree_recorder
from adapters.telemetry.console import SpanTreeRecorder, render_span_tree
from application import LoopSettings
from domain import Usage
from tests.support.telemetry import TRANSCRIPT, traced_summary_agent

# A line is the label padded to the widest one, two spaces, then the duration and the details.
LINE = re.compile(r"(?P<label>.*?) {2,}(?P<duration>\d+\.\d+ m?s|unfinished)(?P<details>.*)")


def labels(tree: str) -> list[str]:
    return [match.group("label") for match in map(LINE.fullmatch, tree.splitlines()) if match is not None]


async def test_a_run_is_drawn_as_its_agent_span_over_its_chats_and_tools_in_order() -> None:
    recorder = span_tree_recorder()
    telemetry = Telemetry(tracer_provider=recorder.tracer_provider, meter_provider=recorder.meter_provider)
    chat = ScriptedChat(
        ScriptedTurn(
            calls=(("c1", "record_decision", '{"decision": '), ("c2", "list_participants", "{}")),
            usage=Usage(120, 30, 150),
        ),
        ScriptedTurn(text="Done.", usage=Usage(200, 40, 240)),
    )
    agent = traced_summary_agent(chat, telemetry, LoopSettings(concurrent_tool_calls=False), model="offline")

    await agent.summarize(TRANSCRIPT)
    lines = recorder.render().splitlines()
    recorder.shutdown()

    names = labels(recorder.render())
    assert len(names) == len(lines)
    assert names == [
        "invoke_agent meeting_summary",
        "├─ chat offline",
        "├─ execute_tool record_decision",
        "├─ execute_tool list_participants",
        "└─ chat offline",
    ]
    assert "tokens 320 in / 70 out" in lines[0]
    assert "tokens 120 in / 30 out" in lines[1]
    assert lines[2].endswith("error invalid_tool_arguments")
    assert "error" not in lines[3]
    # The durations are aligned on their right edge.
    assert len({LINE.fullmatch(line).end("duration") for line in lines}) == 1  # type: ignore[union-attr]


def test_nested_spans_indent_under_their_parent_and_orphans_are_roots() -> None:
    recorder = SpanTreeRecorder()
    tracer = recorder.tracer_provider.get_tracer("test")
    outside = trace.NonRecordingSpan(
        trace.SpanContext(trace_id=1, span_id=99, is_remote=True, trace_flags=trace.TraceFlags(1))
    )
    with tracer.start_as_current_span("root"):
        with tracer.start_as_current_span("first"), tracer.start_as_current_span("first.child"):
            pass
        with tracer.start_as_current_span("second"):
            pass
    with tracer.start_as_current_span("orphan", context=trace.set_span_in_context(outside)):
        pass
    unfinished = tracer.start_span("still open")

    names = labels(render_span_tree(recorder.spans()))

    assert names == ["root", "├─ first", "│  └─ first.child", "└─ second", "orphan"]
    assert render_span_tree([unfinished]).endswith("unfinished")  # type: ignore[list-item]
    assert render_span_tree([ReadableSpan(name="no context")]) == "no context  unfinished"
    unfinished.end()
    recorder.shutdown()


def test_retries_and_missing_counts_are_shown() -> None:
    recorder = SpanTreeRecorder()
    span = recorder.tracer_provider.get_tracer("test").start_span("chat offline")
    span.add_event("http.attempt", {"attempt": 1, "http.response.status_code": 503})
    span.add_event("http.attempt", {"attempt": 2, "error.type": "no_response"})
    span.add_event("http.attempt", {"attempt": 3, "http.response.status_code": 200})
    span.set_attribute("gen_ai.usage.output_tokens", 9)
    span.set_attribute("gen_ai.response.time_to_first_chunk", 0.0123)
    span.end()

    (line,) = recorder.render().splitlines()

    assert "tokens ? in / 9 out  first update after 12.3 ms  attempts 3 (503, no_response, 200)" in line
    assert SpanTreeRecorder().render() == ""


def test_without_the_sdk_the_recorder_is_refused_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "adapters.telemetry.console")
    # None in sys.modules makes the import fail as it does when the package is not installed.
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)

    with pytest.raises(TracingUnavailableError, match=r"pip install 'meeting-assistant-agents\[cli\]'"):
        span_tree_recorder()


@pytest.mark.parametrize(
    ("nanoseconds", "shown"),
    [(1_500_000_000, "1.50 s"), (123_400_000, "123.4 ms"), (10_000_000, "10.0 ms"), (42_000, "0.04 ms")],
)
def test_durations_read_in_seconds_or_milliseconds_with_enough_digits(nanoseconds: int, shown: str) -> None:
    recorder = SpanTreeRecorder()
    recorder.tracer_provider.get_tracer("test").start_span("work", start_time=1_000).end(
        end_time=1_000 + nanoseconds
    )

    (line,) = recorder.render().splitlines()

    assert line == f"work  {shown}"
    recorder.shutdown()
