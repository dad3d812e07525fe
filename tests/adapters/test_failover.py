"""Failover (``adapters.failover``): which failures go on to the next target, in what order, within one
deadline, never after a streamed update, and what the answer and the final error say."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import pytest
from dependency_injector import providers

from adapters.container import Container
from adapters.failover import FailoverChat, Target, failed_targets, fails_over
from adapters.rate_limits import RateLimitedChat, RateLimiter
from adapters.redaction import Redactor
from adapters.responses import ResponsesJsonAdapter, ResponsesSseAdapter
from adapters.scripted import ScriptedChat, ScriptedTurn
from application import dumps, loads
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    ChatTransportError,
    MalformedResponseError,
    ResponseFailedError,
    TextContent,
)

MESSAGES = (ChatMessage.user("Summarize the meeting."),)
# LiteLLM's proxy for a model it does not serve, as the adapters map it (HTTP 400, the proxy's message).
LITELLM_UNKNOWN_MODEL = (
    "HTTP 400 from the Responses endpoint (400): /responses: Invalid model name passed in model=gpt-9. "
    "Call `/v1/models` to view available models for your key."
)
OPENAI_UNKNOWN_MODEL = (
    "HTTP 404 from the Responses endpoint (model_not_found): The model `gpt-9` does not exist or you do "
    "not have access to it."
)

GOES_ON = {
    "connection": ChatTransportError("the connection to the Responses endpoint failed", attempts=3),
    "timeout": ChatTransportError("the request took longer than agent.deadline_seconds (30 s)"),
    "500": ChatTransportError("HTTP 500 from the Responses endpoint: boom", status_code=500),
    "503": ChatTransportError("HTTP 503 from the Responses endpoint: overloaded", status_code=503),
    "429": ChatTransportError("HTTP 429 from the Responses endpoint: slow down", status_code=429),
    "404 route": ChatTransportError("HTTP 404 from the Responses endpoint: Not Found", status_code=404),
    "404 model": ChatTransportError(OPENAI_UNKNOWN_MODEL, status_code=404),
    "400 unknown model": ChatTransportError(LITELLM_UNKNOWN_MODEL, status_code=400),
    "400 no deployments": ChatTransportError(
        "HTTP 400 from the Responses endpoint: No deployments available for selected model", status_code=400
    ),
}
STAYS = {
    "400 bad request": ChatTransportError(
        "HTTP 400 from the Responses endpoint (invalid_request_error): 'input' is required", status_code=400
    ),
    "400 previous response": ChatTransportError(
        "HTTP 400 from the Responses endpoint: Previous response with id 'resp_1' not found.", status_code=400
    ),
    "401": ChatTransportError("HTTP 401 from the Responses endpoint: bad key", status_code=401),
    "302": ChatTransportError("HTTP 302 from the Responses endpoint: redirect", status_code=302),
    "failed": ResponseFailedError("the response failed: server_error", code="server_error"),
    "malformed": MalformedResponseError("the stream ended before its terminal event"),
    "chat": ChatError("the conversation holds too many items"),
}


def _targets(*chats: ChatPort) -> list[Target]:
    names = ["primary", *(f"fallback-{number}" for number in range(1, len(chats)))]
    return [Target(name, chat, f"model-{name}") for name, chat in zip(names, chats, strict=True)]


def _failover(*chats: ChatPort, deadline_seconds: float = 30.0) -> FailoverChat:
    return FailoverChat(_targets(*chats), deadline_seconds=deadline_seconds)


async def _ask(chat: FailoverChat, *, stream: bool, options: ChatOptions | None = None) -> ChatResponse:
    if stream:
        return ChatResponse.from_updates([u async for u in chat.get_streaming_response(MESSAGES, options)])
    return await chat.get_response(MESSAGES, options)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", list(GOES_ON))
async def test_each_failure_of_the_gateway_goes_on_to_the_next_target(kind: str, stream: bool) -> None:
    primary = ScriptedChat(GOES_ON[kind])
    fallback = ScriptedChat(ScriptedTurn(text="From the fallback."))
    answer = await _ask(_failover(primary, fallback), stream=stream)
    assert fails_over(GOES_ON[kind])
    assert answer.text == "From the fallback."
    assert answer.served_by == "fallback-1"
    assert (len(primary.requests), len(fallback.requests)) == (1, 1)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", list(STAYS))
async def test_a_failure_another_target_would_answer_alike_is_raised_as_it_came(
    kind: str, stream: bool
) -> None:
    fallback = ScriptedChat(ScriptedTurn(text="never asked"))
    with pytest.raises(ChatError) as raised:
        await _ask(_failover(ScriptedChat(STAYS[kind]), fallback), stream=stream)
    assert not fails_over(STAYS[kind])
    assert raised.value is STAYS[kind]
    assert fallback.requests == ()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_primary_answers_when_it_can_and_says_so(stream: bool) -> None:
    primary = ScriptedChat(ScriptedTurn(text="From the primary."))
    fallback = ScriptedChat()
    answer = await _ask(_failover(primary, fallback), stream=stream)
    assert (answer.text, answer.served_by) == ("From the primary.", "primary")
    assert fallback.requests == ()


async def test_a_stream_that_handed_an_update_is_never_sent_elsewhere() -> None:
    partial = ChatResponse(
        (ChatMessage("assistant", (TextContent("Half an answer"),)),), response_id="resp_1"
    )
    broken = ChatTransportError("the connection broke mid-body", partial=partial)
    fallback = ScriptedChat(ScriptedTurn(text="never asked"))
    received: list[str] = []

    async def read() -> None:
        async for update in _failover(ScriptedChat(broken), fallback).get_streaming_response(MESSAGES):
            received.append(update.text)

    with pytest.raises(ChatTransportError) as raised:
        await read()
    assert raised.value is broken
    assert "".join(received) == "Half an answer"
    assert fallback.requests == ()


async def test_a_stream_that_failed_before_any_update_goes_on() -> None:
    # The same break, but before anything of the answer was handed over: the next target is asked.
    fallback = ScriptedChat(ScriptedTurn(text="Whole answer."))
    chat = _failover(ScriptedChat(ChatTransportError("refused")), fallback)
    updates = [update async for update in chat.get_streaming_response(MESSAGES)]
    assert ChatResponse.from_updates(updates).text == "Whole answer."
    assert updates[0].served_by == "fallback-1"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_every_target_failing_raises_the_last_error_listing_every_attempt(stream: bool) -> None:
    errors = [
        ChatTransportError("HTTP 503 from the Responses endpoint: overloaded", status_code=503),
        ChatTransportError("the connection to the Responses endpoint failed", attempts=3),
        ChatTransportError("HTTP 429 from the Responses endpoint: slow down", status_code=429, attempts=2),
    ]
    with pytest.raises(ChatTransportError) as raised:
        await _ask(_failover(*(ScriptedChat(error) for error in errors)), stream=stream)
    error = raised.value
    # The last error's class and fields, a message naming every target's failure, each kept.
    assert (error.status_code, error.attempts) == (429, 2)
    assert error.message.startswith(errors[-1].message)
    for name, original in zip(("primary", "fallback-1", "fallback-2"), errors, strict=True):
        assert f"{name}: ChatTransportError: {original.message}" in error.message
    assert [(tried.name, tried.error) for tried in failed_targets(error)] == list(
        zip(("primary", "fallback-1", "fallback-2"), errors, strict=True)
    )
    assert error.__cause__ is errors[-1]
    assert str(error) == error.message


async def test_a_fallback_failing_alike_for_all_ends_the_failover_listing_both() -> None:
    refused = ChatTransportError("HTTP 401 from the Responses endpoint: bad key", status_code=401)
    third = ScriptedChat(ScriptedTurn(text="never asked"))
    chat = _failover(ScriptedChat(GOES_ON["503"]), ScriptedChat(refused), third)
    with pytest.raises(ChatTransportError) as raised:
        await chat.get_response(MESSAGES)
    assert raised.value.status_code == 401
    assert [tried.name for tried in failed_targets(raised.value)] == ["primary", "fallback-1"]
    assert third.requests == ()


class _Clock:
    """A clock the test moves: a target that fails after ``seconds`` moves it on by that much."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class _Slow:
    """A target that takes ``seconds`` of the clock to fail, recording the deadline it was given."""

    def __init__(self, clock: _Clock, seconds: float, error: ChatError) -> None:
        self.clock, self.seconds, self.error = clock, seconds, error
        self.deadlines: list[float | None] = []

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        self.deadlines.append(options.deadline_seconds if options else None)
        self.clock.now += self.seconds
        raise self.error

    def get_streaming_response(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None):  # type: ignore[no-untyped-def]  # only whole answers are asked of it here
        raise NotImplementedError


async def test_the_deadline_covers_every_target_together() -> None:
    clock = _Clock()
    first = _Slow(clock, 12.0, GOES_ON["503"])
    second = _Slow(clock, 10.0, GOES_ON["connection"])
    third = ScriptedChat(ScriptedTurn(text="never asked"))
    targets = _targets(first, second, third)
    # The second target bounds its own share too: never more than its deadline_seconds.
    targets[1] = Target("fallback-1", second, "m", deadline_seconds=5.0)
    chat = FailoverChat(targets, deadline_seconds=60.0, clock=clock)
    with pytest.raises(ChatTransportError) as raised:
        await chat.get_response(MESSAGES, ChatOptions(deadline_seconds=20.0))
    # 20 s for all: the first had them all, the second what was left (8 s) within its own 5 s, and
    # none was left for the third (12 + 10 s had passed).
    assert first.deadlines == [20.0]
    assert second.deadlines == [5.0]
    assert third.requests == ()
    assert [tried.name for tried in failed_targets(raised.value)] == ["primary", "fallback-1"]


async def test_a_stream_is_not_sent_on_once_the_deadline_has_passed() -> None:
    clock = _Clock()
    slow = _Slow(clock, 31.0, GOES_ON["503"])
    fallback = ScriptedChat(ScriptedTurn(text="never asked"))

    async def stream_of_slow(messages: Sequence[ChatMessage], options: ChatOptions | None = None):  # type: ignore[no-untyped-def]  # an async generator standing in for the target's stream
        await slow.get_response(messages, options)
        yield ChatResponseUpdate()  # pragma: no cover - the target fails before any update

    slow.get_streaming_response = stream_of_slow  # type: ignore[method-assign]  # this target streams by failing
    chat = FailoverChat(_targets(slow, fallback), deadline_seconds=30.0, clock=clock)
    with pytest.raises(ChatTransportError) as raised:
        await _ask(chat, stream=True)
    assert raised.value is GOES_ON["503"]
    assert fallback.requests == ()


def test_the_decorators_show_no_key_in_their_reprs() -> None:
    chat = ScriptedChat()
    limiter = RateLimiter(60, 1_000)
    assert repr(limiter) == "RateLimiter(requests_per_minute=60, tokens_per_minute=1000)"
    assert repr(RateLimitedChat(chat, limiter, deadline_seconds=1.0)).startswith("RateLimitedChat(")
    assert repr(_failover(chat, chat)) == "FailoverChat(primary, fallback-1)"


async def test_a_fallback_is_asked_for_its_own_model_and_the_primary_for_the_one_asked() -> None:
    primary = ScriptedChat(GOES_ON["500"])
    fallback = ScriptedChat(ScriptedTurn(text="ok"))
    await _failover(primary, fallback).get_response(
        MESSAGES, ChatOptions(model="gpt-asked", initiator="agent")
    )
    [asked_primary] = primary.requests
    [asked_fallback] = fallback.requests
    assert asked_primary.options is not None
    assert asked_primary.options.model == "gpt-asked"
    assert asked_fallback.options is not None
    assert asked_fallback.options.model is None
    # Everything else about the request goes as it was asked.
    assert asked_fallback.options.initiator == "agent"


async def test_the_log_says_which_target_failed_and_which_answered(caplog: pytest.LogCaptureFixture) -> None:
    chat = _failover(ScriptedChat(GOES_ON["503"]), ScriptedChat(ScriptedTurn(text="ok")))
    with caplog.at_level(logging.INFO, logger="adapters.failover"):
        await chat.get_response(MESSAGES)
    failed, answered = (r for r in caplog.records if r.name == "adapters.failover")
    assert (failed.levelno, failed.target, failed.status_code, failed.next_target) == (  # type: ignore[attr-defined]  # extra fields
        logging.WARNING,
        "primary",
        503,
        "fallback-1",
    )
    assert answered.levelno == logging.INFO
    assert answered.getMessage() == "Answered by fallback-1 (model model-fallback-1) after 1 failed target(s)"


async def test_the_listed_failures_are_cut_of_every_target_key() -> None:
    # Each adapter cuts its own key; the failover cuts every target's from what it writes itself.
    keys = ("sk-primary-0123456789", "sk-fallback-9876543210")
    errors = [ChatTransportError(f"HTTP 500: echoed {keys[1]}", status_code=500), GOES_ON["503"]]
    chat = FailoverChat(
        _targets(*(ScriptedChat(error) for error in errors)), deadline_seconds=30, redactor=Redactor(keys)
    )
    with pytest.raises(ChatTransportError) as raised:
        await chat.get_response(MESSAGES)
    assert keys[1] not in str(raised.value)
    assert keys[1] not in repr(raised.value)
    assert "[REDACTED]" in str(raised.value)


def test_a_failover_needs_a_target() -> None:
    with pytest.raises(ValueError, match="at least one target"):
        FailoverChat([], deadline_seconds=1.0)


# ---------------------------------------------------------------- in the container


def _container(**agent: object) -> Container:
    container = Container()
    container.environ.override(providers.Object({"BACKUP": "sk-backup-from-env-5151"}))
    container.config.from_dict(
        {
            "agent": {
                "base_url": "http://127.0.0.1:9/v1",
                "api_key": "sk-main-4242",
                "telemetry": False,
                **agent,
            }
        }
    )
    return container


async def test_the_container_builds_each_fallback_as_an_adapter_of_its_own_closed_with_it() -> None:
    fallbacks = [
        {"base_url": "http://127.0.0.1:9/v1", "model": "m1", "api_key": "sk-one-1111"},
        {"base_url": "http://127.0.0.1:8/v1", "model": "m2", "api_key_env": "BACKUP", "use_streaming": False},
    ]
    container = _container(fallbacks=fallbacks)
    first, second = container.fallback_targets()
    # Each fallback's HTTP and SDK clients are the container's to close.
    assert len(container.closables().closers) == 4
    assert (first.name, first.model, type(first.chat)) == ("fallback-1", "m1", ResponsesSseAdapter)
    assert (second.name, second.model, type(second.chat)) == ("fallback-2", "m2", ResponsesJsonAdapter)
    chat = container.chat()
    assert isinstance(chat, FailoverChat)
    assert [target.name for target in chat.targets] == ["primary", "fallback-1", "fallback-2"]
    assert "sk-" not in repr(chat) + repr(first) + repr(second)
    await container.aclose()
    assert container.closables().closers == []


async def test_without_fallbacks_or_limits_nothing_is_added_to_the_chain() -> None:
    container = _container()
    assert isinstance(container.chat(), ResponsesSseAdapter)
    assert container.rate_limiter() is None
    await container.aclose()


async def test_a_host_can_put_targets_of_its_own_in_the_container() -> None:
    container = _container()
    container.chat_adapter.override(providers.Object(ScriptedChat(GOES_ON["503"])))
    backup = ScriptedChat(ScriptedTurn(text="From a host's target."))
    container.fallback_targets.override(providers.Object((Target("backup", backup, "m"),)))
    answer = await container.chat().get_response(MESSAGES)
    assert (answer.text, answer.served_by) == ("From a host's target.", "backup")
    await container.aclose()


def test_the_target_that_answered_is_kept_in_a_run_document() -> None:
    answer = ChatResponse((ChatMessage.assistant("ok"),), response_id="resp_1", served_by="fallback-1")
    assert loads(dumps(answer)) == answer
    assert json.loads(dumps(answer))["value"]["served_by"] == "fallback-1"
