"""A failed run carries no secret: every string reachable from its error and its run, whatever was echoed.

The gateway echoes the API key into an answer (text, call arguments, ids, a provider item) that the run
goes on with, then fails the next request with the key in its error (split between the code and the
message, upper-cased, base64'd). The error a host catches, its run, the run's answers, calls, tool results
and the whole cause chain are walked attribute by attribute (:func:`tests.support.leaks.reachable_strings`),
not only through ``str`` and ``repr``.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Final

import attrs
import httpx
import pytest
from dependency_injector import providers

from adapters.container import Container
from adapters.offline.render import call_item, message_item, sse, stream_events
from adapters.settings import Secret
from application import ToolLoop, ToolRegistry, ToolRunError
from domain import ChatMessage, ChatOptions, ResponseFailedError
from tests.support.gateway import JSON, SSE, Recorder, answer, response_document
from tests.support.leaks import reachable_strings

API_KEY: Final = "sk-planted-Qz7Kx2Vw9Lm4Tr8Np3"
HALF: Final = len(API_KEY) // 2
B64: Final = base64.b64encode(f"user:{API_KEY}".encode()).decode()


def _markers() -> set[str]:
    """The key as an echo may carry it, and each half of it (a secret cut in two is still told)."""
    return {API_KEY.lower(), API_KEY[:HALF].lower(), API_KEY[HALF:].lower()}


def _leaks(root: object) -> list[str]:
    found = []
    for path, text in reachable_strings(root):
        lowered = text.lower()
        if any(marker in lowered for marker in _markers()) or B64[8:-4] in text:
            found.append(f"{path}: {text[:120]!r}")
    return found


@attrs.frozen
class Decision:
    decision: str = attrs.field(metadata={"description": "What was decided."})


def _registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def record_decision(params: Decision) -> dict[str, object]:
        """Record a decision."""
        return {"recorded": params.decision}

    return registry


def _echoing_answer(streaming: bool) -> httpx.Response:
    output: list[dict[str, Any]] = [
        message_item(f"msg_{API_KEY}", f"Noted the key {API_KEY.upper()} and {B64}."),
        call_item(f"fc_{API_KEY}", f"call_{API_KEY}", "record_decision", json.dumps({"decision": API_KEY})),
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": API_KEY}},
    ]
    document = response_document(output, response_id=f"resp_{API_KEY}", model=f"gpt-{API_KEY}")
    if streaming:
        return answer(sse(stream_events(document)), SSE)
    return answer(json.dumps(document), JSON)


def _failing_answer(streaming: bool) -> httpx.Response:
    error = {"code": API_KEY[:HALF], "message": API_KEY[HALF:] + f" was refused; {API_KEY.upper()}"}
    document = response_document([], status="failed", error=error, response_id=f"resp_{API_KEY}")
    if streaming:
        return answer(sse(stream_events(document)), SSE)
    return answer(json.dumps(document), JSON)


async def _drive(loop: ToolLoop, options: ChatOptions, *, as_events: bool) -> None:
    if as_events:
        async for _ in loop.run_events([ChatMessage.user("go")], options, _registry()):
            pass
    else:
        await loop.run([ChatMessage.user("go")], options, _registry())


@pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])
@pytest.mark.parametrize("as_events", [False, True], ids=["run", "run_events"])
async def test_no_string_reachable_from_a_failed_runs_error_holds_the_echoed_key(
    streaming: bool, as_events: bool
) -> None:
    recorder = Recorder([_echoing_answer(streaming), _failing_answer(streaming)])
    container = Container()
    container.environ.override(providers.Object({}))
    container.config.from_dict(
        {"agent": {"base_url": "http://gateway.test/v1", "api_key": API_KEY, "model": "gpt-test",
                   "use_streaming": streaming, "telemetry": False}}
    )  # fmt: skip
    container.http_client.override(httpx.AsyncClient(transport=httpx.MockTransport(recorder)))
    options = ChatOptions(tools=_registry().specs)
    async with container:
        loop = container.tool_loop()
        with pytest.raises(ToolRunError) as caught:
            await _drive(loop, options, as_events=as_events)

    error = caught.value
    assert isinstance(error, ResponseFailedError)
    # The run went on with the echoed answer, and it is all there, only without the key.
    assert len(error.run.responses) == 1
    assert len(error.run.tool_calls) == 1
    assert "[REDACTED]" in error.run.responses[0].text
    assert error.code == "[REDACTED]"
    assert error.message.startswith("[REDACTED] was refused")
    assert _leaks(error) == []


def test_the_walk_finds_a_key_wherever_it_is_held() -> None:
    """The walker itself: a key in a slot, a mapping key, an exception argument and a cause is found."""
    holder = Secret(API_KEY)  # an attrs class with slots: the key is in one
    failure = ValueError("outer")
    failure.__cause__ = KeyError({API_KEY.upper(): 1})

    assert _leaks(holder)
    assert _leaks(failure)
    assert _leaks({"nested": [(1, {"k": API_KEY[HALF:]})]})
