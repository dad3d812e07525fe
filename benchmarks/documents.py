"""What a run document costs: ``dumps`` + ``loads`` against ``json.dumps`` + ``json.loads`` of the same data.

``python -m benchmarks.documents [--runs N] [--quick]`` prints one line per value: a 200-call tool run (a
real ``ToolLoop`` run over the JSON adapter) and the 20k-delta answer, each as a ratio (target <= 3);
then what a paused run of many small values costs to take up again: ``loads`` + ``resume`` of a 45 MB
state in seconds (target <= 10 s, issue 41's), and the peak memory of its ``loads`` as a
multiple of the document (target <= 10).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs

from adapters.responses import ResponsesJsonAdapter, ResponsesSettings
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import Approve, RunState, ToolLoop, ToolRegistry, ToolRun, dumps, loads
from benchmarks.bodies import make_body, make_calls_body
from benchmarks.harness import Check, interleaved, paired_ratios, peak_bytes, serve, spread
from domain import ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, updates_of

__all__ = ["document_costs", "main", "paused_state", "resume_costs"]

QUESTION = (ChatMessage.user("Record every action item of the meeting."),)
TARGET = 3.0
RESUME_TARGET_SECONDS = 10.0


async def _answer(body: bytes) -> ChatResponse:
    client, http_client = serve(body, "application/json")
    try:
        return await ResponsesJsonAdapter(client, ResponsesSettings(model="gpt-bench")).get_response(QUESTION)
    finally:
        await http_client.aclose()


@attrs.frozen
class _Answers:
    """A chat that gives its answers in turn (the calls, then the closing text)."""

    answers: list[ChatResponse]

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        return self.answers.pop(0)

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        return updates_of(lambda: self.get_response(messages, options))


@attrs.frozen
class _Item:
    owner: str
    item: int
    due: str
    notes: str


async def tool_run(calls: int, call_chars: int) -> ToolRun:
    """A run of the tool loop in which the model makes ``calls`` calls in one answer, then closes."""
    answers = [await _answer(make_calls_body(calls, call_chars).json), await _answer(make_body(20).json)]
    registry = ToolRegistry()

    @registry.tool(description="Record one action item.")
    def record_action_item(params: _Item) -> dict[str, Any]:
        return {"recorded": params.item}

    loop = ToolLoop(_Answers(answers))
    return await loop.run(QUESTION, ChatOptions(tools=registry.specs), registry)


async def _ratio(name: str, value: object, runs: int) -> Check:
    text = dumps(value)
    data = json.loads(text)
    if loads(text) != value:
        raise AssertionError(f"{name}: the document did not load back equal")

    async def ours() -> None:
        loads(dumps(value))

    async def plain() -> None:
        json.loads(json.dumps(data))

    samples = await interleaved({"documents": ours, "json": plain}, runs=runs)
    ratios = paired_ratios(samples["documents"], samples["json"])
    ratio = samples["documents"].median / samples["json"].median
    return Check(
        name=f"dumps+loads / json.dumps+json.loads, {name}",
        value=ratio,
        unit="x",
        target=f"<= {TARGET:g}",
        met=ratio <= TARGET,
        detail=(
            f"{samples['documents'].median * 1e3:.1f} vs {samples['json'].median * 1e3:.1f} ms CPU "
            f"(medians of {runs}), a {len(text.encode('utf-8')):,}-byte document"
        ),
        spread=spread(ratios),
    )


async def document_costs(
    *, calls: int = 200, call_chars: int = 600, deltas: int = 20_000, runs: int = 7
) -> list[Check]:
    """The two figures: a ``calls``-call run, and an answer of ``deltas`` text deltas."""
    run = await tool_run(calls, call_chars)
    answer = await _answer(make_body(deltas).json)
    return [
        await _ratio(f"a {calls}-call run", run, runs),
        await _ratio(f"the {deltas:,}-delta answer", answer, runs),
    ]


@attrs.frozen
class _Held:
    step: int = 0


def _approval_tools() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool(description="A step that waits for approval.", needs_approval=True)
    def held(params: _Held) -> dict[str, Any]:
        return {"done": params.step}

    return registry


async def paused_state(size_bytes: int) -> RunState:
    """A run paused for approval whose conversation is short messages, about ``size_bytes`` as a document."""
    history = tuple(
        ChatMessage.user(f"line {i}") if i % 2 == 0 else ChatMessage.assistant(f"noted {i}")
        for i in range(max(2, size_bytes // 84))
    )
    chat = ScriptedChat(ScriptedTurn(calls=(("h1", "held", '{"step": 1}'),)))
    registry = _approval_tools()
    run = await ToolLoop(chat).run(history, ChatOptions(tools=registry.specs), registry)
    assert run.state is not None
    return run.state


async def resume_costs(size_bytes: int = 45_000_000) -> list[Check]:
    """``loads`` + ``resume`` of a paused run of about ``size_bytes`` of small messages: the seconds
    (CPU time of this process), and ``loads``'s peak memory as a multiple of the document."""
    text = dumps(await paused_state(size_bytes))
    size = len(text.encode("utf-8"))
    registry = _approval_tools()
    parse_started = time.process_time()
    json.loads(text)
    parse = time.process_time() - parse_started
    started = time.process_time()
    state = loads(text, max_bytes=None)
    loaded = time.process_time() - started
    resumed = await ToolLoop(ScriptedChat(ScriptedTurn(text="Done."))).resume(
        state, {"h1": Approve()}, registry
    )
    seconds = time.process_time() - started
    if resumed.status != "done":
        raise AssertionError("the paused run did not resume to its end")
    del state, resumed

    async def load() -> None:
        loads(text, max_bytes=None)

    peak = await peak_bytes(load)
    return [
        Check(
            name=f"loads+resume of a {size / 1e6:.0f} MB paused state of small messages",
            value=seconds,
            unit="s",
            target=f"<= {RESUME_TARGET_SECONDS:g}",
            met=seconds <= RESUME_TARGET_SECONDS,
            detail=f"loads {loaded:.1f} s of it, json.loads alone {parse:.1f} s (CPU)",
        ),
        Check(
            name=f"peak memory of loads / document, {size / 1e6:.0f} MB paused state",
            value=peak / size,
            unit="x",
            target="<= 10",
            met=peak / size <= 10,
            detail=f"{peak / 2**20:.0f} MiB for a {size / 2**20:.0f} MiB document (tracemalloc)",
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.documents", description=__doc__)
    parser.add_argument("--runs", type=int, default=7, help="timed runs per variant (median)")
    parser.add_argument("--quick", action="store_true", help="tiny values and two runs: a smoke test")
    args = parser.parse_args(argv)
    sizes: dict[str, int] = {"calls": 10, "call_chars": 100, "deltas": 200, "runs": 2} if args.quick else {}
    checks = asyncio.run(document_costs(**{"runs": args.runs, **sizes}))
    checks += asyncio.run(resume_costs(200_000 if args.quick else 45_000_000))
    for check in checks:
        print(f"{check.name}: {check.value:.2f} {check.unit} ({check.spread}; {check.detail})")
        print(f"  target {check.target}: {check.verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
