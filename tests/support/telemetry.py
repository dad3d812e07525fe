"""OpenTelemetry in memory for the telemetry tests, and the instrumented objects they trace.

- :class:`Otel`: an SDK tracer and meter provider of one test, keeping every span and data point in
  memory; hand ``otel.telemetry(...)`` to the decorators (or its providers to a container), so no global
  provider is touched. Use it as a context manager (or through an ``otel`` fixture) so it is shut down.
- :func:`attributes_of`: a span's attributes as a plain dict (an empty one when it has none).
- :func:`every_text`: every string a backend would receive from it, for "no secret reaches telemetry".
- :func:`traced_summary_agent`: a summary agent with its chat and its tools instrumented, the run span
  over them, as the container builds it when telemetry is on.
- :func:`real_adapter`: a real Responses adapter over a :class:`Recorder` whose HTTP client reports each
  attempt to the chat span. For everything else about the wire, use :mod:`tests.support.gateway`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self

import attrs
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from adapters.redaction import Redactor
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from adapters.telemetry import (
    AgentTracing,
    InstrumentedToolInvoker,
    Telemetry,
    instrument_chat,
    instrument_http_client,
)
from application import LoopSettings, SummaryAgent
from domain import ChatPort
from tests.support.gateway import Adapter, Recorder, mocked, sdk_over

__all__ = [
    "MODEL",
    "TRANSCRIPT",
    "Otel",
    "attributes_of",
    "every_text",
    "real_adapter",
    "traced_summary_agent",
]

MODEL: Final = "gpt-test"
TRANSCRIPT: Final = "Ana: I will send the report by Friday.\nBen: We ship on Monday."


@attrs.define
class Otel:
    """Providers of one test, passed to the decorators explicitly, so no global provider is touched."""

    exporter: InMemorySpanExporter = attrs.field(factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = attrs.field(factory=InMemoryMetricReader)
    tracer_provider: TracerProvider = attrs.field(init=False)
    meter_provider: MeterProvider = attrs.field(init=False)
    _points: dict[str, list[HistogramDataPoint]] | None = attrs.field(init=False, default=None)
    _sums: dict[str, list[NumberDataPoint]] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    def telemetry(
        self, *, capture_content: bool = False, redactor: Redactor | None = None, base_url: str | None = None
    ) -> Telemetry:
        return Telemetry(
            capture_content=capture_content,
            redactor=redactor,
            base_url=base_url,
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
        )

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if (span.name or "").startswith(prefix)]

    def _collected(self) -> dict[str, list[HistogramDataPoint]]:
        # A reader hands out each data point once, so the first look collects them all for the test.
        if self._points is None:
            self._points = {}
            data = self.reader.get_metrics_data()
            for resource in data.resource_metrics if data is not None else ():
                for scope in resource.scope_metrics:
                    for found in scope.metrics:
                        points = self._points.setdefault(found.name, [])
                        points.extend(p for p in found.data.data_points if isinstance(p, HistogramDataPoint))
                        sums = self._sums.setdefault(found.name, [])
                        sums.extend(p for p in found.data.data_points if isinstance(p, NumberDataPoint))
        return self._points

    def points(self, metric: str) -> list[HistogramDataPoint]:
        """Every histogram data point recorded under ``metric``."""
        return self._collected().get(metric, [])

    def sums(self, metric: str) -> list[NumberDataPoint]:
        """Every counter data point recorded under ``metric``."""
        self._collected()
        return self._sums.get(metric, [])

    def metric_names(self) -> set[str]:
        """The metrics that recorded at least one data point."""
        return {name for name, points in self._collected().items() if points}

    def all_points(self) -> list[HistogramDataPoint]:
        return [point for points in self._collected().values() for point in points]

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


def attributes_of(span: ReadableSpan) -> dict[str, Any]:
    """The span's attributes as a plain dict (an empty one when it has none)."""
    return dict(span.attributes or {})


def every_text(otel: Otel) -> Iterator[str]:
    """Every string a backend would receive: span names, status texts, attribute and event values."""

    def values(attributes: Mapping[str, Any] | None) -> Iterator[str]:
        for key, value in (attributes or {}).items():
            yield key
            items: Sequence[Any] = value if isinstance(value, tuple | list) else (value,)
            yield from (str(item) for item in items)

    for span in otel.spans():
        yield span.name
        yield span.status.description or ""
        yield from values(span.attributes)
        for event in span.events:
            yield event.name
            yield from values(event.attributes)
    for point in otel.all_points():
        yield from values(point.attributes)


def traced_summary_agent(
    chat: ChatPort, telemetry: Telemetry, settings: LoopSettings | None = None, *, model: str = MODEL
) -> SummaryAgent:
    """A summary agent over ``chat`` with its chat and tool spans inside its run spans."""
    return SummaryAgent(
        instrument_chat(chat, telemetry, model=model),
        settings,
        decorators=(InstrumentedToolInvoker.decorator(telemetry),),
        hooks=AgentTracing(telemetry, model),
    )


def real_adapter(recorder: Recorder, *, streaming: bool, max_retries: int = 0) -> Adapter:
    """A real Responses adapter over ``recorder``, its HTTP client reporting attempts to the chat spans."""
    client = sdk_over(instrument_http_client(mocked(recorder)), max_retries=max_retries)
    settings = ResponsesSettings(model=MODEL)
    return ResponsesSseAdapter(client, settings) if streaming else ResponsesJsonAdapter(client, settings)
