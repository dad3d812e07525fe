"""``python -m tests.integration.durable.traced ARGS...``: the command, in a host that traces.

As a host would, it installs a global OpenTelemetry tracer provider before the command starts; every
span ended is written at once to the file ``TRACES_FILE`` names, one JSON object a line (its name,
scope, ids, parent and attributes), so a test reads them after the process exits.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Sequence
from typing import IO

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class _JsonLinesExporter(SpanExporter):
    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            for span in spans:
                context = span.get_span_context()
                assert context is not None
                line = {
                    "name": span.name,
                    "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
                    "trace_id": f"{context.trace_id:032x}",
                    "span_id": f"{context.span_id:016x}",
                    "parent_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
                    "attributes": {key: str(value) for key, value in (span.attributes or {}).items()},
                    "events": [
                        {"name": event.name, "attributes": {k: str(v) for k, v in event.attributes.items()}}
                        for event in span.events
                        if event.attributes is not None
                    ],
                    "status": span.status.description,
                }
                self._file.write(json.dumps(line) + "\n")
            self._file.flush()
        return SpanExportResult.SUCCESS


def main() -> int:
    from adapters.cli import main as command

    with open(os.environ["TRACES_FILE"], "a", encoding="utf-8") as file:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_JsonLinesExporter(file)))
        trace.set_tracer_provider(provider)
        try:
            return command(sys.argv[1:])
        finally:
            provider.shutdown()


if __name__ == "__main__":
    sys.exit(main())
