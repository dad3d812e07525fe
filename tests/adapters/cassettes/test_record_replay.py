"""Record and replay: a run on a real server becomes a cassette that answers the same run with no server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.cassettes import CassetteError, Recorder, ReplayChat, ReplayMismatchError, load_cassettes
from adapters.container import Container
from adapters.offline import OfflineResponsesServer
from adapters.responses import ResponsesSettings
from application import MeetingSummary
from domain import ChatMessage, ChatResponse
from tests.support.gateway import Pieces, streamed
from tests.support.upstreams import FakeServer, echo_route

ROOT = Path(__file__).resolve().parents[3]
TRANSCRIPT = (ROOT / "examples" / "standup-transcript.txt").read_text(encoding="utf-8")
KEY = "sk-PLANTED-cassette-5521"


async def _summarize(agent: dict[str, Any]) -> MeetingSummary:
    async with Container() as container:
        container.config.from_dict({"agent": {"telemetry": False, **agent}})
        return await container.summary_agent().summarize(TRANSCRIPT)


def _lines(folder: Path) -> list[dict[str, Any]]:
    (cassette,) = folder.iterdir()
    return [json.loads(line) for line in cassette.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("recorded_streaming", [True, False], ids=["recorded-sse", "recorded-json"])
@pytest.mark.parametrize("replayed_streaming", [True, False], ids=["replayed-sse", "replayed-json"])
async def test_a_recorded_run_replays_to_the_same_summary_with_no_server(
    tmp_path: Path, recorded_streaming: bool, replayed_streaming: bool
) -> None:
    with OfflineResponsesServer() as server:
        live = await _summarize(
            {
                "base_url": server.base_url,
                "api_key": KEY,
                "record_to": str(tmp_path),
                "use_streaming": recorded_streaming,
            }
        )
    # The server is gone: only the cassette can answer now.
    replayed = await _summarize({"replay_from": str(tmp_path), "use_streaming": replayed_streaming})

    assert replayed == live
    assert live.action_items, "the demo run records action items: the comparison must not be of empties"
    lines = _lines(tmp_path)
    assert lines[0]["format"] == "meeting-agents-cassette"
    assert len(lines) - 1 == len(live.run.responses)
    content_type = lines[1]["response"]["headers"]["content-type"]
    assert content_type.startswith("text/event-stream" if recorded_streaming else "application/json")


async def test_a_request_the_cassette_does_not_hold_is_a_mismatch_with_a_diff(tmp_path: Path) -> None:
    with OfflineResponsesServer() as server:
        await _summarize({"base_url": server.base_url, "api_key": KEY, "record_to": str(tmp_path)})

    with pytest.raises(ReplayMismatchError) as raised:
        await _summarize({"replay_from": str(tmp_path), "model": "another-model"})

    assert '-  "model": "offline"' in raised.value.diff or '- "model": "offline"' in raised.value.diff
    assert '"model": "another-model"' in raised.value.diff
    assert "no such POST /v1/responses request" in str(raised.value)


async def test_each_recorded_exchange_answers_once(tmp_path: Path) -> None:
    with OfflineResponsesServer() as server:
        async with Container() as container:
            container.config.from_dict(
                {
                    "agent": {
                        "base_url": server.base_url,
                        "api_key": KEY,
                        "record_to": str(tmp_path),
                        "telemetry": False,
                    }
                }
            )
            first = await container.chat().get_response([ChatMessage.user("Say hello.")])
    async with ReplayChat(tmp_path, settings=ResponsesSettings(model="offline")) as chat:
        again = await chat.get_response([ChatMessage.user("Say hello.")])
        with pytest.raises(ReplayMismatchError, match="1 time"):
            await chat.get_response([ChatMessage.user("Say hello.")])

    assert _same_answer(again, first)


def _same_answer(one: ChatResponse, other: ChatResponse) -> bool:
    return one.text == other.text and one.response_id == other.response_id and one.usage == other.usage


async def test_a_key_the_gateway_echoes_is_cut_from_the_cassette(tmp_path: Path) -> None:
    with FakeServer(echo_route) as echo:
        async with Container() as container:
            container.config.from_dict(
                {
                    "agent": {
                        "base_url": f"{echo.base_url}/v1",
                        "api_key": KEY,
                        "model": "echo-text",
                        "record_to": str(tmp_path),
                        "telemetry": False,
                    }
                }
            )
            answer = await container.chat().get_response([ChatMessage.user("hi")])

    assert KEY in answer.text, "the echo server must echo the key for this test to mean anything"
    written = "\n".join(json.dumps(line) for line in _lines(tmp_path))
    assert KEY not in written
    assert "[REDACTED]" in written
    assert "authorization" not in written.lower()


async def test_a_body_the_caller_stops_reading_is_kept_as_incomplete(tmp_path: Path) -> None:
    body = b"data: " + b"x" * 100 + b"\n\n"

    def answer(request: httpx.Request) -> httpx.Response:
        return streamed(Pieces(body * 50, size=len(body)))

    recorder = Recorder(tmp_path, httpx.MockTransport(answer))
    async with (
        httpx.AsyncClient(transport=recorder) as client,
        client.stream("POST", "http://127.0.0.1:9/v1/responses", json={"model": "m"}) as response,
    ):
        async for _ in response.aiter_raw():
            break
    (exchange,) = load_cassettes(tmp_path)
    assert not exchange.complete
    assert exchange.response_body == body


def test_a_cassette_of_another_format_is_refused_naming_its_line(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    cassette.write_text(
        '{"format": "meeting-agents-cassette", "version": 1}\n{"request": 3}\n', encoding="utf-8"
    )
    with pytest.raises(CassetteError, match=r"run\.jsonl:2: the line|run\.jsonl:2: request"):
        load_cassettes(tmp_path)
    cassette.write_text('{"format": "something-else"}\n', encoding="utf-8")
    with pytest.raises(CassetteError, match="not a meeting-agents-cassette file"):
        load_cassettes(cassette)
    with pytest.raises(CassetteError, match="no such cassette"):
        load_cassettes(tmp_path / "missing")


def test_the_package_root_names_the_record_and_replay_adapters() -> None:
    import adapters

    assert (adapters.Recorder, adapters.ReplayChat, adapters.ReplayMismatchError) == (
        Recorder,
        ReplayChat,
        ReplayMismatchError,
    )
    with pytest.raises(AttributeError):
        _ = adapters.NoSuchThing


def test_a_diff_shows_where_a_long_line_first_differs() -> None:
    from adapters.cassettes.format import request_diff

    said = "Ana: " + "and then " * 100
    diff = request_diff({"input": said + "we ship."}, {"input": said + "we wait.", "stream": True})

    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert [line[:4] for line in changed] == ["-...", "+..."]
    assert changed[0].endswith('we ship."')
    assert changed[1].endswith('we wait."')
    assert "stream" not in diff, "what a replay ignores is not a difference"
