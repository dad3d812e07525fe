"""The live line and --stream, in this process: the line's content, where it goes, and text as it arrives."""

from __future__ import annotations

import io
import json
import logging
import re
import urllib.parse

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from adapters.cli import EXIT_MODEL_FAILED, EXIT_OK, EXIT_USAGE
from adapters.cli.display.console import Console, printable
from adapters.cli.display.failures import logging_to
from adapters.cli.display.progress import LiveRun, Progress, TextStream
from adapters.offline import OfflineResponsesServer
from adapters.redaction import Redactor
from application import RoundFinished, RoundStarted, RunEvent, TextDelta, ToolCallFinished, ToolCallRecord
from domain import ChatResponse, FunctionCallContent, FunctionResultContent
from tests.integration.cli.support import (
    OFFLINE_NOTE,
    PLANTED_KEY,
    TRANSCRIPT,
    WORKFLOW,
    Ran,
    run,
    screen_lines,
)
from tests.support.processes import gateway_environment
from tests.support.upstreams import FakeServer, echo_route

LIVE = "meeting-agents: round"


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal, as stderr is when a person runs the command."""

    def isatty(self) -> bool:
        return True


def run_on_terminal(
    *argv: str, stdout: io.StringIO | None = None, environ: dict[str, str] | None = None
) -> Ran:
    """``main`` with stderr on a (fake) terminal; stdout too when ``stdout`` is that terminal."""
    return run(*argv, environ=environ, stdout=stdout, stderr=FakeTerminal())


def ended(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


# ---------------------------------------------------------------- the live line


def test_a_terminal_sees_the_rounds_calls_refusals_and_a_retry_then_nothing_left() -> None:
    argv = ("summarize", str(TRANSCRIPT), "--scenario", "http-500*1+malformed-arguments")
    ran = run_on_terminal(*argv)
    assert ran.code == EXIT_OK, ran.err
    assert "\r\x1b[Kmeeting-agents: round 1, " in ran.err
    assert "attempt 1 failed (HTTP 500), trying again" in ran.err
    assert "11 tool calls answered (1 refused by the guard)" in ran.err
    assert f"{LIVE} 2, " in ran.err
    screen = screen_lines(ran.err)
    assert not [line for line in screen if line.startswith(LIVE)]  # erased at the end
    assert screen[-1].startswith("Usage: ")
    assert ran.out == run(*argv).out  # the result is the same whether or not anyone watches


def test_a_pipe_sees_no_live_line_with_or_without_stream() -> None:
    for extra in ([], ["--stream"]):
        ran = run("summarize", str(TRANSCRIPT), "--scenario", "http-500*1", *extra)
        assert ran.code == EXIT_OK
        assert ran.err == OFFLINE_NOTE


def test_the_last_attempt_says_no_attempts_are_left() -> None:
    ran = run_on_terminal(
        "summarize", str(TRANSCRIPT), "--scenario", "http-500", environ={"AGENT_MAX_RETRIES": "1"}
    )
    assert "attempt 1 failed (HTTP 500), trying again" in ran.err
    assert "attempt 2 failed (HTTP 500), no attempts left" in ran.err
    [error] = [line for line in screen_lines(ran.err) if line.startswith("meeting-agents: ")]
    assert error.startswith("meeting-agents: error: the gateway request failed")  # whole, not after the line


def test_verbose_log_lines_are_never_written_over_by_the_live_line() -> None:
    ran = run_on_terminal("-v", "summarize", str(TRANSCRIPT))
    assert ran.code == EXIT_OK, ran.err
    requests = [line for line in screen_lines(ran.err) if "HTTP Request: POST" in line]
    assert len(requests) == 2
    assert all(line.startswith("INFO ") for line in requests), requests


def test_on_one_terminal_the_streamed_text_is_never_written_over() -> None:
    plain = run("summarize", str(TRANSCRIPT), "--format", "json").json()
    terminal = FakeTerminal()
    ran = run_on_terminal("--stream", "summarize", str(TRANSCRIPT), stdout=terminal)
    assert ran.code == EXIT_OK
    screen = screen_lines(ran.out)  # stdout and stderr are the same terminal here
    first, *_ = plain["text"].splitlines()
    assert first in screen
    assert not [line for line in screen if LIVE in line]


def tool_record(index: int, *, guarded: bool) -> ToolCallRecord:
    call = FunctionCallContent(call_id=f"c{index}", name="record_decision", raw_arguments="{}")
    return ToolCallRecord(call, FunctionResultContent(call_id=f"c{index}", result="ok"), guarded)


events = st.lists(
    st.one_of(
        st.integers(1, 40).map(RoundStarted),
        st.text(max_size=20).map(TextDelta),
        st.builds(tool_record, st.integers(0, 99), guarded=st.booleans()).map(ToolCallFinished),
        st.integers(1, 40).map(lambda number: RoundFinished(number, ChatResponse(), ())),
    ),
    max_size=30,
)


@given(events, st.floats(0, 10_000, allow_nan=False))
# (100.0 + 0.05) - 100.0 is 0.04999...: the line may read 0.0 s where f"{0.05:.1f}" reads 0.1.
@example([], 0.05)
@example([], 0.15)
def test_the_live_line_counts_what_the_run_reported(
    run_events: list[RunEvent[object]], elapsed: float
) -> None:
    progress = Progress(started=100.0, max_retries=2, clock=lambda: 100.0 + elapsed)
    for event in run_events:
        progress.observe(event)
    calls = [event.record for event in run_events if isinstance(event, ToolCallFinished)]
    rounds = [index for index, event in enumerate(run_events) if isinstance(event, RoundStarted)]
    since = run_events[rounds[-1] + 1 :] if rounds else run_events
    characters = sum(len(event.text) for event in since if isinstance(event, TextDelta))
    line = progress.line()
    started = next((event.round for event in reversed(run_events) if isinstance(event, RoundStarted)), 0)
    assert line.startswith(f"meeting-agents: round {started}, " if started else "meeting-agents: starting, ")
    refused = sum(record.guarded for record in calls)
    assert (f"{len(calls):,} tool call" in line) is bool(calls)
    assert (f"({refused:,} refused by the guard)" in line) is bool(refused)
    assert (f"{characters:,} character" in line) is bool(characters)
    # The time is the clock's reading since the start, to a tenth: compared as a number, since the
    # subtraction the line makes may land either side of a rounding edge the drawn value sits on.
    assert re.fullmatch(r".*, \d+\.\d s", line), line
    shown = float(line.rsplit(", ", 1)[1].removesuffix(" s"))
    assert abs(shown - elapsed) <= 0.05 + 1e-9


# ---------------------------------------------------------------- --stream


@pytest.mark.parametrize("mode", ["--streaming", "--no-streaming"])
def test_stream_prints_the_final_text_then_the_rest_of_the_result(mode: str) -> None:
    document = run("summarize", str(TRANSCRIPT), "--format", "json", mode).json()
    plain = run("summarize", str(TRANSCRIPT), mode)
    streamed = run("summarize", str(TRANSCRIPT), "--stream", mode)
    assert streamed.code == EXIT_OK
    details = plain.out[plain.out.index("Action items (") :]
    assert streamed.out == ended(document["text"]) + "\n" + details


def test_stream_prints_the_edit_text_then_the_changes() -> None:
    document = run(
        "edit-workflow", str(WORKFLOW), "remove Manual QA sign-off", "--approve", "all", "--format", "json"
    ).json()
    plain = run("edit-workflow", str(WORKFLOW), "remove Manual QA sign-off", "--approve", "all")
    streamed = run(
        "edit-workflow", str(WORKFLOW), "remove Manual QA sign-off", "--approve", "all", "--stream"
    )
    assert streamed.code == EXIT_OK
    assert streamed.out == ended(document["text"]) + "\n" + plain.out[plain.out.index("Workflow changes") :]


def test_stream_of_an_incomplete_answer_prints_what_arrived_and_exits_3() -> None:
    document = run("summarize", str(TRANSCRIPT), "--format", "json", "--scenario", "incomplete").json()
    streamed = run("summarize", str(TRANSCRIPT), "--stream", "--scenario", "incomplete")
    assert streamed.code == 3
    assert streamed.out.startswith(ended(document["text"]) + "\n")
    assert "incomplete" in streamed.err


@pytest.mark.parametrize(
    "argv",
    [
        ["--stream", "--format", "json", "summarize"],
        ["summarize", "--stream", "--format", "json"],
        ["--format", "json", "summarize", "--stream"],
    ],
)
def test_stream_with_json_is_refused_before_any_request(
    offline_server: OfflineResponsesServer, argv: list[str]
) -> None:
    environ = gateway_environment(offline_server.base_url, api_key=PLANTED_KEY)
    ran = run(*argv, str(TRANSCRIPT), environ=environ)
    assert ran.code == EXIT_USAGE
    assert ran.out == ""
    assert ran.err_lines == [
        "meeting-agents: error: --stream prints text as it arrives and --format json prints one JSON object; "
        "use one of them (see meeting-agents --help)"
    ]
    assert not offline_server.requests


secrets = st.text(st.sampled_from("sk-AZ09/\"'%é\n "), min_size=1, max_size=12)
plain_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
# What a gateway could send to take over a terminal, for the pieces to cut through.
escapes = st.sampled_from(
    ["\x1b]0;title\x07", "\x1b]8;;x\x1b\\", "\x1b[31m", "\x9b2J", "\x1bc", "\r\n", "\x1f"]
)


@st.composite
def texts_with_secrets(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    """A secret, a text holding it in the spellings an echo gives it, and that text cut into pieces."""
    secret = draw(secrets)
    spellings = st.sampled_from([secret, json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe="")])
    text = "".join(draw(st.lists(plain_text | spellings | escapes, max_size=8)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=10)))
    pieces = [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    return secret, text, pieces


@given(texts_with_secrets())
def test_streamed_text_shows_every_secret_cut_however_the_pieces_split_it(
    case: tuple[str, str, list[str]],
) -> None:
    secret, text, pieces = case
    out = io.StringIO()
    console = Console(out, io.StringIO(), verbose=False, chatty=False, environ={"AGENT_API_KEY": secret})
    stream = TextStream(console)
    for piece in pieces:
        stream.write(piece)
    stream.end_line()
    whole = printable(Redactor([secret]).redact(text))
    assert out.getvalue() == (ended(whole) if whole else "")
    assert stream.shown_any is bool(whole)


def test_a_key_the_gateway_echoes_in_streamed_text_is_cut() -> None:
    with FakeServer(echo_route) as echo:
        environ = gateway_environment(echo.base_url, "echo-text", PLANTED_KEY)
        ran = run_on_terminal("--stream", "-v", "summarize", str(TRANSCRIPT), environ=environ)
    assert ran.code == EXIT_OK, ran.err
    assert PLANTED_KEY not in ran.out + ran.err
    assert ran.out.startswith("Summary. Your key is [REDACTED].\n\nAction items (0)")


async def test_each_piece_of_text_is_on_stdout_before_the_next_arrives() -> None:
    out = io.StringIO()
    console = Console(out, FakeTerminal(), verbose=False, chatty=True, environ={})
    shown = []
    async with LiveRun(console, progress=True, stream=True, max_retries=0) as live:
        for piece in ("Meeting ", "with ", "Priya."):
            live.observe(TextDelta(piece))
            shown.append(out.getvalue())
    assert shown == ["Meeting ", "Meeting with ", "Meeting with Priya."]
    assert out.getvalue() == "Meeting with Priya.\n"  # the line ends with the run


def test_a_log_line_that_cannot_be_written_is_reported_by_logging_not_raised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def broken(line: str) -> None:
        raise OSError("stderr is gone")

    with logging_to(broken, verbose=True):
        logging.getLogger("adapters.responses").warning("a request failed")
    assert "OSError: stderr is gone" in capsys.readouterr().err


@pytest.mark.parametrize("scenario", ["connection-reset*1", "truncated-stream*1"])
@pytest.mark.parametrize("mode", ["--streaming", "--no-streaming"])
def test_stream_asks_again_for_a_body_broken_before_anything_was_printed(scenario: str, mode: str) -> None:
    # The first answer is calls alone: a break in it, before any text went out, is asked for again
    # as when each answer is read whole, so the run ends as if nothing had broken.
    clean = run("summarize", str(TRANSCRIPT), "--stream", mode)
    broken = run("summarize", str(TRANSCRIPT), "--stream", "--scenario", scenario, mode)
    assert broken.code == EXIT_OK, broken.err
    assert broken.out == clean.out
    assert broken.err == OFFLINE_NOTE


def test_stream_gives_up_when_every_attempt_breaks() -> None:
    broken = run(
        "summarize",
        str(TRANSCRIPT),
        "--stream",
        "--scenario",
        "connection-reset",
        environ={"AGENT_MAX_RETRIES": "1"},
    )
    assert broken.code == EXIT_MODEL_FAILED
    assert broken.out == ""
    line = broken.err.removeprefix(OFFLINE_NOTE)
    assert line.startswith("meeting-agents: error: the gateway request failed: ")
    assert "2 attempts" in line
