"""Every workload side by side with the SDK's own floor on the same request body and the same answer.

Each workload times the adapters against what a caller of the bare SDK would run for the same work:
iterating ``responses.create(stream=True)`` (or calling ``responses.create()`` and parsing the call
arguments, for a JSON body), sending the very same request body the adapter builds. The figures are
ratios of CPU-time medians over interleaved runs; the spread is the range of the run-by-run ratios.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

import attrs
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from adapters.responses.event_types import STREAM_EVENT
from adapters.responses.payload import ResponsesPayloadBuilder
from adapters.telemetry import InstrumentedChat, Telemetry, instrument_http_client
from benchmarks.bodies import TEXT_KINDS, Body, make_body, make_calls_body, tool_loop_round
from benchmarks.harness import (
    Check,
    Samples,
    Sizes,
    WrongOutputError,
    interleaved,
    paired_ratios,
    peak_bytes,
    serve,
    spread,
)
from domain import ChatMessage, ChatOptions, ChatPort, ChatResponse, ChatResponseUpdate

__all__ = [
    "FLOOR_LIMIT",
    "PROMPT",
    "Scenario",
    "floor_read",
    "memory_ratios",
    "raw_create",
    "raw_iteration",
    "raw_keeping_text",
    "recording_telemetry",
    "streamed",
    "whole",
    "workloads",
]

MODEL: Final = "gpt-5.5"
PROMPT: Final = (ChatMessage.user("Summarize the meeting."),)
_SSE: Final = "text/event-stream"
_JSON: Final = "application/json"
Run = Callable[[], Awaitable[object]]


class _Discarding(SpanExporter):
    """Accepts every span and keeps none: the OpenTelemetry SDK's own work, without any I/O."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def recording_telemetry() -> Telemetry:
    """Telemetry with the OpenTelemetry SDK installed and recording every span and metric."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(_Discarding()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(
        base_url="http://bench.invalid/v1", tracer_provider=tracer_provider, meter_provider=meter_provider
    )


@attrs.frozen
class Scenario:
    """One request and its answer: the conversation the adapters are handed, the body they answer with."""

    messages: tuple[ChatMessage, ...]
    options: ChatOptions | None
    body: Body

    def request_keywords(self) -> dict[str, Any]:
        """The request body the adapters send, as ``responses.create`` keywords: the baseline sends it too."""
        request = ResponsesPayloadBuilder(ResponsesSettings(model=MODEL)).build(self.messages, self.options)
        return {**request.body, "extra_headers": dict(request.headers)}

    def adapter(self, *, streaming: bool = True, telemetry: Telemetry | None = None) -> ChatPort:
        wire = self.body.sse if streaming else self.body.json
        client, http_client = serve(wire, _SSE if streaming else _JSON)
        if telemetry is not None:
            instrument_http_client(http_client)
        settings = ResponsesSettings(model=MODEL)
        adapter: ChatPort = (
            ResponsesSseAdapter(client, settings) if streaming else ResponsesJsonAdapter(client, settings)
        )
        return adapter if telemetry is None else InstrumentedChat(adapter, telemetry, model=MODEL)

    def check(self, response: ChatResponse, who: str) -> None:
        """Raise unless ``response`` is exactly the body's answer: its text and every call's arguments."""
        calls = response.function_calls
        if response.text != self.body.text or tuple(c.raw_arguments for c in calls) != self.body.arguments:
            raise WrongOutputError(f"{who} folded the wrong answer")
        if not all(call.is_valid for call in calls) or response.status != "completed":
            raise WrongOutputError(f"{who} did not parse every call's arguments")


def _repeat(once: Callable[[], Awaitable[object]], times: int) -> Run:
    async def run() -> None:
        for _ in range(times):
            await once()

    return run


async def raw_iteration(scenario: Scenario, times: int, *, by_tag: bool = False) -> Run:
    """The floor of a streamed answer: the SDK's own iteration of the same request and body. With
    ``by_tag``, its events typed as the adapters have the SDK type them (see :func:`raw_tagged_iteration`)."""
    client, _ = serve(scenario.body.sse, _SSE)
    keywords = scenario.request_keywords()

    async def once() -> int:
        stream = await client.responses.create(stream=True, **keywords)
        if by_tag:
            # The stream's reader reads the type it builds events as when it starts, at the first event.
            stream._cast_to = STREAM_EVENT
        count = 0
        async for _event in stream:
            count += 1
        return count

    if await once() != scenario.body.events:
        raise WrongOutputError("raw SDK iteration did not see every event of the body")
    return _repeat(once, times)


async def raw_tagged_iteration(scenario: Scenario, times: int) -> Run:
    """The SDK's own iteration as :func:`raw_iteration`, but its events typed as the adapters have the
    SDK type them: its union told which field names the class (``adapters.responses.event_types``).
    Against this floor a ratio shows what is ours alone; against the SDK as shipped, what a user gains."""
    return await raw_iteration(scenario, times, by_tag=True)


def _floor_events(body: bytes, pieces: dict[int, list[str]], arguments: dict[int, list[str]]) -> bytes:
    """Fold the whole events at the start of ``body`` into ``pieces`` (text deltas) and ``arguments``
    (argument deltas), by output index; what is left (an event not yet whole) is returned."""
    *events, rest = body.split(b"\n\n")
    for event in events:
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                data = json.loads(line[5:])
                kind = data["type"]
                if kind == "response.output_text.delta":
                    pieces.setdefault(data["output_index"], []).append(data["delta"])
                elif kind == "response.function_call_arguments.delta":
                    arguments.setdefault(data["output_index"], []).append(data["delta"])
    return rest


async def floor_read(scenario: Scenario, times: int) -> Run:
    """The physical floor of a streamed answer: what any reader of these bytes must at least do. The
    request written (``json.dumps``) and sent through httpx, the same answer read through httpx as it
    comes, split into events by hand, ``json.loads`` of each event's data, the text deltas joined and
    every call's argument deltas kept: no SDK, no types, no checks."""
    _, http_client = serve(scenario.body.sse, _SSE)
    keywords = scenario.request_keywords()
    headers = keywords.pop("extra_headers")

    async def once() -> tuple[str, tuple[str, ...]]:
        pieces: dict[int, list[str]] = {}
        arguments: dict[int, list[str]] = {}
        content = json.dumps({**keywords, "stream": True}, default=str).encode()
        async with http_client.stream(
            "POST", "http://bench.invalid/v1/responses", content=content, headers=headers
        ) as response:
            rest = b""
            async for chunk in response.aiter_bytes():
                rest = _floor_events(rest + chunk, pieces, arguments)
        text = "".join(piece for index in sorted(pieces) for piece in pieces[index])
        return text, tuple("".join(arguments[index]) for index in sorted(arguments))

    if await once() != (scenario.body.text, scenario.body.arguments):
        raise WrongOutputError("the floor did not read the body's text and arguments")
    return _repeat(once, times)


async def raw_keeping_text(scenario: Scenario, times: int) -> Run:
    """The floor of a streamed answer that keeps what has arrived (a ``partial`` on failure needs
    it): the SDK's own iteration, keeping the text as the adapters do, the deltas joined a few
    hundred at a time, then the provider's whole string from each event that repeats it (the
    text's ".done", the finished part, the finished item), so that what is kept is the string
    the SDK itself still holds while it parses the next event."""
    client, _ = serve(scenario.body.sse, _SSE)
    keywords = scenario.request_keywords()

    async def once() -> str:
        stream = await client.responses.create(stream=True, **keywords)
        joined: list[str] = []
        pieces: list[str] = []
        async for event in stream:
            if event.type == "response.output_text.delta":
                pieces.append(event.delta)
                if len(pieces) >= 256:
                    joined.append("".join(pieces))
                    pieces.clear()
            elif event.type == "response.output_text.done":
                joined, pieces = [event.text], []
            elif event.type == "response.content_part.done" and event.part.type == "output_text":
                joined, pieces = [event.part.text], []
            elif event.type == "response.output_item.done" and event.item.type == "message":
                part = event.item.content[0]
                joined, pieces = [part.text if part.type == "output_text" else part.refusal], []
        return "".join([*joined, *pieces])

    if await once() != scenario.body.text:
        raise WrongOutputError("raw SDK iteration did not keep the body's text")
    return _repeat(once, times)


async def raw_create(scenario: Scenario, times: int) -> Run:
    """The floor of a JSON answer: ``responses.create()`` of the same request, then parsing each
    call's arguments (the guard needs them parsed)."""
    client, _ = serve(scenario.body.json, _JSON)
    keywords = scenario.request_keywords()

    async def once() -> list[object]:
        response = await client.responses.create(stream=False, **keywords)
        return [json.loads(item.arguments) for item in response.output if item.type == "function_call"]

    if len(await once()) != len(scenario.body.arguments):
        raise WrongOutputError("responses.create() did not read every call")
    return _repeat(once, times)


async def whole(scenario: Scenario, chat: ChatPort, times: int) -> Run:
    async def once() -> ChatResponse:
        return await chat.get_response(scenario.messages, scenario.options)

    scenario.check(await once(), f"get_response of {chat!r}")
    return _repeat(once, times)


async def streamed(scenario: Scenario, chat: ChatPort, times: int) -> Run:
    """A caller that reads every update as it comes and keeps none (a terminal printing them)."""

    async def once() -> int:
        pieces = 0
        async for update in chat.get_streaming_response(scenario.messages, scenario.options):
            pieces += len(update.contents)
        return pieces

    async def folded() -> ChatResponse:
        updates: list[ChatResponseUpdate] = [
            update async for update in chat.get_streaming_response(scenario.messages, scenario.options)
        ]
        return ChatResponse.from_updates(updates)

    scenario.check(await folded(), f"get_streaming_response of {chat!r}")
    return _repeat(once, times)


def _ratio(
    name: str, samples: Mapping[str, Samples], ours: str, floor: str, limit: float | None, unit: str = ""
) -> Check:
    """``ours`` over ``floor``: the ratio of the medians, and the range of the paired runs' ratios."""
    numerator, denominator = samples[ours], samples[floor]
    ratio = numerator.median / denominator.median
    per_run = paired_ratios(numerator, denominator)
    detail = f"{numerator.median * 1e3:.1f} vs {denominator.median * 1e3:.1f} ms CPU{unit}"
    target = "report" if limit is None else f"<= {limit:g}"
    met = None if limit is None else ratio <= limit
    return Check(name, ratio, "ratio", target, met, detail, spread(per_run) if len(per_run) > 1 else "")


def _ours(workload: str, samples: Mapping[str, Samples]) -> list[Check]:
    """What is ours alone: both ways of reading against the SDK's iteration typing its events by tag, as
    the adapters have it do (reported, no target: the targets stand against the SDK as shipped)."""
    return [
        _ratio(
            f"ours alone, {workload}: get_response / SDK iteration typing by tag",
            samples,
            "get_response",
            "raw_tagged",
            None,
        ),
        _ratio(
            f"ours alone, {workload}: get_streaming_response / SDK iteration typing by tag",
            samples,
            "streaming",
            "raw_tagged",
            None,
        ),
        _ratio(
            f"the SDK typing by tag, {workload}: its iteration / as shipped",
            samples,
            "raw_tagged",
            "raw",
            None,
        ),
    ]


async def _one_body_read_five_ways(scenario: Scenario, runs: int) -> dict[str, Samples]:
    """The scenario's body read once a run by the physical floor, by the SDK (as shipped and typed by
    tag), folded by the adapter, and streamed by it to a caller: ``runs`` times each, interleaved."""
    return await interleaved(
        {
            "floor": await floor_read(scenario, 1),
            "raw": await raw_iteration(scenario, 1),
            "raw_tagged": await raw_tagged_iteration(scenario, 1),
            "get_response": await whole(scenario, scenario.adapter(), 1),
            "streaming": await streamed(scenario, scenario.adapter(), 1),
        },
        runs=runs,
    )


FLOOR_LIMIT: Final = 2.5
"""The most a streamed workload may cost over the physical floor (``floor_read``), read either way."""


def _over_floor(workload: str, samples: Mapping[str, Samples], unit: str = "") -> list[Check]:
    """Both ways of reading against the physical floor (the target), and the SDK as shipped against it."""
    return [
        _ratio(
            f"over the floor, {workload}: get_response / floor",
            samples,
            "get_response",
            "floor",
            FLOOR_LIMIT,
            unit,
        ),
        _ratio(
            f"over the floor, {workload}: get_streaming_response / floor",
            samples,
            "streaming",
            "floor",
            FLOOR_LIMIT,
            unit,
        ),
        _ratio(f"over the floor, {workload}: raw SDK iteration / floor", samples, "raw", "floor", None, unit),
    ]


async def _text_answer(
    deltas: int, label: str, key: str, sizes: Sizes, timings: dict[str, Any]
) -> list[Check]:
    """A text answer of ``deltas`` word deltas (rows named ``label``): folded, and streamed to a caller."""
    scenario = Scenario(PROMPT, None, make_body(deltas))
    samples = await _one_body_read_five_ways(scenario, sizes.runs)
    events = scenario.body.events
    timings[key] = {name: s.as_json() | {"events": events} for name, s in samples.items()}
    return [
        _ratio(
            f"{label}: get_response / raw SDK iteration ({events} events)",
            samples,
            "get_response",
            "raw",
            1.02,
        ),
        _ratio(
            f"caller streaming, {label}: get_streaming_response / raw SDK iteration ({events} events)",
            samples,
            "streaming",
            "raw",
            1.05,
        ),
        *_over_floor(label, samples),
        *_ours(label, samples),
    ]


async def large_text(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """A long answer (``sizes.fold`` word deltas): folded, and streamed to a caller."""
    return await _text_answer(sizes.fold, "large text", "large_text", sizes, timings)


async def medium_text(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """A shorter answer (``sizes.medium`` word deltas), read the same ways as the long one."""
    return await _text_answer(sizes.medium, f"{sizes.medium} deltas", "medium_text", sizes, timings)


async def many_calls(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """An answer of ``sizes.calls`` function calls whose arguments stream in small slices."""
    scenario = Scenario(PROMPT, None, make_calls_body(sizes.calls, sizes.call_chars))
    samples = await _one_body_read_five_ways(scenario, sizes.runs)
    events, calls = scenario.body.events, sizes.calls
    timings["many_calls"] = {name: s.as_json() | {"events": events} for name, s in samples.items()}
    return [
        _ratio(
            f"many calls: get_response / raw SDK iteration ({calls} calls, {events} events)",
            samples,
            "get_response",
            "raw",
            1.02,
        ),
        _ratio(
            f"caller streaming, many calls: get_streaming_response / raw SDK iteration ({calls} calls)",
            samples,
            "streaming",
            "raw",
            1.05,
        ),
        *_over_floor("many calls", samples),
        *_ours("many calls", samples),
    ]


async def small_answers(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """A tool loop's rounds: a full conversation sent, a short answer (``sizes.small_deltas`` deltas)
    back, ``sizes.small_requests`` times a run; with telemetry recording and without."""
    messages, options = tool_loop_round()
    scenario = Scenario(messages, options, make_body(sizes.small_deltas))
    n = sizes.small_requests
    telemetry = recording_telemetry()
    samples = await interleaved(
        {
            "floor": await floor_read(scenario, n),
            "raw": await raw_iteration(scenario, n),
            "get_response": await whole(scenario, scenario.adapter(), n),
            "streaming": await streamed(scenario, scenario.adapter(), n),
            "get_response_telemetry": await whole(scenario, scenario.adapter(telemetry=telemetry), n),
            "streaming_telemetry": await streamed(scenario, scenario.adapter(telemetry=telemetry), n),
        },
        runs=sizes.runs,
    )
    per_request = f" for {n} requests"
    size = len(json.dumps(scenario.request_keywords(), default=str))
    timings["small_answers"] = {
        name: s.as_json() | {"requests_per_run": n, "request_bytes": size} for name, s in samples.items()
    }
    what = f"{sizes.small_deltas} deltas, {size / 1024:.0f} KiB request"
    return [
        _ratio(
            f"small answers: get_response / raw SDK iteration ({what})",
            samples,
            "get_response",
            "raw",
            1.05,
            per_request,
        ),
        _ratio(
            f"small answers: get_streaming_response / raw SDK iteration ({what})",
            samples,
            "streaming",
            "raw",
            1.10,
            per_request,
        ),
        *_over_floor("small answers", samples, per_request),
        _ratio(
            "telemetry on / off, small answers, get_response (SDK recording)",
            samples,
            "get_response_telemetry",
            "get_response",
            1.05,
            per_request,
        ),
        _ratio(
            "telemetry on / off, small answers, get_streaming_response (SDK recording)",
            samples,
            "streaming_telemetry",
            "streaming",
            1.05,
            per_request,
        ),
    ]


async def json_body(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """A JSON Response of ``sizes.json_calls`` calls (about 2 MB): the JSON adapter against
    ``responses.create()`` on the same body, with the call arguments parsed in both."""
    scenario = Scenario(PROMPT, None, make_calls_body(sizes.json_calls, sizes.json_call_chars))
    n = sizes.json_repeats
    samples = await interleaved(
        {
            "create": await raw_create(scenario, n),
            "json_adapter": await whole(scenario, scenario.adapter(streaming=False), n),
        },
        runs=sizes.runs,
    )
    size = len(scenario.body.json)
    timings["json_body"] = {
        name: s.as_json() | {"body_bytes": size, "reads_per_run": n} for name, s in samples.items()
    }
    return [
        _ratio(
            f"JSON body: ResponsesJsonAdapter / responses.create() + argument parsing "
            f"({size / 2**20:.2f} MiB, {sizes.json_calls} calls)",
            samples,
            "json_adapter",
            "create",
            1.10,
            f" for {n} reads",
        )
    ]


async def _peaks(runs: Mapping[str, Run], times: int) -> dict[str, list[int]]:
    peaks: dict[str, list[int]] = {name: [] for name in runs}
    for _ in range(times):
        for name, run in runs.items():
            peaks[name].append(await peak_bytes(run))
    return peaks


async def memory_ratios(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """tracemalloc peaks of get_response and of a caller streaming (keeping nothing), as ratios to
    raw SDK iteration's peak on the same body, for ASCII, mixed and CJK text."""
    checks = []
    for kind in TEXT_KINDS:
        body = make_body(sizes.memory_deltas, kind=kind, delta_chars=sizes.memory_delta_chars)
        scenario = Scenario(PROMPT, None, body)
        peaks = await _peaks(
            {
                "raw": await raw_iteration(scenario, 1),
                "raw_keeping_text": await raw_keeping_text(scenario, 1),
                "get_response": await whole(scenario, scenario.adapter(), 1),
                "streaming": await streamed(scenario, scenario.adapter(), 1),
            },
            sizes.memory_runs,
        )
        text_bytes = len(scenario.body.text.encode())
        timings[f"memory_{kind}"] = peaks | {
            "text_utf8_bytes": text_bytes,
            "characters": len(scenario.body.text),
        }
        raw = statistics.median(peaks["raw"])
        for variant in ("get_response", "streaming"):
            ours = statistics.median(peaks[variant])
            per_run = [a / b for a, b in zip(peaks[variant], peaks["raw"], strict=True)]
            checks.append(
                Check(
                    f"memory, {kind} text: peak of {variant} / raw SDK iteration "
                    f"({len(body.text)} characters, {body.deltas} deltas)",
                    ours / raw,
                    "ratio",
                    "<= 1.1",
                    ours / raw <= 1.10,
                    f"{ours / 2**20:.2f} vs {raw / 2**20:.2f} MiB; text {text_bytes / 2**20:.2f} MiB UTF-8, "
                    f"{len(scenario.body.text)} characters",
                    spread(per_run) if len(per_run) > 1 else "",
                )
            )
        floor = statistics.median(peaks["raw_keeping_text"])
        ours = statistics.median(peaks["get_response"])
        per_run = [a / b for a, b in zip(peaks["get_response"], peaks["raw_keeping_text"], strict=True)]
        checks.append(
            Check(
                f"memory floor, {kind} text: peak of get_response / raw SDK iteration keeping the text "
                "(what a partial needs)",
                ours / floor,
                "ratio",
                "<= 1.1",
                ours / floor <= 1.10,
                f"{ours / 2**20:.2f} vs {floor / 2**20:.2f} MiB; keeping the text raises raw SDK "
                f"iteration's peak {floor / raw:.3f}x (a Python str of it takes "
                f"{sys.getsizeof(scenario.body.text) / 2**20:.2f} MiB)",
                spread(per_run) if len(per_run) > 1 else "",
            )
        )
    checks.extend(await _word_delta_memory(sizes, timings))
    return checks


async def _word_delta_memory(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """tracemalloc peaks on the large answer itself (``sizes.fold`` word deltas of mixed text): many
    small events, where the texts above are few long ones."""
    scenario = Scenario(PROMPT, None, make_body(sizes.fold))
    peaks = await _peaks(
        {
            "raw": await raw_iteration(scenario, 1),
            "get_response": await whole(scenario, scenario.adapter(), 1),
            "streaming": await streamed(scenario, scenario.adapter(), 1),
        },
        sizes.memory_runs,
    )
    timings["memory_word_deltas"] = peaks | {"deltas": scenario.body.deltas}
    raw = statistics.median(peaks["raw"])
    checks = []
    for variant in ("get_response", "streaming"):
        ours = statistics.median(peaks[variant])
        per_run = [a / b for a, b in zip(peaks[variant], peaks["raw"], strict=True)]
        checks.append(
            Check(
                f"memory, {scenario.body.deltas} word deltas: peak of {variant} / raw SDK iteration",
                ours / raw,
                "ratio",
                "<= 1.1",
                ours / raw <= 1.10,
                f"{ours / 2**20:.2f} vs {raw / 2**20:.2f} MiB",
                spread(per_run) if len(per_run) > 1 else "",
            )
        )
    return checks


async def workloads(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Every workload, in the order of the report."""
    checks: list[Check] = []
    for workload in (large_text, medium_text, many_calls, small_answers, json_body, memory_ratios):
        checks.extend(await workload(sizes, timings))
    return checks
