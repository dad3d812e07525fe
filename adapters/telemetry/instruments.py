"""The tracer, the histograms and the content policy every instrumented object of one container shares."""

from __future__ import annotations

import urllib.parse
from importlib.metadata import PackageNotFoundError, version
from typing import Final

from opentelemetry import metrics, trace
from opentelemetry.util.types import AttributeValue

from adapters.redaction import Redactor
from adapters.telemetry import conventions as c

__all__ = ["SCOPE", "Telemetry", "server_of"]

SCOPE: Final = "meeting-assistant-agents"
# Attribute text is bounded: a backend drops or truncates huge values anyway, and captured content
# (a whole transcript) must not make one span the size of the conversation many times over.
DEFAULT_CONTENT_LIMIT: Final = 64 * 1024
# Any other attribute text (ids, model names, server, tool names) comes from the gateway or the model
# too: a 5 MB response id must not become a 5 MB attribute on every span and metric point.
TEXT_LIMIT: Final = 1024
# Model names whose attribute text is kept once made (a gateway could name a new model every time).
_NAMES_KEPT: Final = 64


def _scope_version() -> str | None:
    try:
        return version(SCOPE)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return None


def server_of(base_url: str | None) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` for a base URL; the scheme's port when it names none."""
    if not base_url:
        return None, None
    try:
        parts = urllib.parse.urlsplit(base_url)
    except ValueError:  # an unbalanced IPv6 bracket: nothing reliable to report
        return None, None
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: the host alone is still worth reporting
        return parts.hostname, None
    host = parts.hostname
    if port is None and host is not None:
        port = {"http": 80, "https": 443}.get(parts.scheme)
    return host, port


class Telemetry:
    """What the decorators share: the tracer, the GenAI histograms, the server, the content policy.

    ``tracer_provider`` and ``meter_provider`` default to the global ones, which do nothing until the
    host installs the OpenTelemetry SDK. ``capture_content`` switches on the content attributes
    (messages, instructions, tool arguments and results); every text attribute, content or not,
    goes through ``redactor`` first, so the API key and header values never reach a span.
    """

    def __init__(
        self,
        *,
        capture_content: bool = False,
        redactor: Redactor | None = None,
        base_url: str | None = None,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        content_limit: int = DEFAULT_CONTENT_LIMIT,
    ) -> None:
        self.capture_content = capture_content
        self.redactor = redactor or Redactor.none()
        self.content_limit = content_limit
        self._names: dict[str, str] = {}
        self.server_address, self.server_port = server_of(base_url)
        scope_version = _scope_version()
        self.tracer = trace.get_tracer(SCOPE, scope_version, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, scope_version or "", meter_provider=meter_provider)
        self.operation_duration = meter.create_histogram(
            c.GEN_AI_CLIENT_OPERATION_DURATION,
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=c.DURATION_BUCKETS,
        )
        self.token_usage = meter.create_histogram(
            c.GEN_AI_CLIENT_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=c.TOKEN_BUCKETS,
        )
        self.cost = meter.create_counter(
            c.GEN_AI_CLIENT_COST,
            unit="USD",
            description="What the gateway billed for requests (its x-litellm-response-cost header).",
        )
        self.time_to_first_chunk = meter.create_histogram(
            c.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK,
            unit="s",
            description="Time from sending the request to the first chunk of a streamed response.",
            explicit_bucket_boundaries_advisory=c.DURATION_BUCKETS,
        )

    def __repr__(self) -> str:
        return (
            f"Telemetry(capture_content={self.capture_content!r}, server={self.server_address!r}:"
            f"{self.server_port!r})"
        )

    def text(self, value: object) -> str:
        """``value`` as attribute text: secrets cut, lone surrogates replaced, at most ``TEXT_LIMIT``
        characters (then ending in ``...``); the cut comes after the secrets are cut."""
        return self.redactor.redact(value, limit=TEXT_LIMIT)

    def content(self, value: str) -> str:
        """Captured content as attribute text: secrets cut and bounded in length."""
        return self.redactor.redact(value, limit=self.content_limit)

    def server_attributes(self) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {}
        if self.server_address is not None:
            attributes[c.SERVER_ADDRESS] = self.text(self.server_address)
        if self.server_port is not None:
            attributes[c.SERVER_PORT] = self.server_port
        return attributes

    def name(self, value: str) -> str:
        """A model's name as attribute text, as :meth:`text` makes it: the few names a container
        sees are made once each (every span and metric point names one), other values each time."""
        shown = self._names.get(value)
        if shown is None:
            shown = self.text(value)
            if len(self._names) < _NAMES_KEPT and len(value) <= TEXT_LIMIT:
                self._names[value] = shown
        return shown
