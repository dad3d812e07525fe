"""An OTLP/HTTP receiver on 127.0.0.1, for the collector recipes: it keeps what each exporter sends.

:class:`OtlpReceiver` answers every POST with 200 (an empty export response, which the exporters
accept) and keeps the raw protobuf bodies by path (``/v1/traces``, ``/v1/metrics``); :meth:`span_names`
decodes the traces sent so far. Use it as a context manager.
"""

from __future__ import annotations

import threading

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from adapters.offline.threaded import Receive, Scope, Send, ThreadedServer, read_request

__all__ = ["OtlpReceiver"]


class OtlpReceiver(ThreadedServer):
    """A collector's OTLP/HTTP port, as far as an exporter can tell."""

    def __init__(self) -> None:
        super().__init__(self._serve, name="otlp-receiver")
        self._lock = threading.Lock()
        self._bodies: list[tuple[str, str, bytes]] = []

    @property
    def endpoint(self) -> str:
        """What OTEL_EXPORTER_OTLP_ENDPOINT names: the exporters add ``/v1/traces`` and the like."""
        return self.origin

    def received(self, path: str) -> list[bytes]:
        with self._lock:
            return [body for at, _, body in self._bodies if at == path]

    def content_types(self) -> set[str]:
        with self._lock:
            return {content_type for _, content_type, _ in self._bodies}

    def span_names(self) -> list[str]:
        names: list[str] = []
        for body in self.received("/v1/traces"):
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            names += [
                span.name
                for spans in request.resource_spans
                for scope in spans.scope_spans
                for span in scope.spans
            ]
        return names

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await read_request(scope, receive)
        with self._lock:
            self._bodies.append((request.path, request.headers.get("content-type", ""), request.body))
        headers = [(b"content-type", b"application/x-protobuf")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
