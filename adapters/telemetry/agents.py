"""The agent pipelines' runs traced: an ``invoke_agent`` span per run, holding its chat and tool spans."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from typing import Final, TypeVar

from opentelemetry import context, trace
from opentelemetry.util.types import AttributeValue

from adapters.telemetry import conventions as c
from adapters.telemetry.instruments import Telemetry
from application import (
    RunEvent,
    RunFinished,
    ToolRun,
)
from application.meetings.summary import MEETING_SUMMARY
from application.runs.pipeline import Part
from application.workflows.editor import WORKFLOW_EDITOR

__all__ = ["MEETING_SUMMARY", "WORKFLOW_EDITOR", "AgentTracing"]

ResultT = TypeVar("ResultT")
# A run its caller stopped reading before it finished: not an error, but the span says why it is short.
ABANDONED_EVENT: Final = "run.abandoned"
# Where a long meeting's chunk sits in the whole file (the project's own attributes: GenAI has none).
CHUNK_INDEX: Final = "meeting_agents.chunk.index"
CHUNK_FIRST_LINE: Final = "meeting_agents.chunk.first_line"
CHUNK_LAST_LINE: Final = "meeting_agents.chunk.last_line"
# The agent whose run span is current: a run method that calls another of the same agent opens no second span.
_AGENT_KEY: Final = context.create_key("meeting-assistant-agents.agent-run")


class _AgentRun:
    """The span of one pipeline run; :meth:`finished` adds what the run produced."""

    __slots__ = ("span", "telemetry")

    def __init__(self, telemetry: Telemetry, span: trace.Span) -> None:
        self.telemetry = telemetry
        self.span = span

    def finished(self, run: ToolRun) -> None:
        final, text, span = run.final, self.telemetry.text, self.span
        if final.response_id is not None:
            span.set_attribute(c.GEN_AI_RESPONSE_ID, text(final.response_id))
        if final.model_id is not None:
            span.set_attribute(c.GEN_AI_RESPONSE_MODEL, text(final.model_id))
        if final.finish_reason is not None:
            span.set_attribute(c.GEN_AI_RESPONSE_FINISH_REASONS, (final.finish_reason,))
        usage = run.usage
        if usage is not None and usage.input_tokens is not None:
            span.set_attribute(c.GEN_AI_USAGE_INPUT_TOKENS, usage.input_tokens)
        if usage is not None and usage.output_tokens is not None:
            span.set_attribute(c.GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens)
        if usage is not None and usage.cost_usd is not None:
            span.set_attribute(c.GEN_AI_USAGE_COST, usage.cost_usd)
        if usage is not None:
            span.set_attributes(c.cache_attributes(usage))
        if run.stop_reason is not None:
            span.set_attribute(c.RUN_STOP_REASON, run.stop_reason)

    def failed(self, error: BaseException) -> None:
        error_type = type(error).__name__
        self.span.set_attribute(c.ERROR_TYPE, error_type)
        self.span.set_status(trace.StatusCode.ERROR, error_type)


class _NestedRun(_AgentRun):
    """Inside a run of the same agent: the outer run's span says it all, so nothing is added."""

    def __init__(self) -> None:
        pass

    def finished(self, run: ToolRun) -> None:
        return None


_NESTED: Final = _NestedRun()


class AgentTracing:
    """A pipeline's :class:`~application.runs.pipeline.RunHooks` that make each run an INTERNAL
    ``invoke_agent {agent}`` span, and each chunk of a long meeting a ``chunk L<first>-<last>`` span
    inside it: hand it as ``hooks=`` to a ``SummaryAgent`` or ``WorkflowEditorAgent`` (the container
    does when telemetry is on), with an instrumented chat and tool-invoker decorator for the run's chat
    and tool spans to appear inside. ``model`` is the model the runs ask for.

    A run's event stream is traced the same way: its span ends with the run, or when the caller stops
    reading (a ``run.abandoned`` event), and is current only while the run works, not while the caller
    handles an event. A run inside a run of the same pipeline opens no second span.
    """

    def __init__(self, telemetry: Telemetry, model: str) -> None:
        self._telemetry = telemetry
        self._model = model

    def _start_run(self, agent: str) -> tuple[_AgentRun, context.Context] | None:
        """The run's span and the context it is current in; None inside a run of these hooks already."""
        if context.get_value(_AGENT_KEY) is self:
            return None
        telemetry = self._telemetry
        attributes: dict[str, AttributeValue] = {
            c.GEN_AI_OPERATION_NAME: c.OPERATION_INVOKE_AGENT,
            c.GEN_AI_PROVIDER_NAME: c.PROVIDER_OPENAI,
            c.GEN_AI_AGENT_NAME: agent,
            c.GEN_AI_REQUEST_MODEL: telemetry.text(self._model),
            **telemetry.server_attributes(),
        }
        span = telemetry.tracer.start_span(
            f"{c.OPERATION_INVOKE_AGENT} {agent}", kind=trace.SpanKind.INTERNAL, attributes=attributes
        )
        current = context.set_value(_AGENT_KEY, self, trace.set_span_in_context(span))
        return _AgentRun(telemetry, span), current

    @contextmanager
    def run(self, agent: str) -> Iterator[Callable[[ToolRun], None]]:
        """The run's span, current for the block. An exception leaving the block marks the span
        (status ERROR, ``error.type`` its class name) and propagates unchanged."""
        started = self._start_run(agent)
        if started is None:
            yield _NESTED.finished
            return
        run, run_context = started
        token = context.attach(run_context)
        try:
            yield run.finished
        except BaseException as exc:
            run.failed(exc)
            raise
        finally:
            context.detach(token)
            run.span.end()

    async def events(
        self,
        agent: str,
        events: AsyncGenerator[RunEvent[ResultT], None],
        run_of: Callable[[ResultT], ToolRun],
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        """``events`` inside the run's span (see the class)."""
        started = self._start_run(agent)
        if started is None:
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
            return
        run, run_context = started
        try:
            while True:
                token = context.attach(run_context)
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                finally:
                    context.detach(token)
                if isinstance(event, RunFinished):
                    run.finished(run_of(event.result))
                yield event
        except GeneratorExit:
            run.span.add_event(ABANDONED_EVENT)
            raise
        except BaseException as exc:
            run.failed(exc)
            raise
        finally:
            # Closing the run inside its span: the chat stream it closes ends its own span under this one.
            token = context.attach(run_context)
            try:
                await events.aclose()
            finally:
                context.detach(token)
                run.span.end()

    @contextmanager
    def chunk(self, agent: str, chunk: Part) -> Iterator[Callable[[bool], None]]:
        """A long meeting's chunk as a span inside the run's, holding the chunk's chat and tool spans;
        a chunk that fails or ends incomplete marks it."""
        attributes: dict[str, AttributeValue] = {
            c.GEN_AI_AGENT_NAME: agent,
            CHUNK_INDEX: chunk.index,
            CHUNK_FIRST_LINE: chunk.first,
            CHUNK_LAST_LINE: chunk.last,
        }
        with self._telemetry.tracer.start_as_current_span(
            f"chunk L{chunk.first}-{chunk.last}",
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:

            def finished(complete: bool) -> None:
                if not complete:
                    span.set_attribute(c.ERROR_TYPE, "incomplete")

            try:
                yield finished
            except BaseException as exc:
                span.set_attribute(c.ERROR_TYPE, type(exc).__name__)
                span.set_status(trace.StatusCode.ERROR, type(exc).__name__)
                raise
