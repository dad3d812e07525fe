"""The agent pipelines with telemetry: an ``invoke_agent`` span per run, holding its chat and tool spans."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from opentelemetry import context, trace
from opentelemetry.util.types import AttributeValue

from adapters.telemetry import conventions as c
from adapters.telemetry.instruments import Telemetry
from application import (
    Decisions,
    LoopSettings,
    MeetingSummary,
    RunEvent,
    RunFinished,
    RunState,
    SummaryAgent,
    ToolInvokerDecorator,
    ToolRun,
    Transcript,
    WorkflowEdit,
    WorkflowEditorAgent,
)
from application.budget import Ledger
from application.chunking import Chunk
from application.pipeline import ToolPipeline
from domain import ChatOptions, ChatPort, Workflow

__all__ = [
    "MEETING_SUMMARY",
    "WORKFLOW_EDITOR",
    "InstrumentedSummaryAgent",
    "InstrumentedWorkflowEditorAgent",
]

MEETING_SUMMARY: Final = "meeting_summary"
WORKFLOW_EDITOR: Final = "workflow_editor"
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


class _Traced(ToolPipeline):
    """What both instrumented pipelines share: the telemetry, the agent's name and its run spans."""

    _agent_name: str

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        *,
        telemetry: Telemetry,
        model: str,
        options: ChatOptions | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
        **pipeline: Any,
    ) -> None:
        super().__init__(chat, settings, options=options, decorators=decorators, **pipeline)
        self._telemetry = telemetry
        self._model = model

    def _start_run(self) -> tuple[_AgentRun, context.Context] | None:
        """An INTERNAL ``invoke_agent {name}`` span and the context it is current in; None inside a
        run of this agent already (a run method built on another opens no second span)."""
        if context.get_value(_AGENT_KEY) is self:
            return None
        telemetry = self._telemetry
        attributes: dict[str, AttributeValue] = {
            c.GEN_AI_OPERATION_NAME: c.OPERATION_INVOKE_AGENT,
            c.GEN_AI_PROVIDER_NAME: c.PROVIDER_OPENAI,
            c.GEN_AI_AGENT_NAME: self._agent_name,
            c.GEN_AI_REQUEST_MODEL: telemetry.text(self._model),
            **telemetry.server_attributes(),
        }
        span = telemetry.tracer.start_span(
            f"{c.OPERATION_INVOKE_AGENT} {self._agent_name}",
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        return _AgentRun(telemetry, span), context.set_value(
            _AGENT_KEY, self, trace.set_span_in_context(span)
        )

    @contextmanager
    def _agent_run(self) -> Iterator[_AgentRun]:
        """The run's span, current for the block. An exception leaving the block marks the span
        (status ERROR, ``error.type`` its class name) and propagates unchanged."""
        started = self._start_run()
        if started is None:
            yield _NESTED
            return
        run, run_context = started
        token = context.attach(run_context)
        try:
            yield run
        except BaseException as exc:
            run.failed(exc)
            raise
        finally:
            context.detach(token)
            run.span.end()

    async def _traced_events(
        self, events: AsyncGenerator[RunEvent[ResultT], None], run_of: Callable[[ResultT], ToolRun]
    ) -> AsyncGenerator[RunEvent[ResultT], None]:
        """``events`` inside the run's span, which is current only while the run itself is working
        (not while the caller handles an event); it ends with the run, or when the caller stops."""
        started = self._start_run()
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


class InstrumentedSummaryAgent(_Traced, SummaryAgent):
    """A :class:`SummaryAgent` whose every run is an ``invoke_agent meeting_summary`` span.

    Built like a ``SummaryAgent``, plus the ``telemetry`` and the ``model`` the runs ask for. Hand it
    an instrumented chat and tool-invoker decorator for the run's chat and tool spans to appear
    inside the agent span. ``summarize_events`` is traced the same way; its span ends with the run,
    or when the caller stops reading (a ``run.abandoned`` event), and is current only while the
    run works, not while the caller handles an event.
    """

    _agent_name = MEETING_SUMMARY

    async def summarize(self, transcript: str | Transcript) -> MeetingSummary:
        with self._agent_run() as run:
            summary = await super().summarize(transcript)
            run.finished(summary.run)
        return summary

    def summarize_events(
        self, transcript: str | Transcript
    ) -> AsyncGenerator[RunEvent[MeetingSummary], None]:
        return self._traced_events(super().summarize_events(transcript), _run_of_summary)

    async def _summarize_chunk(
        self, chunk: Chunk, participants: Sequence[str], ledger: Ledger
    ) -> MeetingSummary:
        """A long meeting's chunk as a ``chunk L<first>-<last>`` span inside the run's, holding the
        chunk's chat and tool spans; a chunk that fails or ends incomplete marks it."""
        attributes: dict[str, AttributeValue] = {
            c.GEN_AI_AGENT_NAME: self._agent_name,
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
            try:
                summary = await super()._summarize_chunk(chunk, participants, ledger)
            except BaseException as exc:
                span.set_attribute(c.ERROR_TYPE, type(exc).__name__)
                span.set_status(trace.StatusCode.ERROR, type(exc).__name__)
                raise
            if not summary.complete:
                span.set_attribute(c.ERROR_TYPE, "incomplete")
            return summary


class InstrumentedWorkflowEditorAgent(_Traced, WorkflowEditorAgent):
    """A :class:`WorkflowEditorAgent` whose every run is an ``invoke_agent workflow_editor`` span.

    Built like a ``WorkflowEditorAgent``, plus the ``telemetry`` and the ``model`` the runs ask for;
    ``edit_events`` is traced as :class:`InstrumentedSummaryAgent` traces ``summarize_events``.
    """

    _agent_name = WORKFLOW_EDITOR

    async def edit(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
        with self._agent_run() as run:
            edited = await super().edit(workflow, instruction)
            run.finished(edited.run)
        return edited

    def edit_events(
        self, workflow: Workflow, instruction: str
    ) -> AsyncGenerator[RunEvent[WorkflowEdit], None]:
        return self._traced_events(super().edit_events(workflow, instruction), _run_of_edit)

    async def resume(self, state: RunState, decisions: Decisions) -> WorkflowEdit:
        # A resumed edit is a run of its own: its span holds the calls decided and what follows.
        with self._agent_run() as run:
            edited = await super().resume(state, decisions)
            run.finished(edited.run)
        return edited

    def resume_events(
        self, state: RunState, decisions: Decisions
    ) -> AsyncGenerator[RunEvent[WorkflowEdit], None]:
        return self._traced_events(super().resume_events(state, decisions), _run_of_edit)


def _run_of_summary(summary: MeetingSummary) -> ToolRun:
    return summary.run


def _run_of_edit(edit: WorkflowEdit) -> ToolRun:
    return edit.run
