"""Load: 200 concurrent summary runs through one container against the offline endpoint, 5% of them
with an injected fault; each ends in a correct summary or a typed error, and connections drain."""

from __future__ import annotations

import asyncio
import collections
import logging

import pytest

from adapters.offline import OfflineResponsesServer
from application import MeetingSummary, ToolRunError
from domain import ChatError, ChatOptions, ChatTransportError, MalformedResponseError, ResponseFailedError
from tests.integration.offline.support import (
    API_KEY,
    DECISIONS,
    EXAMPLES,
    STANDUP_ACTION_ITEMS,
    build_container,
    connections_drained,
)
from tests.support.leaks import leaking_records

RUNS = 200
FAULT_EVERY = 20  # one run in twenty: 5%
FAULTS: dict[str, type[ChatError]] = {
    "http-500": ChatTransportError,
    "response-failed": ResponseFailedError,
    "truncated-stream": MalformedResponseError,
    "connection-reset": ChatTransportError,
    "garbage-data": MalformedResponseError,
}
# About 40 s on an idle 2-vCPU machine; the bound only stops a hung run from hanging the suite, so it
# leaves room for a machine loaded by other work (it ran out at 240 s beside an xdist worker at load 19).
DEADLINE_SECONDS = 600
# Every timer of the runs (the pool, connect and read waits, each request's deadline) is hang protection
# only, as long as the test's own: the runs queue for the pool's 100 connections on purpose, and the
# server shares this process's CPU. A timer that fired would not fail a run cleanly but change its
# outcome: a truncated-stream run whose last re-ask timed out waiting for a pooled connection ends in
# ChatTransportError (a timeout after the retries), which is what a caller must get when that happens
# (contract: the error types). With no timer able to fire first, each fault ends in its own error.
TIMEOUT_SECONDS = float(DEADLINE_SECONDS)


def scenario_of(run: int) -> str | None:
    """The fault injected into ``run``, cycling through every kind; None for a clean run."""
    if run % FAULT_EVERY != FAULT_EVERY // 2:
        return None
    kinds = list(FAULTS)
    return kinds[(run // FAULT_EVERY) % len(kinds)]


@pytest.mark.slow
async def test_200_concurrent_runs_with_5_percent_faults_end_in_a_result_or_a_typed_error(
    offline_server: OfflineResponsesServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    transcript = (EXAMPLES / "standup-transcript.txt").read_text(encoding="utf-8")
    plan = [scenario_of(run) for run in range(RUNS)]
    baseline = offline_server.open_connections
    # One container, one connection pool; each run picks its scenario through the model it asks for.
    container = build_container(offline_server, "offline", max_retries=2, timeout_seconds=TIMEOUT_SECONDS)
    try:
        async with asyncio.timeout(DEADLINE_SECONDS):
            outcomes = await asyncio.gather(
                *(
                    container.summary_agent(
                        options=ChatOptions(model=f"offline:{scenario}" if scenario else "offline")
                    ).summarize(transcript)
                    for scenario in plan
                ),
                return_exceptions=True,
            )
    finally:
        await container.aclose()

    unexpected = [repr(out) for out in outcomes if not isinstance(out, MeetingSummary | ChatError)]
    assert unexpected == []
    counts = collections.Counter(
        "result" if isinstance(outcome, MeetingSummary) else "typed error" for outcome in outcomes
    )
    faults = sum(scenario is not None for scenario in plan)
    assert faults == RUNS // FAULT_EVERY == 10
    assert counts == {"result": RUNS - faults, "typed error": faults}
    for scenario, outcome in zip(plan, outcomes, strict=True):
        if scenario is None:
            # Concurrent runs share the client but not their notes: each has exactly its own items.
            assert isinstance(outcome, MeetingSummary), repr(outcome)
            assert len(outcome.action_items) == 6
            assert set(outcome.action_items) == STANDUP_ACTION_ITEMS
            assert outcome.decisions == DECISIONS
        else:
            # A run raises its own copy of the adapter's error: its class and name, plus the run so far.
            assert isinstance(outcome, FAULTS[scenario]), f"{scenario}: {outcome!r}"
            assert type(outcome).__name__ == FAULTS[scenario].__name__
            assert isinstance(outcome, ChatError)
            assert isinstance(outcome, ToolRunError)
    # Each run starts with one user-initiated request. An http-500 run's is sent twice more (the SDK's
    # retries), and so is one whose body breaks in transit (the adapters'); a provider's failure or an
    # unreadable body is not asked for again.
    started = [request for request in offline_server.requests if request.headers["x-initiator"] == "user"]
    retried = ("http-500", "truncated-stream", "connection-reset")
    assert len(started) == RUNS + 2 * sum(plan.count(scenario) for scenario in retried)
    assert len({request.request_id for request in offline_server.requests}) == len(offline_server.requests)
    assert await connections_drained(offline_server, baseline, within=60.0), (
        f"{offline_server.open_connections} connections open, {baseline} before the load"
    )
    assert leaking_records(caplog.records, API_KEY) == []
    failures = [r for r in caplog.records if r.getMessage().startswith("Responses request failed")]
    assert len(failures) == faults
