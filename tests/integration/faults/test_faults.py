"""Faults against the offline endpoint: each ends in a correct answer or a typed error that keeps what
had arrived, no log record at any level shows the API key, and closing leaves no connection open."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pytest

from adapters.offline import OfflineResponsesServer
from application import ActionItem, ToolRunError
from domain import (
    ChatError,
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    MalformedResponseError,
)
from tests.integration.offline.support import (
    API_KEY,
    ECHO,
    EXAMPLES,
    GREETING,
    STANDUP_ACTION_ITEMS,
    bounded,
    build_container,
    connections_drained,
)
from tests.support.leaks import leaking_records

ADAPTERS = pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
ADAPTER_LOGGER = "adapters.responses"
PADDING = "x" * (5 * 1024 * 1024)


@attrs.frozen
class Fault:
    """A fault and what it must end in: ``error`` None means the whole answer to the greeting."""

    scenario: str
    error: type[ChatError] | None = None
    status_code: int | None = None
    max_retries: int = 0
    timeout_seconds: float = 10.0

    @property
    def model(self) -> str:
        return f"offline:{self.scenario}"


FAULTS = (
    Fault("connection-reset", ChatTransportError, max_retries=1),
    Fault("connection-reset+litellm", ChatTransportError),
    Fault("stall", ChatTransportError, timeout_seconds=1.0),
    Fault("http-429*2", max_retries=2),
    Fault("http-429", ChatTransportError, status_code=429, max_retries=1),
    Fault("http-500*1", max_retries=1),
    Fault("http-500", ChatTransportError, status_code=500, max_retries=2),
    Fault("garbage-data", MalformedResponseError),
    Fault("garbage-data+litellm", MalformedResponseError),
    Fault("huge-arguments"),
    Fault("unknown-events"),
    Fault("unknown-events+litellm"),
)


def adapter_records(logs: pytest.LogCaptureFixture, level: int, saying: str) -> list[logging.LogRecord]:
    """The Responses adapters' records at ``level`` whose message contains ``saying``."""
    return [
        record
        for record in logs.records
        if record.name == ADAPTER_LOGGER and record.levelno == level and saying in record.getMessage()
    ]


def assert_no_secret(logs: pytest.LogCaptureFixture, *shown: object) -> None:
    assert logs.records, "nothing was logged: the capture is not working"
    assert leaking_records(logs.records, API_KEY) == []
    for thing in shown:
        assert API_KEY not in f"{thing} {thing!r}"


async def assert_ended_cleanly(
    offline_server: OfflineResponsesServer, logs: pytest.LogCaptureFixture, *shown: object
) -> None:
    """Every connection closed and the key nowhere in the logs or in what ``shown`` says."""
    assert await connections_drained(offline_server)
    assert_no_secret(logs, *shown)


def assert_is_what_had_arrived(partial: ChatResponse | None) -> None:
    assert partial is not None
    assert partial.text
    assert ECHO.startswith(partial.text)
    assert partial.text != ECHO


async def _greeted(
    server: OfflineResponsesServer,
    model: str,
    *,
    streaming: bool,
    max_retries: int = 0,
    timeout_seconds: float = 10.0,
) -> ChatResponse:
    """The greeting asked once of a container on the stand-in serving ``model``; the container is closed
    before this returns or raises."""
    async with build_container(
        server, model, streaming=streaming, max_retries=max_retries, timeout_seconds=timeout_seconds
    ) as container:
        return await bounded(container.chat().get_response((ChatMessage.user(GREETING),)))


@ADAPTERS
@pytest.mark.parametrize("fault", FAULTS, ids=[fault.scenario for fault in FAULTS])
async def test_each_fault_ends_typed_or_correct_with_clean_logs_and_no_open_connection(
    offline_server: OfflineResponsesServer, logs: pytest.LogCaptureFixture, streaming: bool, fault: Fault
) -> None:
    outcome: ChatResponse | ChatError
    try:
        outcome = await _greeted(
            offline_server,
            fault.model,
            streaming=streaming,
            max_retries=fault.max_retries,
            timeout_seconds=fault.timeout_seconds,
        )
    except ChatError as error:
        outcome = error

    assert await connections_drained(offline_server), (
        f"{offline_server.open_connections} connections left open"
    )
    assert_no_secret(logs, outcome)
    if fault.error is None:
        assert isinstance(outcome, ChatResponse), repr(outcome)
        assert outcome.text == ECHO
        assert outcome.status == "completed"
        return
    assert type(outcome) is fault.error
    assert isinstance(outcome, ChatError)
    if isinstance(outcome, ChatTransportError):
        assert outcome.status_code == fault.status_code
        assert outcome.attempts == len(offline_server.requests)
    if streaming and fault.status_code is None:
        assert_is_what_had_arrived(outcome.partial)
    (failure,) = adapter_records(logs, logging.WARNING, "failed")
    assert failure.__dict__["error_type"] == fault.error.__name__
    assert failure.__dict__["request_id"] == outcome.request_id


@ADAPTERS
async def test_429_with_retry_after_is_retried_and_the_retries_are_diagnosed(
    offline_server: OfflineResponsesServer, logs: pytest.LogCaptureFixture, streaming: bool
) -> None:
    response = await _greeted(offline_server, "offline:http-429*2", streaming=streaming, max_retries=2)

    assert response.text == ECHO
    assert [request.status for request in offline_server.requests] == [429, 429, 200]
    (diagnosis,) = adapter_records(logs, logging.INFO, "succeeded")
    extra: dict[str, Any] = diagnosis.__dict__
    assert extra["attempts"] == 3
    assert extra["status_code"] == 200
    assert extra["request_id"] == offline_server.requests[-1].request_id
    assert extra["response_id"] == response.response_id
    assert extra["stream"] is streaming
    sdk_retries = [
        r.getMessage()
        for r in logs.records
        if r.name.startswith("openai") and r.levelno == logging.INFO and "Retrying" in r.getMessage()
    ]
    assert len(sdk_retries) == 2, sdk_retries
    await assert_ended_cleanly(offline_server, logs, response)


@ADAPTERS
async def test_500_after_every_retry_is_a_diagnosed_transport_error(
    offline_server: OfflineResponsesServer, logs: pytest.LogCaptureFixture, streaming: bool
) -> None:
    with pytest.raises(ChatTransportError) as caught:
        await _greeted(offline_server, "offline:http-500", streaming=streaming, max_retries=2)

    error = caught.value
    assert [request.status for request in offline_server.requests] == [500, 500, 500]
    assert (error.status_code, error.attempts) == (500, 3)
    assert error.request_id == offline_server.requests[-1].request_id
    assert "server_error" in error.message
    (failure,) = adapter_records(logs, logging.WARNING, "failed")
    extra: dict[str, Any] = failure.__dict__
    assert (extra["attempts"], extra["status_code"], extra["request_id"]) == (3, 500, error.request_id)
    assert (extra["error_type"], extra["stream"]) == ("ChatTransportError", streaming)
    await assert_ended_cleanly(offline_server, logs, error)


@ADAPTERS
async def test_a_five_megabyte_argument_string_goes_through_a_pipeline_and_back(
    offline_server: OfflineResponsesServer, logs: pytest.LogCaptureFixture, streaming: bool
) -> None:
    transcript = (EXAMPLES / "standup-transcript.txt").read_text(encoding="utf-8")

    async with build_container(offline_server, "offline:huge-arguments", streaming=streaming) as container:
        summary = await bounded(container.summary_agent().summarize(transcript))

    (huge,) = [record for record in summary.tool_calls if len(record.call.raw_arguments) > 1_000_000]
    assert json.loads(huge.call.raw_arguments) == {"padding": PADDING}
    # The padded call asks a no-parameter tool for an argument it does not take: refused, not run.
    assert huge.call.name == "list_participants"
    assert huge.result.is_error
    assert set(summary.action_items) == STANDUP_ACTION_ITEMS
    echoed = [
        item
        for request in offline_server.requests[1:]
        for item in request.body["input"]
        if item.get("type") == "function_call" and item["call_id"] == huge.call.call_id
    ]
    # Every later request carries the whole history, the 5 MB string included, byte for byte.
    assert len(echoed) == len(offline_server.requests) - 1 >= 1
    assert all(item["arguments"] == huge.call.raw_arguments for item in echoed)
    # Raw tool arguments stay out of the logs, like the key.
    assert leaking_records(logs.records, PADDING[:4096]) == []
    await assert_ended_cleanly(offline_server, logs, summary.run)


MID_STREAM = ("truncated-stream", "response-failed", "connection-reset", "garbage-data")


def action_item(arguments: Mapping[str, object] | None) -> ActionItem:
    assert arguments is not None
    due, lines = arguments.get("due"), arguments.get("lines")
    cited = tuple(n for n in lines if isinstance(n, int)) if isinstance(lines, list) else ()
    return ActionItem(
        str(arguments["owner"]), str(arguments["task"]), due if isinstance(due, str) else None, cited
    )


@pytest.mark.parametrize("scenario", MID_STREAM)
async def test_a_pipeline_stopped_mid_stream_keeps_the_calls_that_arrived_and_answers_none(
    offline_server: OfflineResponsesServer, logs: pytest.LogCaptureFixture, scenario: str
) -> None:
    transcript = (EXAMPLES / "standup-transcript.txt").read_text(encoding="utf-8")

    async with build_container(offline_server, f"offline:{scenario}") as container:
        with pytest.raises(ChatError) as caught:
            await bounded(container.summary_agent().summarize(transcript))

    error = caught.value
    assert error.partial is not None
    calls = error.partial.function_calls
    assert calls, "the calls streamed before the fault were dropped"
    # The fault may strike inside the last call (its arguments cut short); every call before it is whole.
    assert all(call.parse_error is None for call in calls[:-1])
    whole = [call for call in calls if call.parse_error is None]
    arrived = {action_item(call.arguments) for call in whole if call.name == "record_action_item"}
    assert arrived
    assert arrived < STANDUP_ACTION_ITEMS  # the first ones, intact
    # Calls of a failed response are not answered: no tool round, no follow-up request.
    assert isinstance(error, ToolRunError)
    assert error.run.messages == ()
    assert len(offline_server.requests) == 1
    await assert_ended_cleanly(offline_server, logs, error, error.partial)


def test_the_leak_scanner_finds_a_secret_wherever_a_record_carries_it() -> None:
    def record(msg: str, args: Sequence[object] = (), **extra: object) -> logging.LogRecord:
        made = logging.LogRecord("probe", logging.DEBUG, __file__, 1, msg, tuple(args), None)
        made.__dict__.update(extra)
        return made

    try:
        raise RuntimeError(f"boom {API_KEY}")
    except RuntimeError as exc:
        with_traceback = record("failed")
        with_traceback.exc_info = (type(exc), exc, exc.__traceback__)
    planted = [
        record(f"key {API_KEY}"),
        record("key %s", [API_KEY]),
        record("%d items", [3], headers={"authorization": f"Bearer {API_KEY}"}),
        with_traceback,
    ]
    clean = [record("key %s", ["[REDACTED]"]), record("%d items", [3], headers={"x-initiator": "user"})]

    assert leaking_records([*planted, *clean], API_KEY) == [
        f"probe: key {API_KEY}",
        "probe: key %s",
        "probe: %d items",
        "probe: failed",
    ]
