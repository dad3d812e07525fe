"""Run as ``python -m tests.integration.boundary.memory_probe CASE ADAPTER``: one request to a local server
on 127.0.0.1 serving the body CASE names, then one JSON line on stdout: the outcome and how far the
process's peak resident memory rose while the request ran.

Peak RSS is a property of the whole process, so each measurement needs a process of its own; the
test that reads the line (``test_memory.py``) starts this module in a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
from collections.abc import Callable
from typing import Final

from adapters.offline.render import message_item, sse, stream_events
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from domain import ChatError, ChatMessage
from tests.support.bombs import stacked_gzip_bomb
from tests.support.gateway import response_document
from tests.support.local_server import Received, Sender, serve

MIB: Final = 1 << 20
CAP: Final = 8 * MIB
ADAPTERS: Final = {"sse": ResponsesSseAdapter, "json": ResponsesJsonAdapter}


def _gzip_gzip_bomb() -> tuple[bytes, dict[str, str]]:
    # 4 GiB of zeros under two gzip layers: a few kilobytes on the wire.
    return stacked_gzip_bomb(4096, 2), {"content-encoding": "gzip, gzip", "content-type": "text/event-stream"}


def _many_small_items() -> tuple[bytes, dict[str, str]]:
    # Just under the cap, in the shape that grows most in memory once parsed: tiny objects.
    count = (CAP - 200) // 3
    body = b'{"object":"response","status":"completed","output":[' + b",".join([b"{}"] * count) + b"]}"
    return body, {"content-type": "application/json"}


def _one_long_text() -> tuple[bytes, dict[str, str]]:
    document = response_document([message_item("msg_1", "x" * (CAP // 2))])
    return sse(stream_events(document, chunk=64 * 1024)).encode(), {"content-type": "text/event-stream"}


CASES: Final[dict[str, Callable[[], tuple[bytes, dict[str, str]]]]] = {
    "gzip-gzip-bomb": _gzip_gzip_bomb,
    "many-small-items": _many_small_items,
    "one-long-text": _one_long_text,
}


def _peak_rss() -> int:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


async def _probe(case: str, adapter_name: str) -> dict[str, object]:
    body, headers = CASES[case]()

    async def handler(_: Received, sender: Sender) -> None:
        await sender.start(200, headers)
        for start in range(0, len(body), 64 * 1024):
            if sender.disconnected.is_set():
                return
            try:
                await sender.body(body[start : start + 64 * 1024])
            except OSError:
                return
        await sender.body(b"", more=False)

    import httpx

    from tests.support.gateway import sdk_over

    async with serve(handler) as server, httpx.AsyncClient() as http_client:
        client = sdk_over(http_client, base_url=server.base_url, max_retries=0, timeout=60.0)
        settings = ResponsesSettings(model="gpt-test", max_response_bytes=CAP, deadline_seconds=120.0)
        adapter = ADAPTERS[adapter_name](client, settings)
        before = _peak_rss()
        outcome: str
        try:
            response = await adapter.get_response([ChatMessage.user("hi")])
            outcome = f"response with {len(response.messages)} messages"
        except ChatError as error:
            outcome = f"{type(error).__name__}: {error.message}"
        after = _peak_rss()
    return {"case": case, "adapter": adapter_name, "outcome": outcome, "peak_rise": after - before}


def main(argv: list[str]) -> None:
    case, adapter_name = argv
    print(json.dumps(asyncio.run(_probe(case, adapter_name))))


if __name__ == "__main__":
    main(sys.argv[1:])
