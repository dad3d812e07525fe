"""A ToolInvokerPort decorator: one ``execute_tool`` span per call, error results marked with their code."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from opentelemetry import context, trace
from opentelemetry.util.types import AttributeValue

from adapters.telemetry import conventions as c
from adapters.telemetry.content import tool_result
from adapters.telemetry.instruments import Telemetry
from domain import FunctionCallContent, FunctionResultContent, JsonValue, ToolInvokerPort

__all__ = ["InstrumentedToolInvoker", "error_code", "record_answered_outside"]


def error_code(result: JsonValue) -> str:
    """The stable code of an error result (``{"error": code, ...}``), or the conventions' ``_OTHER``."""
    if isinstance(result, Mapping):
        code = result.get("error")
        if isinstance(code, str) and code:
            return code
    return c.ERROR_TYPE_OTHER


class InstrumentedToolInvoker:
    """A ``ToolInvokerPort`` that traces each call of ``inner`` as an INTERNAL ``execute_tool {tool}`` span.

    Placed outside the guard, it sees the guard's refusals too: a result with ``is_error`` sets status
    ERROR and ``error.type`` to the result's code (``invalid_tool_arguments``, ``unknown_tool``,
    ``tool_failed``, ...). A call the loop answers itself never reaches it: a repeated call id
    (``duplicate_call_id``) and a call a budget or deadline stop leaves unrun (``budget_exceeded``);
    the loop tells it of each (:meth:`answered_by_loop`, ``application.AnsweredByLoop``) and it gives
    each the same span, in the run's context, however the loop is used (a pipeline, ``tool_loop()``,
    a bare ``ToolLoop``). The arguments and the result are recorded only when content capture is on.
    """

    def __init__(self, inner: ToolInvokerPort, telemetry: Telemetry) -> None:
        self._inner = inner
        self._telemetry = telemetry

    def __repr__(self) -> str:
        return f"InstrumentedToolInvoker({self._inner!r})"

    @classmethod
    def decorator(cls, telemetry: Telemetry) -> Callable[[ToolInvokerPort], ToolInvokerPort]:
        """The decorator to add to a tool-invoker chain (``ToolLoop(decorators=...)``, the container's)."""

        def decorate(inner: ToolInvokerPort) -> ToolInvokerPort:
            return cls(inner, telemetry)

        return decorate

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        telemetry = self._telemetry
        span, capture = _start_tool_span(telemetry, call)
        token = context.attach(trace.set_span_in_context(span))
        try:
            result = await self._inner.invoke(call)
        except BaseException as exc:
            self._failed(span, type(exc).__name__)
            raise
        finally:
            context.detach(token)
        _end_tool_span(telemetry, span, result, capture=capture)
        return result

    def answered_by_loop(self, call: FunctionCallContent, result: FunctionResultContent) -> None:
        """The tool span of a call the loop answered without the chain, in the current context."""
        record_answered_outside(self._telemetry, call, result)

    @staticmethod
    def _failed(span: trace.Span, error_type: str) -> None:
        _failed(span, error_type)


def record_answered_outside(
    telemetry: Telemetry,
    call: FunctionCallContent,
    result: FunctionResultContent,
    parent: context.Context | None = None,
) -> None:
    """The ``execute_tool {tool}`` span of a call the loop answered without the tool-invoker chain (a
    repeated call id, or a call a budget or deadline stop left unrun): the span a call through
    :class:`InstrumentedToolInvoker` has, with ``error.type`` the result's code, inside ``parent``
    (the current context when None)."""
    span, capture = _start_tool_span(telemetry, call, parent)
    _end_tool_span(telemetry, span, result, capture=capture)


def _start_tool_span(
    telemetry: Telemetry, call: FunctionCallContent, parent: context.Context | None = None
) -> tuple[trace.Span, bool]:
    """The call's INTERNAL ``execute_tool`` span (its arguments recorded when capture is on), and
    whether capture is on for it."""
    name = telemetry.text(call.name)
    attributes: dict[str, AttributeValue] = {
        c.GEN_AI_OPERATION_NAME: c.OPERATION_EXECUTE_TOOL,
        c.GEN_AI_TOOL_NAME: name,
        c.GEN_AI_TOOL_CALL_ID: telemetry.text(call.call_id),
        c.GEN_AI_TOOL_TYPE: c.TOOL_TYPE_FUNCTION,
    }
    span = telemetry.tracer.start_span(
        f"{c.OPERATION_EXECUTE_TOOL} {name}",
        context=parent,
        kind=trace.SpanKind.INTERNAL,
        attributes=attributes,
    )
    capture = telemetry.capture_content and span.is_recording()
    if capture:
        span.set_attribute(c.GEN_AI_TOOL_CALL_ARGUMENTS, telemetry.content(call.raw_arguments))
    return span, capture


def _end_tool_span(
    telemetry: Telemetry, span: trace.Span, result: FunctionResultContent, *, capture: bool
) -> None:
    if capture:
        span.set_attribute(c.GEN_AI_TOOL_CALL_RESULT, telemetry.content(tool_result(result.result)))
    if result.is_error:
        _failed(span, telemetry.text(error_code(result.result)))
    else:
        span.end()


def _failed(span: trace.Span, error_type: str) -> None:
    span.set_attribute(c.ERROR_TYPE, error_type)
    span.set_status(trace.StatusCode.ERROR, error_type)
    span.end()
