"""The settings a durable run takes: its steps in one order, whatever the host's settings say."""

from __future__ import annotations

import attrs

from adapters.durable_composition import durable_settings
from adapters.settings import resolve_settings


def test_a_durable_run_takes_chunks_and_tool_calls_one_after_another_and_keeps_the_rest() -> None:
    host = resolve_settings(environ={"AGENT_CHUNK_CONCURRENCY": "4", "AGENT_CONCURRENT_TOOL_CALLS": "true"})
    assert (host.agent.chunk_concurrency, host.agent.concurrent_tool_calls) == (4, True)
    durable = durable_settings(host)
    assert (durable.agent.chunk_concurrency, durable.agent.concurrent_tool_calls) == (1, False)
    # Nothing else changes: what the meeting key and the run read is the host's.
    unchanged = attrs.evolve(durable.agent, chunk_concurrency=4, concurrent_tool_calls=True)
    assert attrs.evolve(durable, agent=unchanged) == host
