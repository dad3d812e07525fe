"""Peak memory per body shape, each measured in a process of its own, as a ratio to the body's size.

``python -m benchmarks.memory [--mib N]`` prints, per shape and adapter, tracemalloc's peak while
``get_response`` reads the body (served by ``httpx.MockTransport``; the body itself is built before
measuring), beside two floors measured the same way in their own processes: ``json.loads`` of the
body alone (the parsed tree any reader of it builds), and the bare SDK reading it (iterating
``responses.create(stream=True)``, or ``responses.create()`` for a document). ``make bench`` includes
them. The promise (issue 19) is a peak of at most about 3x ``max_response_bytes`` for any body
under it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import json
import multiprocessing
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, Final

from adapters.offline.render import call_item, message_item, response_document, sse, stream_events
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from benchmarks.boundary import QUIET
from benchmarks.harness import Check, Sizes, serve
from domain import ChatError, ChatMessage

__all__ = ["SHAPES", "body_memory", "probe"]

MIB: Final = 1 << 20
MESSAGES: Final = (ChatMessage.user("Summarize the meeting."),)
_DOCUMENT: Final[dict[str, Any]] = {
    "response_id": "resp_memory",
    "model": "gpt-5.5",
    "created_at": 1_771_881_670,
}


def _text(size: int) -> dict[str, Any]:
    return response_document([message_item("msg_1", "x" * size)], **_DOCUMENT)


def _calls(size: int, arguments: int = 1_000) -> dict[str, Any]:
    body = json.dumps({"notes": "y" * (arguments - 14)})
    count = max(size // (arguments + 120), 1)
    calls = [call_item(f"fc_{n}", f"call_{n}", "record", body) for n in range(count)]
    return response_document(calls, **_DOCUMENT)


def _small_items(size: int) -> bytes:
    # The shape that grows most once parsed: empty objects, three bytes each (more than
    # max_output_items of them, so the answer is refused, after parsing).
    count = (size - 200) // 3
    return b'{"object":"response","status":"completed","output":[' + b",".join([b"{}"] * count) + b"]}"


def _document(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _stream(document: dict[str, Any], chunk: int) -> bytes:
    return sse(stream_events(document, chunk=chunk)).encode()


# Each shape: the body of about ``size`` bytes, and its content type.
SHAPES: Final[dict[str, Callable[[int], tuple[bytes, str]]]] = {
    # The answer's text is in the stream about five times (deltas, the part's, the item's and the
    # response's whole form), so a fifth of the size.
    "one long text, event stream": lambda size: (_stream(_text(size // 5), 64 * 1024), "text/event-stream"),
    "one long text, JSON document": lambda size: (_document(_text(size)), "application/json"),
    "calls of 1 KB arguments, event stream": lambda size: (
        _stream(_calls(size // 3), 64 * 1024),
        "text/event-stream",
    ),
    "calls of 1 KB arguments, JSON document": lambda size: (_document(_calls(size)), "application/json"),
    "empty items, JSON document": lambda size: (_small_items(size), "application/json"),
}
ADAPTERS: Final = {"sse": ResponsesSseAdapter, "json": ResponsesJsonAdapter}
FLOORS: Final = ("json.loads", "sdk")


async def _run(variant: str, body: bytes, content_type: str, cap: int) -> str:
    if variant == "json.loads":
        if content_type == "text/event-stream":
            # Each event's data parsed in turn, nothing kept: the floor of reading the stream at all.
            fields = sum(len(json.loads(line[6:])) for line in io.BytesIO(body) if line.startswith(b"data: "))
            return f"{fields} fields"
        return type(json.loads(body)).__name__
    client, _ = serve(body, content_type)
    if variant == "sdk":
        if content_type == "text/event-stream":
            stream = await client.responses.create(model="gpt-5.5", input="hi", stream=True)
            events = 0
            async for _ in stream:
                events += 1
            return f"{events} events"
        document = await client.responses.create(model="gpt-5.5", input="hi")
        return f"{len(document.output)} items"
    settings = ResponsesSettings(model="gpt-5.5", max_response_bytes=cap, deadline_seconds=600)
    adapter = ADAPTERS[variant](client, settings, logger=QUIET)
    try:
        response = await adapter.get_response(MESSAGES)
    except ChatError as error:
        return type(error).__name__
    return f"{len(response.messages)} messages"


def probe(shape: str, variant: str, size: int, cap: int) -> dict[str, Any]:
    """In this process: the peak traced memory of one read of the body, over the body's size."""
    body, content_type = SHAPES[shape](size)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        outcome = asyncio.run(_run(variant, body, content_type, cap))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"body_bytes": len(body), "peak_bytes": peak - before, "outcome": outcome}


# Each probe runs in a process of its own, forked from a server process that has imported this
# module once (POSIX): a clean heap per probe without paying the imports (the SDK, the adapters) twenty
# times over, as a process started from scratch for each probe did.
_CONTEXT: Final = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload([__name__])
PROBE_TIMEOUT_SECONDS: Final = 1_200.0


def _probe_into(sender: Connection, shape: str, variant: str, size: int, cap: int) -> None:
    try:
        sender.send(("done", probe(shape, variant, size, cap)))
    except BaseException as error:  # reported to the parent, which raises it
        sender.send(("failed", f"{type(error).__name__}: {error}"))
    finally:
        sender.close()


def _in_process(shape: str, variant: str, size: int, cap: int) -> dict[str, Any]:
    which = f"the probe of {shape!r}, {variant}"
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    process = _CONTEXT.Process(
        target=_probe_into,
        args=(sender, shape, variant, size, cap),
        name=which,
        daemon=True,
    )
    process.start()
    sender.close()
    try:
        if not receiver.poll(PROBE_TIMEOUT_SECONDS):
            raise RuntimeError(f"{which} gave nothing in {PROBE_TIMEOUT_SECONDS:.0f} s")
        outcome, value = receiver.recv()
    except EOFError:
        raise RuntimeError(f"{which} ended with exit code {process.exitcode}") from None
    finally:
        receiver.close()
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join(timeout=10)
    if outcome != "done":
        raise RuntimeError(f"{which} failed: {value}")
    result: dict[str, Any] = value
    return result


def body_memory(
    sizes: Sizes, timings: dict[str, Any], shown: Callable[[Check], None] | None = None
) -> list[Check]:
    """Per shape and adapter: peak / ``max_response_bytes`` (twice the body here), the promise's
    measure, with peak / body beside json.loads's and the bare SDK's."""
    size = sizes.memory_body
    cap = 2 * size
    checks = []
    for shape in SHAPES:
        floors = {variant: _in_process(shape, variant, size, cap) for variant in FLOORS}
        for adapter in ADAPTERS:
            result = _in_process(shape, adapter, size, cap)
            body = result["body_bytes"]
            ratio = result["peak_bytes"] / cap
            timings[f"memory: {shape}, {adapter}"] = {"adapter": result, "cap_bytes": cap, **floors}
            floor = ", ".join(f"{name} {floors[name]['peak_bytes'] / body:.2f}x" for name in FLOORS)
            check = Check(
                f"peak memory / max_response_bytes, {shape}, {ADAPTERS[adapter].__name__}",
                ratio,
                "ratio",
                "<= 3",
                ratio <= 3,
                f"{result['peak_bytes'] / MIB:.1f} MiB under a {cap / MIB:.1f} MiB cap for a "
                f"{body / MIB:.1f} MiB body ({result['outcome']}): "
                f"{result['peak_bytes'] / body:.2f}x the body; floors over the body: {floor}",
            )
            checks.append(check)
            if shown is not None:
                shown(check)
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__)
    parser.add_argument("--mib", type=float, default=Sizes().memory_body / MIB, help="body size in MiB")
    args = parser.parse_args(argv)

    def show(check: Check) -> None:
        print(f"{check.name}: {check.value:.2f}x (target {check.target}: {check.verdict})")
        print(f"    {check.detail}", flush=True)

    body_memory(Sizes(memory_body=int(args.mib * MIB)), {}, show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
