"""The agent pipelines with telemetry: an ``invoke_agent`` span per run, holding its chat and tool spans."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from opentelemetry import context, trace
from opentelemetry.util.types import AttributeValue

from adapters.telemetry import conventions as c
from adapters.telemetry.instruments import Telemetry
from application import (
    LoopSettings,
    MeetingSummary,
    SummaryAgent,
    ToolInvokerDecorator,
    ToolRun,
    WorkflowEdit,
    WorkflowEditorAgent,
)
from domain import ChatOptions, ChatPort, Workflow

__all__ = [
    "MEETING_SUMMARY",
    "WORKFLOW_EDITOR",
    "InstrumentedSummaryAgent",
    "InstrumentedWorkflowEditorAgent",
]

MEETING_SUMMARY: Final = "meeting_summary"
WORKFLOW_EDITOR: Final = "workflow_editor"
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


class _Traced:
    """What both instrumented pipelines share: the telemetry, the agent's name and its run spans."""

    _agent_name: str

    def _init_telemetry(self, telemetry: Telemetry, model: str) -> None:
        self._telemetry = telemetry
        self._model = model

    @contextmanager
    def _agent_run(self) -> Iterator[_AgentRun | None]:
        """An INTERNAL ``invoke_agent {name}`` span, current for the block; None inside a run of this agent.

        An exception leaving the block marks the span (status ERROR, ``error.type`` its class name)
        and propagates unchanged.
        """
        if context.get_value(_AGENT_KEY) is self:
            yield None
            return
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
        token = context.attach(context.set_value(_AGENT_KEY, self, trace.set_span_in_context(span)))
        try:
            yield _AgentRun(telemetry, span)
        except BaseException as exc:
            error_type = type(exc).__name__
            span.set_attribute(c.ERROR_TYPE, error_type)
            span.set_status(trace.StatusCode.ERROR, error_type)
            raise
        finally:
            context.detach(token)
            span.end()


class InstrumentedSummaryAgent(_Traced, SummaryAgent):
    """A :class:`SummaryAgent` whose every run is an ``invoke_agent meeting_summary`` span.

    Built like a ``SummaryAgent``, plus the ``telemetry`` and the ``model`` the runs ask for. Hand it
    an instrumented chat and tool-invoker decorator for the run's chat and tool spans to appear
    inside the agent span.
    """

    _agent_name = MEETING_SUMMARY

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        *,
        telemetry: Telemetry,
        model: str,
        options: ChatOptions | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
    ) -> None:
        super().__init__(chat, settings, options=options, decorators=decorators)
        self._init_telemetry(telemetry, model)

    async def summarize(self, transcript: str) -> MeetingSummary:
        with self._agent_run() as run:
            summary = await super().summarize(transcript)
            if run is not None:
                run.finished(summary.run)
        return summary


class InstrumentedWorkflowEditorAgent(_Traced, WorkflowEditorAgent):
    """A :class:`WorkflowEditorAgent` whose every run is an ``invoke_agent workflow_editor`` span.

    Built like a ``WorkflowEditorAgent``, plus the ``telemetry`` and the ``model`` the runs ask for.
    """

    _agent_name = WORKFLOW_EDITOR

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        *,
        telemetry: Telemetry,
        model: str,
        options: ChatOptions | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
    ) -> None:
        super().__init__(chat, settings, options=options, decorators=decorators)
        self._init_telemetry(telemetry, model)

    async def edit(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
        with self._agent_run() as run:
            edited = await super().edit(workflow, instruction)
            if run is not None:
                run.finished(edited.run)
        return edited
