"""What the OpenTelemetry instrumentation costs per request and per tool call, with and without the SDK."""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from adapters.telemetry import InstrumentedChat, InstrumentedToolInvoker, Telemetry
from application import GuardedToolInvoker, ToolRegistry
from benchmarks.bodies import make_body
from benchmarks.harness import Check, Samples, Sizes, interleaved, serve
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
OVERHEAD_LIMIT = 0.05


class _Discarding(SpanExporter):
    """An exporter that accepts every span and keeps none: the SDK's own work, without any I/O."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _with_sdk() -> Telemetry:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(_Discarding()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(
        base_url="http://bench.invalid/v1", tracer_provider=tracer_provider, meter_provider=meter_provider
    )


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


def _streams(chat: ChatPort) -> Callable[[], Awaitable[object]]:
    async def run() -> None:
        async for _ in chat.get_streaming_response(MESSAGES):
            pass

    return run


def _noise(samples: Samples) -> float:
    """The spread of one variant's runs relative to their median: what two equal variants can differ by."""
    return (max(samples.seconds) - min(samples.seconds)) / statistics.median(samples.seconds)


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
    recording = _with_sdk()
    variants: dict[str, Callable[[], Awaitable[object]]] = {
        "request_bare": _requests(canned, n),
        "tool_call_bare": _tool_calls(guard, call, n),
    }
    for name, telemetry in (("api_only", _api_only()), ("sdk", recording)):
        variants[f"request_{name}"] = _requests(InstrumentedChat(canned, telemetry, model=MODEL), n)
        variants[f"tool_call_{name}"] = _tool_calls(InstrumentedToolInvoker(guard, telemetry), call, n)
    micro = await interleaved(variants, runs=sizes.runs)
    per_call = {name: samples.median / n for name, samples in micro.items()}

    # The reference: folding a stream of about 5k events, plain and instrumented, side by side.
    body = make_body(sizes.scaling[0])
    client, _ = serve(body.sse, "text/event-stream")
    adapter = ResponsesSseAdapter(client, ResponsesSettings(model=MODEL))
    # The pipelines' run events read the same body as updates, one per event: the per-update path.
    folds = await interleaved(
        {
            "fold_plain": _requests(adapter, 1),
            "fold_api_only": _requests(InstrumentedChat(adapter, _api_only(), model=MODEL), 1),
            "fold_sdk": _requests(InstrumentedChat(adapter, recording, model=MODEL), 1),
            "stream_plain": _streams(adapter),
            "stream_api_only": _streams(InstrumentedChat(adapter, _api_only(), model=MODEL)),
            "stream_sdk": _streams(InstrumentedChat(adapter, recording, model=MODEL)),
        },
        runs=sizes.runs,
    )
    fold = folds["fold_plain"].median
    timings["telemetry"] = {
        **{name: samples.as_json() | {"calls_per_run": n} for name, samples in micro.items()},
        **{name: samples.as_json() | {"events": body.events} for name, samples in folds.items()},
    }

    def cost(kind: str, variant: str) -> float:
        return per_call[f"{kind}_{variant}"] - per_call[f"{kind}_bare"]

    checks = []
    for kind, what in (("request", "request"), ("tool_call", "tool call")):
        sdk, api = cost(kind, "sdk"), cost(kind, "api_only")
        checks.append(
            Check(
                f"telemetry per {what}, SDK recording / fold of a {body.events}-event stream",
                sdk / fold * 100,
                "%",
                f"< {OVERHEAD_LIMIT:.0%}",
                sdk / fold < OVERHEAD_LIMIT,
                f"SDK +{sdk * 1e6:.1f} us, no SDK +{api * 1e6:.1f} us per {what} "
                f"(bare {per_call[f'{kind}_bare'] * 1e6:.1f} us); fold {fold * 1e3:.1f} ms CPU",
            )
        )
    for path, what in (
        ("fold", "SSE fold (get_response)"),
        ("stream", "SSE stream (get_streaming_response)"),
    ):
        plain = folds[f"{path}_plain"]
        noise = _noise(plain)
        for variant, label in (("api_only", "no SDK"), ("sdk", "SDK recording")):
            ratio = folds[f"{path}_{variant}"].median / plain.median
            checks.append(
                Check(
                    f"instrumented / plain {what}, {label}, {body.events} events",
                    ratio,
                    "ratio",
                    f"within noise (+-{noise:.1%})",
                    abs(ratio - 1) <= noise,
                    f"{folds[f'{path}_{variant}'].median * 1e3:.1f} vs {plain.median * 1e3:.1f} ms CPU; "
                    "noise: the spread of the plain runs",
                )
            )
    return checks
