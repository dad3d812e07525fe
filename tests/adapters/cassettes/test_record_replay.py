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


async def _recorded_hello(folder: Path) -> ChatResponse:
    """One answer of the offline stand-in to "Say hello.", recorded into ``folder``."""
    with OfflineResponsesServer() as server:
        async with Container() as container:
            container.config.from_dict(
                {
                    "agent": {
                        "base_url": server.base_url,
                        "api_key": KEY,
                        "record_to": str(folder),
                        "telemetry": False,
                    }
                }
            )
            return await container.chat().get_response([ChatMessage.user("Say hello.")])


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
    first = await _recorded_hello(tmp_path)
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


async def test_a_replay_streams_the_recorded_answer_as_the_adapter_would(tmp_path: Path) -> None:
    whole = await _recorded_hello(tmp_path)
    async with ReplayChat(tmp_path, settings=ResponsesSettings(model="offline")) as chat:
        updates = [update async for update in chat.get_streaming_response([ChatMessage.user("Say hello.")])]
        with pytest.raises(ReplayMismatchError, match="no such POST"):
            async for _ in chat.get_streaming_response([ChatMessage.user("Say goodbye.")]):
                pass

    assert updates, "the recorded answer streams in updates"
    assert _same_answer(ChatResponse.from_updates(updates), whole)


def _cassette(folder: Path, *lines: object) -> Path:
    path = folder / "run.jsonl"
    header = {"format": "meeting-agents-cassette", "version": 1}
    path.write_text("".join(json.dumps(line) + "\n" for line in (header, *lines)), encoding="utf-8")
    return path


def _line(**response: object) -> dict[str, object]:
    request = {"method": "POST", "path": "/v1/responses", "headers": {}, "body": {"model": "m"}}
    return {
        "request": request,
        "response": {"status": 200, "headers": {}, "body": {"text": "{}"}, **response},
    }


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (_line(body={"bytes": "x"}), "response.body: expected"),
        (_line(status=700), "response.status: expected an HTTP status"),
        (_line(status=True), "response.status"),
        (_line(complete="yes"), "response.complete"),
        ({**_line(), "request": {"method": 1, "path": "/v1/responses"}}, "request.method: expected a string"),
        (
            {**_line(), "request": {"method": "POST", "path": "/", "headers": {"a": 1}}},
            r"request\.headers\.a",
        ),
        ("just text", "the line: expected an object"),
    ],
)
def test_a_cassette_line_of_the_wrong_shape_is_refused_naming_its_field(
    tmp_path: Path, line: object, problem: str
) -> None:
    with pytest.raises(CassetteError, match=rf"run\.jsonl:2: {problem}"):
        load_cassettes(_cassette(tmp_path, line))


def test_a_cassette_that_is_empty_or_of_another_version_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(CassetteError, match="empty; a cassette starts with its format line"):
        load_cassettes(empty)
    newer = tmp_path / "newer.jsonl"
    newer.write_text('{"format": "meeting-agents-cassette", "version": 2}\n', encoding="utf-8")
    with pytest.raises(CassetteError, match="version 2; this package reads 1"):
        load_cassettes(newer)
    (tmp_path / "broken.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(CassetteError, match=r"broken\.jsonl:1: not JSON"):
        load_cassettes(tmp_path / "broken.jsonl")
    with pytest.raises(CassetteError, match="no such cassette file or directory"):
        load_cassettes(tmp_path / "nothing-here")
    (tmp_path / "nothing-here").mkdir()
    with pytest.raises(CassetteError, match=r"holds no \.jsonl cassette"):
        load_cassettes(tmp_path / "nothing-here")


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
async def test_a_compressed_body_is_kept_decoded_and_a_binary_one_whole(tmp_path: Path, coding: str) -> None:
    import gzip
    import zlib

    text = '{"said": "caf\\u00e9 ' + KEY + '"}'
    packed = {
        "gzip": gzip.compress(text.encode()),
        "deflate": zlib.compress(text.encode()),
        "raw-deflate": zlib.compress(text.encode())[2:-4],
    }[coding]
    label = "deflate" if coding == "raw-deflate" else coding

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("binary"):
            return httpx.Response(200, content=b"\xff\xfe" + KEY.encode("latin-1"))
        return httpx.Response(200, content=packed, headers={"content-encoding": label})

    recorder = Recorder(tmp_path, httpx.MockTransport(answer), secrets=[KEY])
    async with httpx.AsyncClient(transport=recorder) as client:
        decoded = await client.post("http://127.0.0.1:9/v1/responses", content=b"not json " + KEY.encode())
        binary = await client.post("http://127.0.0.1:9/v1/binary", json={"model": "m"})
    assert KEY in decoded.text  # the caller reads what the server sent
    assert binary.content.startswith(b"\xff\xfe")
    first, second = load_cassettes(tmp_path)
    assert json.loads(first.response_body) == {"said": "café [REDACTED]"}
    assert first.request_body == "not json [REDACTED]"
    assert second.response_body == b"\xff\xfe[REDACTED]"
    assert first.complete
    assert second.complete
