"""The per-read layers between the SDK's iteration and ``get_response``, timed one by one.

``python -m benchmarks.profile WORKLOAD raw --layers`` sends the very same request bytes (the
adapter's, through ``client.post`` as the adapters send them) and reads the very same answer, each
variant adding one layer of the adapter to the one before, interleaved runs, medians of CPU time:

- ``sdk``: the bare SDK iterating the stream;
- ``+typing by tag``: the SDK building its events as the adapters have it do, as its union told which
  field names the class (``adapters.responses.event_types``), from here on;
- ``+front``: through the front every attempt goes through (``observed``: the delegating transport,
  the body counted against ``max_response_bytes``);
- ``+reader``: the body's first bytes read to tell its shape, the rest replayed behind them;
- ``+heaviness``: the SDK's SSE decoder wrapped to refuse a bloating event and to note a heavy one;
- ``+folder``: every event fed to the event folder and the answer built;
- ``+fold loop``: the adapter's own loop around the folder (the output-item bound and the look at
  the clock every 32 events), then the stream closed;
- ``get_response``: the whole adapter (the request built, the deadline, the firewall, the logs' context).

Each variant's figure is shown as a ratio to ``sdk`` and as what it adds to the variant before it.
On a shared machine that difference is often within the runs' noise, so a second table times each
layer's own work apart, without the SDK's event parsing around it, over the same bytes and events:
the body read bare and through the front, then through the reader; the SDK's SSE decoder bare and
wrapped by the heaviness check; the folder over the events the SDK built. Each difference is shown
as a share of the SDK's whole iteration (``sdk`` above).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, cast

import httpx
import openai

from adapters.responses import ResponsesSseAdapter
from adapters.responses.chat_adapters import TypedEvents, _Decoding, _head, _plain_headers, _Rest
from adapters.responses.event_types import STREAM_EVENT, typed
from adapters.responses.folding import EventFolder
from adapters.responses.http_front import observed
from adapters.responses.sdk_seam import event_stream, framer, sse_decoder
from benchmarks.bodies import TextKind, make_body, make_calls_body, tool_loop_round
from benchmarks.harness import Check, Sizes, WrongOutputError, interleaved, paired_ratios, serve, spread
from benchmarks.workloads import PROMPT, Scenario, floor_read, whole
from domain import ChatResponse

__all__ = ["LAYERS", "layer_shares", "layers_report"]

LAYERS: Final = (
    "sdk",
    "+typing by tag",
    "+front",
    "+reader",
    "+heaviness",
    "+folder",
    "+fold loop",
    "get_response",
)
_SSE: Final = "text/event-stream"
Run = Callable[[], Awaitable[object]]


def _scenario(workload: str, sizes: Sizes, kind: TextKind) -> tuple[Scenario, int]:
    if workload == "large":
        return Scenario(PROMPT, None, make_body(sizes.fold, kind=kind)), 1
    if workload == "calls":
        return Scenario(PROMPT, None, make_calls_body(sizes.calls, sizes.call_chars)), 1
    if workload == "small":
        messages, options = tool_loop_round()
        return Scenario(messages, options, make_body(sizes.small_deltas)), sizes.small_requests
    raise ValueError("--layers reads a streamed answer: the large, calls or small workload")


class _SetUp:
    """What both tables build on: the adapter's request for the scenario (the very bytes every
    variant sends), its body cap, and SDK clients serving the scenario's answer."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        chat = cast(ResponsesSseAdapter, scenario.adapter())
        self.request = chat._built(scenario.messages, scenario.options)
        self.cap = chat._settings.max_response_bytes

    def client(self) -> openai.AsyncOpenAI:
        """A client of its own serving the scenario's answer."""
        return serve(self.scenario.body.sse, _SSE)[0]

    def observed(self) -> openai.AsyncOpenAI:
        """A client of its own behind the front (the delegating transport, the counted body)."""
        return observed(self.client(), max_response_bytes=self.cap)

    async def post(self, client: openai.AsyncOpenAI) -> Any:
        """The adapter's request sent through ``client`` as the adapters send it; the stream unread."""
        return await ResponsesSseAdapter._post(client, self.request, stream=True)


def _variants(setup: _SetUp, times: int) -> dict[str, Run]:
    """One run per layer, each over a client of its own serving the same body."""
    scenario, request, cap, post = setup.scenario, setup.request, setup.cap, setup.post

    async def read(
        client: openai.AsyncOpenAI,
        http: httpx.Response,
        folder: EventFolder | None,
        *,
        heaviness: bool = False,
    ) -> int | ChatResponse:
        decoder = (lambda inner: _Decoding(inner, cap)) if heaviness else None
        stream = event_stream(client, http, STREAM_EVENT, decoder)
        count = 0
        async for handed in stream:
            # The heaviness check's decoder hands the events it typed over a read at a time, as a list.
            for event in handed if type(handed) is TypedEvents else (handed,):
                count += 1
                if folder is not None:
                    folder.feed(event)
        return count if folder is None else folder.result()

    async def replayed(http: httpx.Response) -> httpx.Response:
        chunks = http.aiter_bytes()
        head = await _head(chunks)
        rest = _Rest(head, chunks, http)
        headers = _plain_headers(http)
        return httpx.Response(http.status_code, headers=headers, stream=rest, request=http.request)

    def sdk_layer(client: openai.AsyncOpenAI, *, tagged: bool = True) -> Run:
        async def once() -> int:
            stream = await post(client)
            if tagged:
                # Read by the stream's reader when it starts, at the first event.
                stream._cast_to = STREAM_EVENT
            count = 0
            async for _ in stream:
                count += 1
            return count

        return once

    def front_layer(client: openai.AsyncOpenAI, *, heaviness: bool, folding: bool) -> Run:
        async def once() -> int | ChatResponse:
            stream = await post(client)
            http = await replayed(stream.response)
            try:
                return await read(client, http, EventFolder() if folding else None, heaviness=heaviness)
            finally:
                await stream.close()

        return once

    def loop_layer(adapter: ResponsesSseAdapter) -> Run:
        client = adapter._client

        async def once() -> ChatResponse:
            stream = await post(client)
            try:
                http = await replayed(stream.response)
                exchange = adapter._new_exchange(request, seconds=600.0)
                return await adapter._fold_stream(http, exchange)
            finally:
                await stream.close()

        return once

    def adapter_layer(adapter: ResponsesSseAdapter) -> Run:
        async def once() -> ChatResponse:
            return await adapter.get_response(scenario.messages, scenario.options)

        return once

    runs: dict[str, Run] = {
        "sdk": sdk_layer(setup.client(), tagged=False),
        "+typing by tag": sdk_layer(setup.client()),
        "+front": sdk_layer(setup.observed()),
        "+reader": front_layer(setup.observed(), heaviness=False, folding=False),
        "+heaviness": front_layer(setup.observed(), heaviness=True, folding=False),
        "+folder": front_layer(setup.observed(), heaviness=True, folding=True),
        "+fold loop": loop_layer(cast(ResponsesSseAdapter, scenario.adapter())),
        "get_response": adapter_layer(cast(ResponsesSseAdapter, scenario.adapter())),
    }

    def repeated(name: str, once: Run) -> Run:
        checked = False

        async def run() -> None:
            nonlocal checked
            for _ in range(times):
                result = await once()
                if checked:
                    continue
                # Every layer reads the whole body: each is checked once, on its first read.
                if isinstance(result, ChatResponse):
                    scenario.check(result, name)
                elif result != scenario.body.events:
                    raise WrongOutputError(f"{name} saw {result} of the body's {scenario.body.events} events")
                checked = True

        return run

    return {name: repeated(name, once) for name, once in runs.items()}


def _alone(setup: _SetUp, times: int) -> Callable[[], Awaitable[dict[str, Run]]]:
    """The layers' own work apart from the SDK's event parsing (see the module's docstring)."""
    cap, post = setup.cap, setup.post

    def read_bytes(sdk: openai.AsyncOpenAI, *, reader: bool) -> Run:
        async def once() -> int:
            stream = await post(sdk)
            http: httpx.Response = stream.response
            if reader:
                chunks = http.aiter_bytes()
                rest = _Rest(await _head(chunks), chunks, http)
                http = httpx.Response(http.status_code, headers=_plain_headers(http), stream=rest)
            size = 0
            async for chunk in http.aiter_bytes():
                size += len(chunk)
            await stream.close()
            return size

        return once

    async def build() -> dict[str, Run]:
        bare = setup.client()
        stream = await post(bare)
        chunks = [chunk async for chunk in stream.response.aiter_bytes()]
        events = [event async for event in await post(bare)]

        def decode(*, checked: bool) -> Run:
            async def once() -> int:
                async def body() -> Any:
                    for chunk in chunks:
                        yield chunk

                decoder = sse_decoder(bare)
                reader = _Decoding(decoder, cap) if checked else decoder
                return len([sse async for sse in reader.aiter_bytes(body())])

            return once

        async def fold() -> int:
            folder = EventFolder()
            for event in events:
                folder.feed(event)
            return len(folder.result().messages)

        async def nothing() -> int:
            return 0

        return {
            "bytes, bare": read_bytes(bare, reader=False),
            "bytes, front": read_bytes(setup.observed(), reader=False),
            "bytes, front + reader": read_bytes(setup.observed(), reader=True),
            "SSE decoder, bare": decode(checked=False),
            "SSE decoder, heaviness check": decode(checked=True),
            "no folder": nothing,
            "folder": fold,
        }

    async def repeated() -> dict[str, Run]:
        runs = await build()

        def times_over(once: Run) -> Run:
            async def run() -> None:
                for _ in range(times):
                    await once()

            return run

        return {name: times_over(once) for name, once in runs.items()}

    return repeated


# Each layer's own cost: the second variant over the first, both timed apart from the SDK's parsing.
_APART: Final = (
    ("front (delegating transport, counted body)", "bytes, bare", "bytes, front"),
    ("reader (shape sniffed, rest replayed)", "bytes, front", "bytes, front + reader"),
    ("heaviness check (per event)", "SSE decoder, bare", "SSE decoder, heaviness check"),
    ("event folder", "no folder", "folder"),
)


async def layers_report(workload: str, sizes: Sizes, kind: TextKind = "mixed") -> str:
    """The table of :data:`LAYERS` on ``workload``: medians of ``sizes.runs`` interleaved runs."""
    scenario, times = _scenario(workload, sizes, kind)
    setup = _SetUp(scenario)
    variants = _variants(setup, times)
    samples = await interleaved(variants, runs=sizes.runs)
    sdk = samples["sdk"]
    if sdk.median <= 0:
        raise WrongOutputError("the SDK's iteration took no CPU time")
    lines = [
        f"{workload}: {scenario.body.events} events x {times}, "
        f"medians of {sizes.runs} interleaved runs (CPU)",
        f"{'layer':<14}{'ms':>10}{'/ sdk':>9}{'spread':>14}{'adds':>9}",
    ]
    before = sdk.median
    for name in LAYERS:
        median = samples[name].median
        ratios = paired_ratios(samples[name], sdk)
        lines.append(
            f"{name:<14}{median * 1e3:>10.1f}{median / sdk.median:>9.3f}{spread(ratios):>14}"
            f"{(median - before) / sdk.median:>+9.1%}"
        )
        before = median
    apart = await interleaved(await _alone(setup, times)(), runs=sizes.runs)
    lines += ["", "each layer apart, over the same bytes and events (share of the SDK's whole iteration):"]
    for what, without, with_it in _APART:
        added = apart[with_it].median - apart[without].median
        lines.append(
            f"  {what:<44}{added * 1e3:>9.1f} ms {added / sdk.median:>+8.2%}"
            f"   ({apart[without].median * 1e3:.1f} -> {apart[with_it].median * 1e3:.1f} ms)"
        )
    return "\n".join(lines)


async def _shares_of(label: str, scenario: Scenario, runs: int) -> tuple[list[Check], dict[str, Any]]:
    """Where ``get_response``'s time on ``scenario``'s answer goes, layer by layer over the same bytes
    (each variant adds one layer to the one before; interleaved runs, medians of CPU time)."""
    client, http_client = serve(scenario.body.sse, _SSE)

    def through(*, typing: bool, folding: bool) -> Run:
        async def once() -> int:
            framing = framer(sse_decoder(client))
            assert framing is not None  # the canary holds the SDK to it
            folder = EventFolder() if folding else None
            count = 0
            async with http_client.stream("POST", "http://bench.invalid/v1/responses", content=b"{}") as http:
                async for chunk in http.aiter_bytes():
                    for sse in framing.feed(chunk):
                        count += 1
                        if typing:
                            event = typed(sse.data)
                            if folder is not None and event is not None:
                                folder.feed(event)
            if folder is not None and folder.result().text != scenario.body.text:
                raise WrongOutputError("the folder alone folded the wrong text")
            return count

        return once

    samples = await interleaved(
        {
            "floor": await floor_read(scenario, 1),
            "framing": through(typing=False, folding=False),
            "typing": through(typing=True, folding=False),
            "folding": through(typing=True, folding=True),
            "get_response": await whole(scenario, scenario.adapter(), 1),
        },
        runs=runs,
    )
    medians = {name: s.median for name, s in samples.items()}
    whole_time = medians["get_response"]
    layers = {
        "reading the body through httpx and the SDK's SSE framing": medians["framing"],
        "typing each event (pydantic, the SDK's classes)": medians["typing"] - medians["framing"],
        "the event folder": medians["folding"] - medians["typing"],
        "the rest: the request through the SDK, its stream reader, the adapter's per-read layers": (
            whole_time - medians["folding"]
        ),
    }
    detail = ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in layers.items())
    checks = [
        Check(
            f"layers, {label}: {name} / get_response",
            seconds / whole_time,
            "share",
            "report",
            None,
            f"of {whole_time * 1e3:.1f} ms CPU (the floor {medians['floor'] * 1e3:.1f} ms); {detail}",
        )
        for name, seconds in layers.items()
    ]
    return checks, {name: s.as_json() for name, s in samples.items()}


async def layer_shares(sizes: Sizes, timings: dict[str, Any]) -> list[Check]:
    """Each layer's share of ``get_response`` on the large text and the many calls (``make bench``)."""
    checks: list[Check] = []
    for label, key, scenario in (
        ("large text", "layers_large", Scenario(PROMPT, None, make_body(sizes.fold))),
        (
            "many calls",
            "layers_calls",
            Scenario(PROMPT, None, make_calls_body(sizes.calls, sizes.call_chars)),
        ),
    ):
        rows, timings[key] = await _shares_of(label, scenario, sizes.runs)
        checks.extend(rows)
    return checks
