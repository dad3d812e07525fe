"""Both Responses adapters, built by the container, against the offline endpoint over real sockets:
every fault scenario gives its answer or its typed error, in both stream dialects."""

from __future__ import annotations

from typing import TypeVar

import attrs
import pytest

from adapters.offline import SCENARIOS, OfflineResponsesServer
from adapters.responses import ResponsesJsonAdapter, ResponsesSseAdapter
from domain import (
    ChatError,
    ChatMessage,
    ChatPort,
    ChatResponse,
    ChatTransportError,
    FunctionCallContent,
    MalformedResponseError,
    ReasoningContent,
    ResponseFailedError,
    TextContent,
)
from tests.integration.offline.support import API_KEY, ECHO, GREETING, ContainerFactory, bounded

E = TypeVar("E", bound=ChatError)

ADAPTERS = pytest.mark.parametrize("streaming", [True, False], ids=["sse", "json"])

# Every scenario, by the outcome the contract gives it when no tools are offered.
ANSWERED = (
    "",
    "malformed-arguments",
    "ungrounded-citation",
    "sse-for-json",
    "json-for-sse",
    "litellm",
    "unknown-events",
)
FAILED = ("response-failed", "error-event", "error-event-nested")
MALFORMED = ("truncated-stream", "garbage-data")
HTTP_ERRORS = {"http-400": 400, "http-401": 401, "http-429": 429, "http-500": 500}
OUTCOMES = {
    "answered": ANSWERED,
    "incomplete": ("incomplete",),
    "huge": ("huge-arguments",),
    "failed": FAILED,
    "malformed": MALFORMED,
    "http": tuple(HTTP_ERRORS),
    "transport": ("connection-reset", "stall"),
}
HUGE_ARGUMENTS = '{"padding": "' + "x" * (5 * 1024 * 1024) + '"}'


def model_for(scenario: str) -> str:
    return f"offline:{scenario}" if scenario else "offline"


async def ask(chat: ChatPort) -> ChatResponse:
    return await bounded(chat.get_response((ChatMessage.user(GREETING),)))


async def raised(error: type[E], chat: ChatPort) -> E:
    """The error of ``error``'s type that asking ``chat`` the greeting raises."""
    with pytest.raises(error) as caught:
        await ask(chat)
    return caught.value


def said(response: ChatResponse) -> list[tuple[str, object]]:
    """What the model said, without the per-request ids the endpoint derives from its request id (the
    provider's item, which holds its id, included)."""
    return [
        (
            message.role,
            attrs.evolve(part, item_id=None, provider_item=None)
            if isinstance(part, FunctionCallContent)
            else attrs.evolve(part, provider_item=None)
            if isinstance(part, TextContent | ReasoningContent)
            else part,
        )
        for message in response.messages
        for part in message.contents
    ]


def assert_is_what_had_arrived(partial: ChatResponse | None, streaming: bool) -> None:
    """A stream's partial output is the first part of the answer; a JSON body has none to give."""
    if streaming:
        assert partial is not None
        assert partial.text
        assert ECHO.startswith(partial.text)
        assert partial.text != ECHO


def test_every_scenario_has_an_expected_outcome() -> None:
    # A new scenario must be given an expected outcome here before the suite passes.
    covered = [scenario for group in OUTCOMES.values() for scenario in group if scenario]
    assert sorted(covered) == sorted(SCENARIOS)


@ADAPTERS
def test_the_container_builds_the_adapter_the_setting_asks_for(
    containers: ContainerFactory, streaming: bool
) -> None:
    chat = containers("offline", streaming=streaming).chat_adapter()
    assert type(chat) is (ResponsesSseAdapter if streaming else ResponsesJsonAdapter)
    assert API_KEY not in repr(chat)


@ADAPTERS
@pytest.mark.parametrize("scenario", ANSWERED)
async def test_scenarios_that_answer_give_the_whole_answer(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool, scenario: str
) -> None:
    model = model_for(scenario)

    response = await ask(containers(model, streaming=streaming).chat())

    (request,) = server.requests
    assert request.body["stream"] is streaming
    assert response.text == ECHO
    assert response.function_calls == ()
    assert (response.status, response.finish_reason) == ("completed", "stop")
    assert response.model_id == model
    assert response.response_id is not None
    assert response.response_id.startswith("resp_")
    assert response.usage is not None
    usage = response.usage
    assert usage.input_tokens == 3  # the three words of the greeting
    assert usage.output_tokens is not None
    assert usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


@pytest.mark.parametrize("scenario", ["", "litellm", "incomplete", "huge-arguments"])
async def test_both_adapters_fold_the_same_answer(containers: ContainerFactory, scenario: str) -> None:
    streamed = await ask(containers(model_for(scenario), streaming=True).chat())
    plain = await ask(containers(model_for(scenario), streaming=False).chat())

    # Ids and timestamps differ per request; everything the model said must not.
    assert said(streamed) == said(plain)
    assert said(streamed)
    assert (streamed.status, streamed.finish_reason, streamed.usage) == (
        plain.status,
        plain.finish_reason,
        plain.usage,
    )


@ADAPTERS
async def test_incomplete_keeps_the_partial_text_with_finish_reason_length(
    containers: ContainerFactory, streaming: bool
) -> None:
    response = await ask(containers("offline:incomplete", streaming=streaming).chat())

    assert (response.status, response.finish_reason) == ("incomplete", "length")
    assert response.text
    assert ECHO.startswith(response.text)
    assert response.text != ECHO


@ADAPTERS
async def test_a_five_megabyte_argument_string_arrives_byte_for_byte(
    containers: ContainerFactory, streaming: bool
) -> None:
    response = await ask(containers("offline:huge-arguments", streaming=streaming).chat())

    (call,) = response.function_calls
    assert call.name == "offline_payload"
    assert call.raw_arguments == HUGE_ARGUMENTS
    assert call.parse_error is None
    assert call.arguments == {"padding": "x" * (5 * 1024 * 1024)}
    assert response.text == ECHO
    assert response.finish_reason == "tool_calls"


@ADAPTERS
@pytest.mark.parametrize("scenario", FAILED)
async def test_failed_responses_raise_with_the_provider_code(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool, scenario: str
) -> None:
    error = await raised(ResponseFailedError, containers(model_for(scenario), streaming=streaming).chat())

    assert error.code == "server_error"
    assert "failed on purpose" in error.message
    assert error.request_id == server.requests[-1].request_id
    assert error.partial is not None
    assert error.response_id == error.partial.response_id
    assert error.response_id is not None
    assert error.model_id == model_for(scenario)
    assert_is_what_had_arrived(error.partial, streaming)
    if not streaming:
        assert error.partial.status == "failed"


@ADAPTERS
@pytest.mark.parametrize("scenario", MALFORMED)
async def test_unreadable_bodies_raise_malformed_with_what_had_arrived(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool, scenario: str
) -> None:
    error = await raised(MalformedResponseError, containers(model_for(scenario), streaming=streaming).chat())

    assert error.request_id == server.requests[-1].request_id
    if streaming:
        assert_is_what_had_arrived(error.partial, streaming)
        assert error.partial is not None
        assert error.partial.status == "in_progress"
        assert error.response_id == error.partial.response_id
    else:
        assert error.partial is None  # half a JSON document decodes to nothing


@pytest.mark.parametrize("scenario", MALFORMED)
async def test_the_json_adapter_keeps_partial_output_of_a_stream_it_did_not_ask_for(
    containers: ContainerFactory, scenario: str
) -> None:
    error = await raised(
        MalformedResponseError, containers(f"offline:sse-for-json+{scenario}", streaming=False).chat()
    )

    assert_is_what_had_arrived(error.partial, streaming=True)


@ADAPTERS
@pytest.mark.parametrize(("scenario", "status"), HTTP_ERRORS.items())
async def test_http_errors_carry_status_attempts_and_request_id(
    containers: ContainerFactory, server: OfflineResponsesServer, streaming: bool, scenario: str, status: int
) -> None:
    error = await raised(
        ChatTransportError, containers(model_for(scenario), streaming=streaming, max_retries=1).chat()
    )

    retried = status in (429, 500)  # the SDK retries rate limits and server errors, not client errors
    assert error.status_code == status
    assert error.attempts == len(server.requests) == (2 if retried else 1)
    assert error.request_id == server.requests[-1].request_id
    assert error.partial is None
    assert f"HTTP {status}" in error.message
    assert API_KEY not in f"{error} {error!r}"


@ADAPTERS
@pytest.mark.parametrize(
    ("scenario", "max_retries", "timeout_seconds", "said", "attempts"),
    [
        # A body broken in transit is asked for again within max_retries, on either path.
        ("connection-reset", 1, 10.0, "connection", 2),
        # Long enough for the first half of the body to arrive on a busy machine, short for the suite.
        ("stall", 0, 1.0, "timed out", 1),
    ],
)
async def test_a_broken_or_stalled_body_is_a_transport_error_with_what_had_arrived(
    containers: ContainerFactory,
    server: OfflineResponsesServer,
    streaming: bool,
    scenario: str,
    max_retries: int,
    timeout_seconds: float,
    said: str,
    attempts: int,
) -> None:
    chat = containers(
        model_for(scenario), streaming=streaming, max_retries=max_retries, timeout_seconds=timeout_seconds
    ).chat()

    error = await raised(ChatTransportError, chat)

    assert error.status_code is None
    assert said in error.message
    assert error.attempts == len(server.requests) == attempts
    assert_is_what_had_arrived(error.partial, streaming)
    # The request id comes with the headers, before the body breaks: the last attempt's is kept.
    assert error.request_id == server.requests[-1].request_id


@ADAPTERS
async def test_every_error_message_is_safe_to_show(containers: ContainerFactory, streaming: bool) -> None:
    errors: list[ChatError] = []
    for scenario in (*FAILED, *MALFORMED, "http-401", "connection-reset"):
        try:
            await ask(containers(model_for(scenario), streaming=streaming).chat())
        except ChatError as caught:
            errors.append(caught)

    assert len(errors) == 7
    for error in errors:
        shown = f"{error} {error!r} {error.partial!r}"
        assert API_KEY not in shown
        assert "Traceback" not in shown
