"""The adapters watch each HTTP attempt through a copy of the client, leaving the given one as it was."""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import openai
import pytest

from adapters.responses import ResponsesSettings, ResponsesSseAdapter
from adapters.responses.attempts import observed
from domain import ChatMessage
from tests.adapters.support import API_KEY, BASE_URL, JSON, Recorder, answer, message_item, response_document

OK = json.dumps(response_document([message_item("msg_1", "ok")]))


async def test_the_original_clients_headers_hooks_and_transport_still_apply() -> None:
    recorder = Recorder([answer(OK, JSON)])
    hooked: list[str] = []

    async def hook(request: httpx.Request) -> None:
        hooked.append(request.url.path)

    http_client = httpx.AsyncClient(
        transport=httpx.MockTransport(recorder),
        headers={"X-Team": "meetings"},
        event_hooks={"request": [hook]},
    )
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=BASE_URL, http_client=http_client, max_retries=0)  # type: ignore[arg-type]  # a legacy httpx client, as the container passes
    adapter = ResponsesSseAdapter(client, ResponsesSettings(model="gpt-test"))

    response = await adapter.get_response([ChatMessage.user("hi")])

    assert response.text == "ok"
    assert hooked == ["/v1/responses"]
    (request,) = recorder.requests
    assert request.headers["x-team"] == "meetings"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    original: object = client._client
    assert original is http_client


def test_observing_twice_wraps_once() -> None:
    client = openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url=BASE_URL,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(Recorder([answer(OK)]))),  # type: ignore[arg-type]  # a legacy httpx client, as the container passes
    )

    once = observed(client, max_response_bytes=1 << 20)

    assert once is not client
    assert observed(once, max_response_bytes=1 << 20) is once


async def test_concurrent_requests_log_only_their_own_attempts(caplog: pytest.LogCaptureFixture) -> None:
    def by_question(request: httpx.Request) -> httpx.Response:
        question = json.loads(request.content)["input"][0]["content"][0]["text"]
        retry = request.headers["x-stainless-retry-count"]
        if question == "flaky" and retry == "0":
            return answer("{}", JSON, 503)
        return answer(OK, JSON)

    recorder = Recorder([by_question])
    client = openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url=BASE_URL,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(recorder)),  # type: ignore[arg-type]  # a legacy httpx client, as the container passes
        max_retries=1,
    )
    adapter = ResponsesSseAdapter(client, ResponsesSettings(model="gpt-test"))

    with caplog.at_level(logging.INFO, logger="adapters.responses"):
        await asyncio.gather(
            adapter.get_response([ChatMessage.user("flaky")]),
            adapter.get_response([ChatMessage.user("steady question")]),
        )

    sizes = sorted({r.__dict__["request_digest"]["byte_size"] for r in caplog.records})
    assert len(caplog.records) == 2
    assert len(sizes) == 1
    assert [r.getMessage() for r in caplog.records] == [
        "Responses attempt 1 failed (503)",
        "Responses request succeeded after 2 attempts",
    ]


async def test_closing_the_adapters_copy_leaves_the_given_client_open() -> None:
    http_client = httpx.AsyncClient(transport=httpx.MockTransport(Recorder([answer(OK)])))
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=BASE_URL, http_client=http_client)  # type: ignore[arg-type]  # a legacy httpx client, as the container passes

    await observed(client, max_response_bytes=1 << 20).close()

    assert not http_client.is_closed
    response = await observed(client, max_response_bytes=1 << 20).responses.create(
        model="m", input="outside any adapter"
    )
    assert response.id == "resp_test"
