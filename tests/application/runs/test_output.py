"""Structured final output: the strict schema a type gives, and the loop reading its answer into the type."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import attrs
import cattrs
import jsonschema
import pytest
from hypothesis import given

from adapters.scripted import ScriptedChat, ScriptedTurn
from application import (
    Approve,
    LoopSettings,
    OutputRefusedError,
    OutputValidationError,
    RunFinished,
    ToolLoop,
    ToolRegistry,
    ToolRunError,
    dumps,
    loads,
    output_schema,
)
from application.runs.output import output_spec
from domain import ChatMessage, ChatOptions, ChatTransportError, ResponseFailedError
from tests.application.strategies import Colour, output_classes, output_types, values_of
from tests.support.doubles import RecordingTools

USER = (ChatMessage.user("Who comes to the review?"),)


@attrs.frozen
class Attendee:
    name: str
    role: Literal["host", "guest"]
    colour: Colour | None


@attrs.frozen
class Attendees:
    people: tuple[Attendee, ...]
    count: int


@attrs.frozen
class Person:
    name: str


RIGHT = '{"people": [{"name": "Ada", "role": "host", "colour": "red"}], "count": 1}'
VALUE = Attendees((Attendee("Ada", "host", Colour.RED),), 1)
WRONG = '{"people": [{"name": "Ada", "role": "chair", "colour": null}], "count": "one"}'


def _objects(schema: object) -> Iterator[dict[str, Any]]:
    """Every object schema within ``schema``."""
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _objects(value)


def _assert_strict(schema: dict[str, Any]) -> None:
    objects = list(_objects(schema))
    assert objects, "the root is an object"
    for node in objects:
        assert node["additionalProperties"] is False
        assert node["required"] == list(node["properties"])


# ---------------------------------------------------------------- the schema


@given(output_types.flatmap(lambda tp: values_of(tp).map(lambda value: (tp, value))))
def test_every_output_type_has_a_strict_schema_that_accepts_its_own_values(drawn: tuple[object, Any]) -> None:
    output_type, value = drawn
    schema = output_schema(output_type)
    jsonschema.Draft202012Validator.check_schema(schema)
    _assert_strict(schema)
    data = json.loads(json.dumps(cattrs.unstructure(value)))
    spec = output_spec(output_type)
    jsonschema.validate({"value": data} if spec.wrapped else data, schema)
    # And what the schema lets through reads back into the very value.
    answer = json.dumps({"value": data} if spec.wrapped else data)
    assert spec.read(answer) == value


@given(output_classes.flatmap(lambda cls: values_of(cls).map(lambda value: (cls, value))))
def test_an_attrs_class_is_its_own_schema_root_and_refuses_unknown_fields(drawn: tuple[type, Any]) -> None:
    cls, value = drawn
    schema: dict[str, Any] = output_schema(cls)
    assert list(schema["properties"]) == [field.name for field in attrs.fields(cls)]
    data = json.loads(json.dumps(cattrs.unstructure(value)))
    jsonschema.validate(data, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "unexpected": 1}, schema)


def test_a_type_no_strict_schema_describes_is_refused_before_any_request() -> None:
    chat = ScriptedChat(ScriptedTurn(text="{}"))
    with pytest.raises(TypeError, match="no strict JSON schema"):
        output_schema(dict[str, int])
    with pytest.raises(TypeError):
        ToolLoop(chat)._start(USER, None, RecordingTools(), output_type=set[int])
    assert chat.requests == ()


@attrs.frozen
class Outline:
    title: str
    sections: tuple[Outline, ...] = ()


@attrs.frozen
class Speaker:
    name: str
    talks: list[Turn]


@attrs.frozen
class Turn:
    said: str
    replies: Speaker | None = None


@pytest.mark.parametrize("output_type", [Outline, list[Outline], Speaker, Turn | None])
def test_a_class_that_holds_itself_is_refused_by_name_before_any_request(output_type: object) -> None:
    chat = ScriptedChat(ScriptedTurn(text='{"title": "x", "sections": []}'))
    with pytest.raises(TypeError, match="holds itself"):
        ToolLoop(chat)._start(USER, None, RecordingTools(), output_type=output_type)
    assert chat.requests == ()


# ---------------------------------------------------------------- the loop


async def test_the_request_carries_the_schema_and_the_run_holds_the_value() -> None:
    chat = ScriptedChat(ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(
        USER, ChatOptions(instructions="Be exact."), RecordingTools(), output_type=Attendees
    )
    assert run.output == VALUE
    assert run.output_mode == "json_schema"
    sent = chat.requests[0].options
    assert sent is not None
    assert sent.response_format == {
        "type": "json_schema",
        "name": "Attendees",
        "schema": output_schema(Attendees),
        "strict": True,
    }
    assert sent.instructions == "Be exact."


async def test_a_tool_round_goes_before_the_typed_answer() -> None:
    tools = ToolRegistry()

    @tools.tool(description="Who is invited")
    def invited() -> list[str]:
        return ["Ada"]

    chat = ScriptedChat(ScriptedTurn(calls=(("c1", "invited", "{}"),)), ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(USER, ChatOptions(tools=tools.specs), tools, output_type=Attendees)
    assert run.output == VALUE
    assert len(run.tool_calls) == 1
    # Every request of the run asks for the typed answer, the tool round's included.
    assert all(r.options is not None and r.options.response_format is not None for r in chat.requests)


async def test_a_wrong_answer_is_told_what_was_wrong_and_a_right_one_ends_the_run() -> None:
    chat = ScriptedChat(ScriptedTurn(text=WRONG), ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
    assert run.output == VALUE
    assert len(run.responses) == 2
    told = chat.requests[1].messages[-1]
    assert told.role == "user"
    assert "@ $.count" in told.text
    assert "@ $.people[0].role" in told.text
    # The model is told the rule, never its own answer back.
    assert "chair" not in told.text
    # The run keeps the misfit answer and the turn that answered it, in order.
    assert run.messages[-3].text == WRONG
    assert run.messages[-2] == told


async def test_an_answer_that_is_not_json_means_the_route_dropped_the_format_and_the_retry_is_prompted() -> (
    None
):
    # A strict schema yields JSON or a refusal: prose means text.format never reached the model.
    chat = ScriptedChat(ScriptedTurn(text="Ada is coming."), ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
    assert run.output == VALUE
    assert run.output_mode == "prompted"
    assert "not JSON" in chat.requests[1].messages[-1].text
    retried = chat.requests[1].options
    assert retried is not None
    assert retried.response_format is None
    assert retried.instructions is not None
    assert json.dumps(output_schema(Attendees), separators=(",", ":")) in retried.instructions


async def test_json_of_the_wrong_shape_keeps_the_schema_on_the_wire() -> None:
    chat = ScriptedChat(ScriptedTurn(text=WRONG), ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
    assert run.output_mode == "json_schema"
    assert all(o is not None and o.response_format is not None for o in (r.options for r in chat.requests))


async def test_a_never_right_answer_raises_with_its_text_and_the_run() -> None:
    chat = ScriptedChat(ScriptedTurn(text=WRONG), ScriptedTurn(text="[]"), ScriptedTurn(text=RIGHT))
    settings = LoopSettings(max_output_retries=1)
    with pytest.raises(OutputValidationError) as caught:
        await ToolLoop(chat, settings).run(USER, None, RecordingTools(), output_type=Attendees)
    error = caught.value
    assert isinstance(error, ToolRunError)
    assert error.raw_text == "[]"
    assert error.problems == ("expected an object @ $",)
    assert len(error.run.responses) == 2
    assert error.run.output is None
    assert chat.remaining == 1


async def test_no_retries_means_the_first_misfit_raises() -> None:
    chat = ScriptedChat(ScriptedTurn(text=WRONG))
    with pytest.raises(OutputValidationError):
        await ToolLoop(chat, LoopSettings(max_output_retries=0)).run(
            USER, None, RecordingTools(), output_type=Attendees
        )
    assert len(chat.requests) == 1


async def test_a_refusal_ends_the_run_with_the_refusal() -> None:
    chat = ScriptedChat(ScriptedTurn(refusal="I can't share who attends."), ScriptedTurn(text=RIGHT))
    with pytest.raises(OutputRefusedError) as caught:
        await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
    assert caught.value.refusal == "I can't share who attends."
    assert caught.value.run.final.text == "I can't share who attends."
    # A refusal is not a misfit: no retry is spent on it.
    assert chat.remaining == 1


async def test_a_route_that_refuses_text_format_is_asked_once_more_with_the_schema_in_words() -> None:
    refused = ChatTransportError(
        "HTTP 400 from the Responses endpoint (invalid_request_error): text.format is not supported",
        status_code=400,
    )
    chat = ScriptedChat(refused, ScriptedTurn(text=f"```json\n{RIGHT}\n```"), ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(
        USER, ChatOptions(instructions="Be exact."), RecordingTools(), output_type=Attendees
    )
    assert run.output == VALUE
    assert run.output_mode == "prompted"
    first, second = (request.options for request in chat.requests[:2])
    assert first is not None
    assert first.response_format is not None
    assert second is not None
    assert second.response_format is None
    assert second.instructions is not None
    assert second.instructions.startswith("Be exact.\n\n")
    assert json.dumps(output_schema(Attendees), separators=(",", ":")) in second.instructions
    # The same conversation went again: the refused request added nothing to the run.
    assert chat.requests[0].messages == chat.requests[1].messages
    assert len(run.responses) == 1


async def test_the_fallback_is_taken_once_and_only_for_a_400_naming_the_format() -> None:
    refused = ChatTransportError("HTTP 400: response_format json_schema unsupported", status_code=400)
    chat = ScriptedChat(refused, refused)
    with pytest.raises(ChatTransportError):
        await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
    assert len(chat.requests) == 2
    for other in (
        ChatTransportError("HTTP 400: the input is too long", status_code=400),
        ChatTransportError("HTTP 500: text.format broke", status_code=500),
        ResponseFailedError("text.format"),
    ):
        chat = ScriptedChat(other, ScriptedTurn(text=RIGHT))
        with pytest.raises(type(other)):
            await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
        assert len(chat.requests) == 1


async def test_a_streamed_run_reports_the_value_in_run_finished() -> None:
    chat = ScriptedChat(ScriptedTurn(text=WRONG), ScriptedTurn(text=RIGHT))
    events = [
        event
        async for event in ToolLoop(chat).run_events(USER, None, RecordingTools(), output_type=Attendees)
    ]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.output == VALUE
    assert all(request.stream for request in chat.requests)


async def test_a_type_that_is_not_an_object_is_asked_for_wrapped_and_read_unwrapped() -> None:
    chat = ScriptedChat(ScriptedTurn(text='{"value": [3, 1]}'))
    run = await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=list[int])
    assert run.output == [3, 1]
    assert chat.requests[0].options is not None
    assert chat.requests[0].options.response_format is not None
    assert chat.requests[0].options.response_format["name"] == "list"


async def test_a_resumed_run_still_reads_its_typed_answer_in_the_mode_it_had() -> None:
    tools = ToolRegistry()

    @tools.tool(description="Remove someone", needs_approval=True)
    def remove(who: Person) -> str:
        return f"removed {who.name}"

    refused = ChatTransportError("HTTP 400: text.format unsupported", status_code=400)
    chat = ScriptedChat(
        refused, ScriptedTurn(calls=(("c1", "remove", '{"name": "Bo"}'),)), ScriptedTurn(text=RIGHT)
    )
    loop = ToolLoop(chat)
    paused = await loop.run(USER, ChatOptions(tools=tools.specs), tools, output_type=Attendees)
    assert paused.state is not None
    state = loads(dumps(paused.state))
    assert state == paused.state
    assert state.output_mode == "prompted"
    run = await loop.resume(state, {"c1": Approve()}, tools, output_type=Attendees)
    assert run.output == VALUE
    assert run.output_mode == "prompted"
    last = chat.requests[-1].options
    assert last is not None
    assert last.response_format is None


async def test_a_run_document_keeps_the_typed_runs_mode_and_its_output_as_json() -> None:
    chat = ScriptedChat(ScriptedTurn(text=RIGHT))
    run = await ToolLoop(chat).run(USER, None, RecordingTools(), output_type=Attendees)
    loaded = loads(dumps(run))
    assert loaded == run
    assert loaded.output_mode == "json_schema"
    assert loaded.output == json.loads(RIGHT)


async def test_a_secret_a_gateway_echoed_into_the_answer_is_cut_from_the_error() -> None:
    secret = "sk-live-ECHOED-1234"
    settings = LoopSettings(max_output_retries=0, redact=lambda text: text.replace(secret, "[redacted]"))
    for turn, error_type in (
        (ScriptedTurn(text=f"not json {secret}"), OutputValidationError),
        (ScriptedTurn(refusal=f"I refuse, {secret}"), OutputRefusedError),
    ):
        with pytest.raises(error_type) as caught:
            await ToolLoop(ScriptedChat(turn), settings).run(
                USER, None, RecordingTools(), output_type=Attendees
            )
        error = caught.value
        shown = getattr(error, "raw_text", "") + getattr(error, "refusal", "")
        assert "[redacted]" in shown
        assert secret not in shown
        assert secret not in error.run.final.text
