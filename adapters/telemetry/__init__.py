"""OpenTelemetry for the agents: decorators tracing requests, tool calls and runs by the GenAI conventions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.telemetry.agents import MEETING_SUMMARY, WORKFLOW_EDITOR, AgentTracing
from adapters.telemetry.chat import (
    InstrumentedChat,
    annotate_request,
    instrument_chat,
    instrument_http_client,
)
from adapters.telemetry.instruments import Telemetry, server_of
from adapters.telemetry.tools import InstrumentedToolInvoker

if TYPE_CHECKING:
    from adapters.telemetry.console import SpanTreeRecorder

__all__ = [
    "MEETING_SUMMARY",
    "WORKFLOW_EDITOR",
    "AgentTracing",
    "InstrumentedChat",
    "InstrumentedToolInvoker",
    "Telemetry",
    "TracingUnavailableError",
    "annotate_request",
    "instrument_chat",
    "instrument_http_client",
    "server_of",
    "span_tree_recorder",
]

SDK_HINT = "pip install 'meeting-assistant-agents[cli]'"


class TracingUnavailableError(RuntimeError):
    """Showing spans needs the OpenTelemetry SDK (an optional dependency); the message says how to get it."""


def span_tree_recorder() -> SpanTreeRecorder:
    """A ``console.SpanTreeRecorder`` for ``--trace``; ``TracingUnavailableError`` without the SDK."""
    # The SDK is optional at run time, so the module that needs it is imported only when asked for.
    try:
        from adapters.telemetry.console import SpanTreeRecorder
    except ImportError:
        raise TracingUnavailableError(
            f"--trace needs the OpenTelemetry SDK, which is not installed: {SDK_HINT}"
        ) from None
    return SpanTreeRecorder()
