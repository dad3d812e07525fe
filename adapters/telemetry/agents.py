"""Agent pipeline decorators: one ``invoke_agent`` span per run, holding the run's chat and tool spans."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from opentelemetry import context, trace
from opentelemetry.util.types import AttributeValue

from adapters.telemetry import conventions as c
from adapters.telemetry.instruments import Telemetry
from application import LoopSettings, MeetingSummary, SummaryAgent, WorkflowEdit, WorkflowEditorAgent
from domain import ChatResponse, Usage, Workflow

__all__ = [
    "MEETING_SUMMARY",
    "WORKFLOW_EDITOR",
    "AgentRunSpan",
    "InstrumentedSummaryAgent",
    "InstrumentedWorkflowEditorAgent",
]

MEETING_SUMMARY: Final = "meeting_summary"
WORKFLOW_EDITOR: Final = "workflow_editor"


class AgentRunSpan:
    """The span of one pipeline run; ``finished`` adds what the run produced (ids, summed usage)."""

    __slots__ = ("span", "telemetry")

    def __init__(self, telemetry: Telemetry, span: trace.Span) -> None:
        self.telemetry = telemetry
        self.span = span

    def finished(self, run: ChatResponse) -> None:
        text = self.telemetry.text
        if run.response_id is not None:
            self.span.set_attribute(c.GEN_AI_RESPONSE_ID, text(run.response_id))
        if run.model_id is not None:
            self.span.set_attribute(c.GEN_AI_RESPONSE_MODEL, text(run.model_id))
        if run.finish_reason is not None:
            self.span.set_attribute(c.GEN_AI_RESPONSE_FINISH_REASONS, (run.finish_reason,))
        _set_usage(self.span, run.usage)


def _set_usage(span: trace.Span, usage: Usage | None) -> None:
    if usage is None:
        return
    if usage.input_tokens is not None:
        span.set_attribute(c.GEN_AI_USAGE_INPUT_TOKENS, usage.input_tokens)
    if usage.output_tokens is not None:
        span.set_attribute(c.GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens)


@contextmanager
def agent_run(telemetry: Telemetry, agent_name: str, model: str) -> Iterator[AgentRunSpan]:
    """An INTERNAL ``invoke_agent {agent_name}`` span, current for the duration of the block.

    An exception leaving the block marks the span (status ERROR, ``error.type`` its class name)
    and propagates unchanged.
    """
    attributes: dict[str, AttributeValue] = {
        c.GEN_AI_OPERATION_NAME: c.OPERATION_INVOKE_AGENT,
        c.GEN_AI_PROVIDER_NAME: c.PROVIDER_OPENAI,
        c.GEN_AI_AGENT_NAME: agent_name,
        c.GEN_AI_REQUEST_MODEL: telemetry.text(model),
        **telemetry.server_attributes(),
    }
    span = telemetry.tracer.start_span(
        f"{c.OPERATION_INVOKE_AGENT} {agent_name}", kind=trace.SpanKind.INTERNAL, attributes=attributes
    )
    token = context.attach(trace.set_span_in_context(span))
    try:
        yield AgentRunSpan(telemetry, span)
    except BaseException as exc:
        error_type = type(exc).__name__
        span.set_attribute(c.ERROR_TYPE, error_type)
        span.set_status(trace.StatusCode.ERROR, error_type)
        raise
    finally:
        context.detach(token)
        span.end()


class InstrumentedSummaryAgent:
    """A :class:`SummaryAgent` whose every run is an ``invoke_agent meeting_summary`` span."""

    def __init__(self, inner: SummaryAgent, telemetry: Telemetry, *, model: str) -> None:
        self._inner = inner
        self._telemetry = telemetry
        self._model = model

    def __repr__(self) -> str:
        return f"InstrumentedSummaryAgent({self._inner!r})"

    @property
    def inner(self) -> SummaryAgent:
        return self._inner

    @property
    def settings(self) -> LoopSettings:
        return self._inner.settings

    async def summarize(self, transcript: str) -> MeetingSummary:
        """:meth:`SummaryAgent.summarize`, traced."""
        with agent_run(self._telemetry, MEETING_SUMMARY, self._model) as run:
            summary = await self._inner.summarize(transcript)
            run.finished(summary.run)
        return summary


class InstrumentedWorkflowEditorAgent:
    """A :class:`WorkflowEditorAgent` whose every run is an ``invoke_agent workflow_editor`` span."""

    def __init__(self, inner: WorkflowEditorAgent, telemetry: Telemetry, *, model: str) -> None:
        self._inner = inner
        self._telemetry = telemetry
        self._model = model

    def __repr__(self) -> str:
        return f"InstrumentedWorkflowEditorAgent({self._inner!r})"

    @property
    def inner(self) -> WorkflowEditorAgent:
        return self._inner

    @property
    def settings(self) -> LoopSettings:
        return self._inner.settings

    async def edit(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
        """:meth:`WorkflowEditorAgent.edit`, traced."""
        with agent_run(self._telemetry, WORKFLOW_EDITOR, self._model) as run:
            edit = await self._inner.edit(workflow, instruction)
            run.finished(edit.run)
        return edit
