"""Failure lines and details (adapters/cli/display/failures.py): what failed and where, never a credential."""

from __future__ import annotations

import pytest

from adapters.cli.display.failures import describe_failure, failure_details, shown_url
from adapters.settings import AgentSettings
from application import ToolRun, ToolRunError
from domain import (
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    MalformedResponseError,
    ResponseFailedError,
)

AGENT = AgentSettings(base_url="http://user:pw@127.0.0.1:4000/v1", model="m")


def test_a_url_is_shown_without_its_credentials() -> None:
    assert shown_url("http://user:pw@127.0.0.1:4000/v1") == "http://127.0.0.1:4000/v1"
    assert shown_url("https://token@[::1]/v1") == "https://[::1]/v1"
    assert shown_url("http://127.0.0.1:4000/v1") == "http://127.0.0.1:4000/v1"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (ChatError("odd"), "the request failed: odd [POST http://127.0.0.1:4000/v1/responses; model m]"),
        (ResponseFailedError("no", code=None, request_id="r1"), "the model failed: no [POST"),
        (MalformedResponseError("bad body", response_id="resp_1"), "; response id resp_1]"),
        (ChatTransportError("HTTP 500 from x", status_code=500, attempts=3), "; 3 attempts]"),
        (ChatTransportError("refused", status_code=409, attempts=1), "; 1 attempt; HTTP 409]"),
    ],
)
def test_a_failure_line_names_what_and_where(error: ChatError, line: str) -> None:
    described = describe_failure(error, AGENT)
    assert line in described
    assert "pw" not in described


def test_a_transport_failure_names_its_root_cause() -> None:
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as cause:
            raise ChatTransportError("the connection failed", attempts=2) from cause
    except ChatTransportError as error:
        described = describe_failure(error, AGENT)
    assert "2 attempts; cause ConnectionRefusedError: [Errno 111] Connection refused]" in described


def test_details_show_what_had_arrived_before_the_traceback() -> None:
    half = ChatResponse(messages=(ChatMessage.assistant("half an answer"),))
    details = failure_details(MalformedResponseError("cut", partial=half))
    assert details[0] == "what had arrived (14 characters of text): half an answer"
    assert details[1] == "domain.errors.MalformedResponseError: cut"  # never raised, so no frames


def test_details_of_a_run_show_its_last_whole_answer() -> None:
    earlier = ChatResponse(messages=(ChatMessage.assistant("x" * 600),))
    details = failure_details(ToolRunError("failed later", run=ToolRun(responses=(earlier,))))
    assert details[0] == f"what had arrived (600 characters of text): {'x' * 500}..."


def test_a_run_error_chained_from_the_adapters_names_no_cause_twice() -> None:
    try:
        try:
            raise ChatTransportError("no complete answer within agent.deadline_seconds=1 s")
        except ChatTransportError as adapter_error:
            raise ChatTransportError(adapter_error.message) from adapter_error
    except ChatTransportError as error:
        described = describe_failure(error, AGENT)
    assert "cause" not in described
    assert described.count("deadline_seconds") == 1
