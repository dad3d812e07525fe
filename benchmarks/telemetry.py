"""What the OpenTelemetry instrumentation costs per request and per tool call, with and without the SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from opentelemetry import metrics, trace

from adapters.telemetry import InstrumentedChat, InstrumentedToolInvoker, Telemetry
from application import GuardedToolInvoker, ToolRegistry
from benchmarks.harness import Check, Sizes, interleaved
from benchmarks.workloads import recording_telemetry
from domain import (
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    TextContent,
    ToolInvokerPort,
    Usage,
    updates_of,
)

__all__ = ["telemetry_overhead"]

MODEL = "gpt-5.5"
MESSAGES = (ChatMessage.user("Summarize the meeting."),)


def _api_only() -> Telemetry:
    # What the global providers are until a host installs the SDK.
    return Telemetry(
        base_url="http://bench.invalid/v1",
        tracer_provider=trace.NoOpTracerProvider(),
        meter_provider=metrics.NoOpMeterProvider(),
    )


class _Canned:
    """A ChatPort that answers at once, so the instrumentation is all that is timed."""

    def __init__(self) -> None:
        self._response = ChatResponse(
            messages=(ChatMessage("assistant", (TextContent("Done."),)),),
            response_id="resp_bench",
            model_id=MODEL,
            status="completed",
            finish_reason="stop",
            usage=Usage(1200, 300, 1500),
        )

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return self._response

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


def _requests(chat: ChatPort, n: int) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        for _ in range(n):
            await chat.get_response(MESSAGES)

    return run


def _tool_calls(
    invoker: ToolInvokerPort, call: FunctionCallContent, n: int
) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        for _ in range(n):
            await invoker.invoke(call)

    return run


async def telemetry_overhead(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Per request and per tool call, with the SDK recording and with the API alone (no SDK installed)."""
    n = sizes.tool_calls
    canned = _Canned()
    registry = ToolRegistry()

    @registry.tool()
    def noop() -> dict[str, object]:
        """Do nothing."""
        return {}

    guard = GuardedToolInvoker(registry)
    call = FunctionCallContent.parse(call_id="call_1", name="noop", raw_arguments="{}")
    recording = recording_telemetry()
    variants: dict[str, Callable[[], Awaitable[object]]] = {
        "request_bare": _requests(canned, n),
        "tool_call_bare": _tool_calls(guard, call, n),
    }
    for name, telemetry in (("api_only", _api_only()), ("sdk", recording)):
        variants[f"request_{name}"] = _requests(InstrumentedChat(canned, telemetry, model=MODEL), n)
        variants[f"tool_call_{name}"] = _tool_calls(InstrumentedToolInvoker(guard, telemetry), call, n)
    micro = await interleaved(variants, runs=sizes.runs)
    per_call = {name: samples.median / n for name, samples in micro.items()}

    timings["telemetry"] = {name: samples.as_json() | {"calls_per_run": n} for name, samples in micro.items()}

    def cost(kind: str, variant: str) -> float:
        return per_call[f"{kind}_{variant}"] - per_call[f"{kind}_bare"]

    checks = []
    for kind, what in (("request", "request"), ("tool_call", "tool call")):
        sdk, api = cost(kind, "sdk"), cost(kind, "api_only")
        checks.append(
            Check(
                f"telemetry cost per {what}, SDK recording",
                sdk * 1e6,
                "us",
                "report",
                None,
                f"no SDK installed +{api * 1e6:.1f} us per {what} "
                f"(bare {per_call[f'{kind}_bare'] * 1e6:.1f} us); "
                "its share of a request is the workloads' telemetry on / off ratio",
            )
        )
    return checks
