"""Valid JSON nested as deep as memory allows, in a call's arguments or a tool's result, never raises
``RecursionError``: every public walk over a value a model or a tool made either handles it or refuses it
with a typed error (the scrubber, the loop's failed run, documents, telemetry content, the durable steps,
the adapters' errors and the CLI's output)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from adapters.durable import scrubbed as durable_scrubbed
from adapters.durable.engine import serializer
from adapters.offline.render import call_item, message_item, response_document, usage
from adapters.redaction import Redactor
from adapters.responses.error_mapping import scrubbed_response
from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import InstrumentedToolInvoker
from adapters.telemetry.content import json_text
from application import DocumentError, LoopSettings, ToolLoop, ToolRun, ToolRunError, dumps, loads
from application.scrubbing import SHOWN_DEPTH, TOO_DEEP, scrubbed, shown_json, strings
from domain import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    MalformedResponseError,
    ToolSpec,
)
from tests.conformance.strategies import Deep, deep_values
from tests.integration.cli.support import run
from tests.support.examples import examples
from tests.support.processes import gateway_environment
from tests.support.telemetry import Otel
from tests.support.upstreams import Answer, FakeServer, RecordedRequest

SECRET = "sk-deep-SECRET-7f3a"
REDACTOR = Redactor([SECRET])
USER = (ChatMessage.user("Summarize the meeting, please."),)
OPTIONS = ChatOptions(tools=(ToolSpec("lookup"),))
TRANSCRIPT = "Ana: We decided to ship on Monday.\nBen: I will write the notes.\n"


def _held_nowhere(value: object) -> bool:
    return not any(SECRET in text for text in strings(value))


def _leaves(value: object) -> list[str]:
    """The strings of a :class:`Deep` value but its objects' keys."""
    return [text for text in strings(value) if text != Deep.KEY]


class DeepTools:
    """Tools whose every result is ``result``: a host tool may return a value of any depth."""

    def __init__(self, result: object) -> None:
        self.result = result

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        return FunctionResultContent(call.call_id, self.result)  # type: ignore[arg-type]  # deep JSON


@settings(max_examples=examples(6), deadline=None)
@given(deep_values(SECRET))
def test_the_scrubber_reaches_a_secret_at_any_depth_and_leaves_a_clean_value_as_it_is(deep: Deep) -> None:
    value = deep.value()

    cleaned = scrubbed(value, REDACTOR.redact)

    assert _leaves(value) == [SECRET]
    assert _leaves(cleaned) == ["[REDACTED]"]
    assert scrubbed(cleaned, REDACTOR.redact) is cleaned
    assert durable_scrubbed(value, REDACTOR) is not value
    assert _held_nowhere(durable_scrubbed(value, REDACTOR))


@settings(max_examples=examples(4), deadline=None)
@given(deep_values(SECRET))
async def test_a_failed_run_holding_deep_values_is_a_chat_error_with_the_run_scrubbed(deep: Deep) -> None:
    arguments = '{"q": ' + deep.text() + "}"
    chat = ScriptedChat(
        ScriptedTurn(calls=(("call_1", "lookup", arguments), ("call_2", "lookup", "{}"))),
        MalformedResponseError("the gateway broke"),
    )
    loop = ToolLoop(chat, LoopSettings(redact=REDACTOR.redact))

    with pytest.raises(ToolRunError) as raised:
        await loop.run(USER, OPTIONS, DeepTools(deep.value()))

    run = raised.value.run
    assert _held_nowhere(run)
    # The deep arguments parse or are refused as the parser reaches; the deep result is the tool's.
    assert [record.call.call_id for record in run.tool_calls] == ["call_1", "call_2"]
    assert _leaves(run.tool_calls[1].result.result) == ["[REDACTED]"]


@settings(max_examples=examples(4), deadline=None)
@given(deep_values(SECRET, min_depth=2_000))
async def test_a_run_document_of_a_deep_value_is_refused_typed_and_a_deep_text_is_not_loaded(
    deep: Deep,
) -> None:
    chat = ScriptedChat(ScriptedTurn(calls=(("call_1", "lookup", "{}"),)), ScriptedTurn(text="Done."))
    run = await ToolLoop(chat).run(USER, OPTIONS, DeepTools(deep.value()))

    with pytest.raises(DocumentError, match="nested deeper"):
        dumps(run)
    with pytest.raises(DocumentError, match="nested deeper"):
        dumps(run, secret="a state secret")
    with pytest.raises(DocumentError):
        loads('{"format": "meeting-agents", "version": 1, "kind": "tool_run", "value": ' + deep.text() + "}")


async def test_a_run_nested_as_deep_as_json_reads_goes_through_a_document_and_back() -> None:
    deep = Deep(400, ("list", "object"), SECRET)
    chat = ScriptedChat(
        ScriptedTurn(calls=(("call_1", "lookup", '{"q": ' + deep.text() + "}"),)), ScriptedTurn(text="Done.")
    )
    run = await ToolLoop(chat).run(USER, OPTIONS, DeepTools(deep.value()))

    again = loads(dumps(run))

    assert isinstance(again, ToolRun)
    assert again.tool_calls[0].call.raw_arguments == run.tool_calls[0].call.raw_arguments
    assert _leaves(again.tool_calls[0].result.result) == [SECRET]


@settings(max_examples=examples(8), deadline=None)
@given(deep_values(SECRET))
def test_what_is_shown_of_a_deep_value_is_its_json_whole_or_cut_at_a_depth(deep: Deep) -> None:
    for text in (shown_json(deep.value()), json_text(deep.value())):
        # Whole when json.dumps can write it (the leaf is there), else cut (the marker is there instead).
        assert (SECRET in text) != (TOO_DEEP in text)
        if TOO_DEEP in text:
            kept = text.replace(TOO_DEEP, "")
            assert kept.count("[") + kept.count("{") == SHOWN_DEPTH


@settings(max_examples=examples(6), deadline=None)
@given(deep_values(SECRET))
async def test_telemetry_capturing_content_records_a_deep_tool_result_and_the_run_goes_on(deep: Deep) -> None:
    with Otel() as otel:
        telemetry = otel.telemetry(capture_content=True, redactor=REDACTOR)
        chat = ScriptedChat(ScriptedTurn(calls=(("call_1", "lookup", "{}"),)), ScriptedTurn(text="Done."))
        loop = ToolLoop(chat, decorators=(InstrumentedToolInvoker.decorator(telemetry),))

        run = await loop.run(USER, OPTIONS, DeepTools(deep.value()))

        (span,) = otel.named("execute_tool")
        recorded = str(span.attributes["gen_ai.tool.call.result"])  # type: ignore[index]  # set with capture
    assert run.stop_reason is None
    # Written whole or cut at a depth, then cut to the attribute's length: the run went on either way.
    assert recorded.startswith(("[", '{"k"'))
    assert SECRET not in recorded


def _deep_call_response(deep: Deep) -> ChatResponse:
    arguments = '{"q": ' + deep.text() + "}"
    call = FunctionCallContent.parse(call_id="call_1", name="lookup", raw_arguments=arguments)
    return ChatResponse(messages=(ChatMessage("assistant", (call,)),), response_id=f"resp_{SECRET}")


@pytest.mark.parametrize("depth", [300, 600, 900, 100_000])
def test_a_durable_step_stores_an_answer_whose_call_nests_deep_and_loads_it_back(depth: int) -> None:
    stored = serializer(REDACTOR)
    response = _deep_call_response(Deep(depth, ("object", "list"), SECRET))

    again = stored.deserialize(stored.serialize(response))

    assert isinstance(again, ChatResponse)
    assert _held_nowhere(again)
    (call,) = again.function_calls
    assert "[REDACTED]" in call.raw_arguments
    assert call == FunctionCallContent.parse(
        call_id="call_1", name="lookup", raw_arguments=call.raw_arguments
    )


@pytest.mark.parametrize("depth", [300, 600, 900, 100_000])
def test_an_error_carrying_a_deep_answer_has_its_secrets_cut(depth: int) -> None:
    response = _deep_call_response(Deep(depth, ("list",), SECRET))

    cleaned = scrubbed_response(response, REDACTOR)

    assert cleaned is not None
    assert _held_nowhere(cleaned)


# ---------------------------------------------------------------- the CLI against a gateway on a socket


def _deep_route(depth: int) -> Any:
    """A gateway whose first answer calls a summary tool with arguments ``depth`` levels deep (holding the
    key); then it answers a summary (model ``deep-ok``) or fails (model ``deep-fails``)."""

    def route(request: RecordedRequest) -> Answer:
        model = str(request.body.get("model"))
        answered = any(
            isinstance(item, dict) and item.get("type") == "function_call_output"
            for item in request.body.get("input", [])
        )
        if not answered:
            arguments = (
                '{"text": "Ship on Monday", "lines": [1], "note": '
                + Deep(depth, ("list", "object"), SECRET).text()
                + "}"
            )
            output = [call_item("fc_1", "call_1", "record_decision", arguments)]
        elif model == "deep-fails":
            return Answer(500, "application/json", [json.dumps({"error": {"message": "it broke"}})])
        else:
            output = [message_item("msg_1", "We decided to ship on Monday.")]
        document = response_document(
            output, response_id="resp_deep", model=model, created_at=1_700_000_000, usage=usage(11, 7)
        )
        return Answer(200, "application/json", [json.dumps(document)])

    return route


@pytest.mark.parametrize("depth", [600, 900, 100_000])
@pytest.mark.parametrize(
    ("model", "code"), [("deep-ok", 0), ("deep-fails", 1)], ids=["answered", "the-gateway-fails"]
)
@pytest.mark.parametrize("output_format", ["text", "json"])
def test_the_cli_exits_with_the_runs_code_when_a_call_nests_deep(
    depth: int, model: str, code: int, output_format: str, tmp_path: Any
) -> None:
    (tmp_path / "meeting.txt").write_text(TRANSCRIPT, encoding="utf-8")
    saved = tmp_path / "run.json"
    with FakeServer(_deep_route(depth)) as gateway:
        environ = gateway_environment(
            gateway.base_url, model, SECRET, AGENT_MAX_RETRIES="0", AGENT_USE_STREAMING="false"
        )
        ran = run(
            "summarize", str(tmp_path / "meeting.txt"), "--format", output_format, "--save-run", str(saved),
            environ=environ,
        )  # fmt: skip

    assert ran.code == code, ran.err
    assert "internal error" not in ran.err
    assert SECRET not in ran.out + ran.err
    if code == 0:
        assert "ship on Monday" in ran.out
