"""Provider text, ids and what had arrived are scrubbed of secrets before an error or a log shows them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import openai
import pytest

from adapters.redaction import REDACTED, RedactingFilter, Redactor
from adapters.responses import ResponsesSettings
from adapters.responses.error_mapping import ProviderFailureError, map_error, scrubbed_response
from domain import (
    ChatMessage,
    ChatResponse,
    ChatTransportError,
    FunctionCallContent,
    FunctionResultContent,
    ProviderItemContent,
    ReasoningContent,
    ResponseFailedError,
    TextContent,
)
from tests.support.gateway import (
    API_KEY,
    JSON,
    Recorder,
    adapters_for,
    answer,
    message_item,
    response_document,
)

GATEWAY_TOKEN = "gw-token-9f8e7d6c"
REDACTOR = Redactor([API_KEY, GATEWAY_TOKEN])
ECHO = f"key {API_KEY} token {GATEWAY_TOKEN}"


def echoed_partial() -> ChatResponse:
    contents = (
        ReasoningContent(ECHO, item_id=f"rs_{API_KEY}", encrypted_content=ECHO, summary=(ECHO,)),
        TextContent(ECHO),
        FunctionCallContent.parse(call_id=f"call_{API_KEY}", name="f", raw_arguments=json.dumps({"k": ECHO})),
        ProviderItemContent("mystery", json.dumps({"type": "mystery", "echo": ECHO}), item_id=GATEWAY_TOKEN),
    )
    return ChatResponse(
        messages=(ChatMessage("assistant", contents),),
        response_id=f"resp_{API_KEY}",
        model_id=f"model-{GATEWAY_TOKEN}",
        status="failed",
    )


def test_a_failure_the_provider_reported_shows_no_secret_in_any_field() -> None:
    finding = ProviderFailureError(code=ECHO, message=ECHO, fallback="failed", partial=echoed_partial())

    error = map_error(finding, request_id=f"req_{API_KEY}", redactor=REDACTOR)

    assert isinstance(error, ResponseFailedError)
    shown = repr((error, vars(error), error.partial))
    assert API_KEY not in shown
    assert GATEWAY_TOKEN not in shown
    assert error.message == f"key {REDACTED} token {REDACTED}"
    assert (error.code, error.response_id, error.model_id, error.request_id) == (
        f"key {REDACTED} token {REDACTED}",
        f"resp_{REDACTED}",
        f"model-{REDACTED}",
        f"req_{REDACTED}",
    )
    assert error.partial is not None
    reasoning, _, call, item = error.partial.messages[0].contents
    assert isinstance(reasoning, ReasoningContent)
    assert reasoning.encrypted_content is None
    assert isinstance(call, FunctionCallContent)
    assert call.arguments == {"k": f"key {REDACTED} token {REDACTED}"}
    assert isinstance(item, ProviderItemContent)
    assert json.loads(item.raw_json)["echo"] == f"key {REDACTED} token {REDACTED}"


def test_a_partial_without_secrets_is_kept_as_it_arrived() -> None:
    clean = ChatResponse(messages=(ChatMessage.assistant("nothing secret"),), response_id="resp_1")

    assert scrubbed_response(clean, REDACTOR) is clean
    assert scrubbed_response(None, REDACTOR) is None
    assert scrubbed_response(echoed_partial(), Redactor.none()) == echoed_partial()


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ({"error": {"type": ECHO, "message": "denied"}}, f" (key {REDACTED} token {REDACTED}): denied"),
        (f"<html>\n  <p>{ECHO}</p>\n</html>", f": <html> <p>key {REDACTED} token {REDACTED}</p> </html>"),
        ({"error": {"code": 401}}, ": no message"),
    ],
)
async def test_a_status_errors_message_shows_the_providers_words_scrubbed(body: object, shown: str) -> None:
    text = body if isinstance(body, str) else json.dumps(body)
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Token": GATEWAY_TOKEN})

    for adapter in adapters_for(Recorder([answer(text, JSON, 403)]), settings):
        with pytest.raises(ChatTransportError) as caught:
            await adapter.get_response([ChatMessage.user("hi")])
        assert caught.value.message == f"HTTP 403 from the Responses endpoint{shown}"


@pytest.fixture
def filtered() -> Iterator[tuple[logging.Logger, list[logging.LogRecord], list[Redactor | None]]]:
    logger = logging.getLogger("tests.scrubbing.filtered")
    current: list[Redactor | None] = [REDACTOR]
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    log_filter = RedactingFilter(lambda: current[0])
    handler = Keep()
    logger.addFilter(log_filter)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, records, current
    logger.removeFilter(log_filter)
    logger.removeHandler(handler)


def test_the_log_filter_scrubs_messages_arguments_and_extra_fields(
    filtered: tuple[logging.Logger, list[logging.LogRecord], list[Redactor | None]],
) -> None:
    logger, records, _ = filtered

    logger.debug("request_id: %s", f"req {API_KEY}", extra={"echo": ECHO, "count": 3})
    logger.debug("clean %s", "value")

    echoed, clean = records
    assert echoed.getMessage() == f"request_id: req {REDACTED}"
    assert vars(echoed)["echo"] == f"key {REDACTED} token {REDACTED}"
    assert vars(echoed)["count"] == 3
    assert (clean.msg, clean.args) == ("clean %s", ("value",))


def test_the_log_filter_acts_only_where_a_redactor_applies_and_never_breaks_a_record(
    filtered: tuple[logging.Logger, list[logging.LogRecord], list[Redactor | None]],
) -> None:
    logger, records, current = filtered

    logger.debug("%s %s", API_KEY)
    current[0] = None
    logger.debug("outside a request: %s", API_KEY)

    broken, outside = records
    assert broken.getMessage() == f"%s %s (arguments: ('{REDACTED}',))"
    assert outside.getMessage() == f"outside a request: {API_KEY}"


async def test_the_sdk_and_http_libraries_log_neither_the_key_nor_header_values_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # openai 3.57 no longer logs request options (headers included) at DEBUG; this holds it to that.
    ok = json.dumps(response_document([message_item("msg_1", "ok")]))
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Token": GATEWAY_TOKEN})
    recorder = Recorder([answer("{}", JSON, 500), answer(ok, JSON)])

    with caplog.at_level(logging.DEBUG):
        for adapter in adapters_for(recorder, settings, max_retries=1):
            assert (await adapter.get_response([ChatMessage.user("hi")])).text == "ok"

    names = {record.name.split(".")[0] for record in caplog.records}
    assert {"openai", "httpx", "adapters"} <= names
    for record in caplog.records:
        shown = record.getMessage() + repr(vars(record))
        assert API_KEY not in shown
        assert GATEWAY_TOKEN not in shown
    assert all(request.headers["x-gateway-token"] == GATEWAY_TOKEN for request in recorder.requests)
    assert openai.__version__.startswith("3.")


def test_tool_results_in_what_arrived_are_scrubbed_too() -> None:
    results = (
        FunctionResultContent(f"call_{API_KEY}", {"echo": [ECHO, 3], ECHO: None}),
        FunctionResultContent("call_2", ECHO, is_error=True),
    )
    arrived = ChatResponse(messages=(ChatMessage("tool", results),))

    scrubbed = scrubbed_response(arrived, REDACTOR)

    assert scrubbed is not None
    first, second = scrubbed.messages[0].contents
    hidden = f"key {REDACTED} token {REDACTED}"
    assert first == FunctionResultContent(f"call_{REDACTED}", {"echo": [hidden, 3], hidden: None})
    assert second == FunctionResultContent("call_2", hidden, is_error=True)
