"""The CLI's ``--trace``: one run's spans kept in memory by the OpenTelemetry SDK and drawn as a tree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adapters.telemetry import conventions as c
from adapters.telemetry.chat import ATTEMPT_EVENT

__all__ = ["SpanTreeRecorder", "render_span_tree"]


class SpanTreeRecorder:
    """An SDK tracer provider that keeps every finished span of this process in memory.

    Hand ``tracer_provider`` to the instrumentation (the container's ``tracer_provider``), run, then
    :meth:`render`. Nothing leaves the process; ``meter_provider`` has no reader, so metrics are dropped.
    """

    def __init__(self) -> None:
        self._exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self._exporter))
        self.meter_provider = MeterProvider()

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self._exporter.get_finished_spans())

    def render(self) -> str:
        """The tree of every span recorded so far (empty when there is none)."""
        return render_span_tree(self.spans())

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def _duration(span: ReadableSpan) -> str:
    if span.start_time is None or span.end_time is None:
        return "unfinished"
    return _seconds((span.end_time - span.start_time) / 1e9)


def _seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    # Tool calls take microseconds: two decimals keep them from all reading 0.0.
    return f"{seconds * 1e3:.1f} ms" if seconds >= 0.01 else f"{seconds * 1e3:.2f} ms"


def _details(span: ReadableSpan) -> str:
    attributes: Mapping[str, Any] = span.attributes or {}
    details: list[str] = []
    tokens_in = attributes.get(c.GEN_AI_USAGE_INPUT_TOKENS)
    tokens_out = attributes.get(c.GEN_AI_USAGE_OUTPUT_TOKENS)
    if tokens_in is not None or tokens_out is not None:
        shown_in = "?" if tokens_in is None else tokens_in
        shown_out = "?" if tokens_out is None else tokens_out
        details.append(f"tokens {shown_in} in / {shown_out} out")
    first_chunk = attributes.get(c.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK)
    if isinstance(first_chunk, float):
        details.append(f"first update after {_seconds(first_chunk)}")
    attempts = [event.attributes or {} for event in span.events if event.name == ATTEMPT_EVENT]
    if len(attempts) > 1:
        outcomes = [
            str(attempt.get(c.HTTP_RESPONSE_STATUS_CODE, attempt.get(c.ERROR_TYPE, "?")))
            for attempt in attempts
        ]
        details.append(f"attempts {len(attempts)} ({', '.join(outcomes)})")
    error_type = attributes.get(c.ERROR_TYPE)
    if error_type is not None:
        details.append(f"error {error_type}")
    return "  ".join(details)


def render_span_tree(spans: Sequence[ReadableSpan]) -> str:
    """One line per span, children under their parent in start order: name, duration, tokens, error type.

    A span whose parent is not among ``spans`` (the host's own, or one still open) is drawn as a root.
    """
    known = {span.context.span_id for span in spans if span.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None and span.parent.span_id in known else None
        children.setdefault(parent, []).append(span)
    for siblings in children.values():
        siblings.sort(key=lambda span: span.start_time or 0)
    rows: list[tuple[str, str, str]] = []

    def walk(parent: int | None, indent: str, top: bool) -> None:
        siblings = children.get(parent, [])
        for index, span in enumerate(siblings):
            last = index == len(siblings) - 1
            branch = "" if top else ("└─ " if last else "├─ ")
            rows.append((f"{indent}{branch}{span.name}", _duration(span), _details(span)))
            if span.context is not None:
                walk(span.context.span_id, indent if top else indent + ("   " if last else "│  "), top=False)

    walk(None, "", top=True)
    width = max((len(label) for label, _, _ in rows), default=0)
    duration_width = max((len(duration) for _, duration, _ in rows), default=0)
    return "\n".join(
        f"{label.ljust(width)}  {duration.rjust(duration_width)}  {details}".rstrip()
        for label, duration, details in rows
    )
