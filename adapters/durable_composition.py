"""The durable runtime composed beside the container: DBOS launched over a container whose chains hold the
durable decorators (the durable extra). A batch, a worker and a host's durable edits all run on it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import attrs
from dependency_injector import providers

from adapters.container import Container
from adapters.durable import DurableChat, DurableToolInvoker, Engine, EngineSettings, Runtime, requester
from adapters.redaction import Redactor
from adapters.rendering import describe_failure, summary_json, usage_json
from adapters.settings import Settings

__all__ = ["durable_engine", "durable_settings"]


@contextlib.asynccontextmanager
async def durable_engine(
    settings: Settings,
    database_url: str,
    executor_id: str,
    announce: Callable[[str], None] | None = None,
) -> AsyncIterator[Engine]:
    """A container built on ``settings`` with each model request and tool call a DBOS step, and DBOS
    launched over it in this event loop on ``database_url`` as ``executor_id``; shut down on exit.

    ``database_url`` as :func:`adapters.durable.check_database_url` returns it. Raises
    :class:`adapters.durable.DatabaseError` when the database cannot be used. ``announce`` hears of
    each meeting this process takes and finishes, by its id (:attr:`Runtime.announce`). The run takes
    ``settings`` as :func:`durable_settings` gives them."""
    settings = durable_settings(settings)
    container = Container()
    container.settings.override(providers.Object(settings))
    extra = container.responses_settings().extra_headers.values()
    redactor = Redactor([*settings.agent.secrets(), *extra])
    engine_settings = EngineSettings(
        database_url=database_url,
        executor_id=executor_id,
        concurrency=settings.agent.batch_concurrency,
        requests_per_minute=settings.agent.batch_requests_per_minute,
        traced=settings.agent.telemetry,
        recovery_seconds=settings.agent.batch_recovery_seconds,
    )
    through = requester(engine_settings)
    container.chat_decorators.add_args(providers.Object(lambda chat: DurableChat(chat, redactor, through)))
    container.tool_invoker_decorators.add_args(
        providers.Object(DurableToolInvoker.decorator(redactor, rebuild=True))
    )
    runtime = Runtime(
        summary_agent=container.summary_agent,
        chat=container.chat_adapter(),
        render=summary_json,
        describe=lambda error: describe_failure(error, settings.agent),
        redactor=redactor,
        spending=lambda run: usage_json(run.usage, len(run.responses)),
        workflow_editor=container.workflow_editor_agent,
        announce=announce,
    )
    async with container:
        engine = await Engine.launch(engine_settings, runtime)
        try:
            yield engine
        finally:
            engine.shutdown()


def durable_settings(settings: Settings) -> Settings:
    """``settings`` as a durable run takes them: a workflow's steps must come in the same order when it is
    recovered, so a long meeting's chunks are summarized one after another (run concurrently, their requests
    would interleave differently), and so are an answer's tool calls: each call's step first reads the
    database in a thread, so calls run concurrently would reach the tools in whatever order those reads
    end, and the items they record (and the counts their results tell the model) would differ from one
    run, or recovery, to the next."""
    agent = attrs.evolve(settings.agent, chunk_concurrency=1, concurrent_tool_calls=False)
    return attrs.evolve(settings, agent=agent)
