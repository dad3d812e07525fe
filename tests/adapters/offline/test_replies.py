"""The stand-in's replies to model turns: checked against the SDK's own (strict) models, without sockets."""

from __future__ import annotations

import json
import typing
from typing import Any

import pydantic
import pytest
from openai.types.responses import Response, ResponseStreamEvent

from adapters.offline.replies import Dialect, Reply, answer
from adapters.offline.turns import Item, ModelRequest, respond

# The SDK's event models by their ``type``, so a failure names the one model the event should match.
EVENT_MODELS: dict[str, type[pydantic.BaseModel]] = {
    typing.get_args(model.model_fields["type"].annotation)[0]: model
    for model in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}
TRANSCRIPT = "Ana: Ben will draft the budget by Friday.\nBen: I'll book the room.\nAna: We agreed to go."
TOOLS = [
    {"type": "function", "name": name, "parameters": {"type": "object"}, "strict": False}
    for name in ("list_participants", "record_action_item", "record_decision")
]
SHAPES: list[dict[str, Any]] = [{}, {"reasoning": {"effort": "low", "summary": "auto"}}, {"tools": TOOLS}]


def reply_for(
    model: str, *, stream: bool, dialect: Dialect = "openai", seed: str = "seed", **extra: Any
) -> Reply:
    body = {"model": model, "input": TRANSCRIPT, "stream": stream, **extra}
    names = model.removeprefix("offline").removeprefix(":").split("+")
    return answer(body, names, dialect=dialect, seed=seed, created_at=1_700_000_000)


def document_of(reply: Reply) -> dict[str, Any]:
    (body,) = reply.body
    assert isinstance(body, bytes)
    assert dict(reply.headers)["content-length"] == str(len(body))
    return dict(json.loads(body))


def data_lines(reply: Reply) -> list[str]:
    text = b"".join(piece for piece in reply.body if isinstance(piece, bytes)).decode()
    return [line.removeprefix("data: ") for line in text.split("\n") if line.startswith("data: ")]


def events_of(reply: Reply) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data_lines(reply) if line != "[DONE]"]


def missing_fields(error: pydantic.ValidationError) -> set[str]:
    return {str(detail["loc"][-1]) for detail in error.errors() if detail["type"] == "missing"}


@pytest.mark.parametrize("extra", SHAPES)
@pytest.mark.parametrize(
    "model",
    [
        "offline",
        "offline:incomplete",
        "offline:response-failed",
        "offline:error-event",
        "offline:huge-arguments",
    ],
)
def test_openai_dialect_events_validate_strictly_against_the_sdk_models(
    model: str, extra: dict[str, Any]
) -> None:
    events = events_of(reply_for(model, stream=True, **extra))

    for event in events:
        EVENT_MODELS[event["type"]].model_validate(event)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))


@pytest.mark.parametrize("extra", SHAPES)
@pytest.mark.parametrize("model", ["offline", "offline:incomplete", "offline:response-failed"])
def test_openai_dialect_json_documents_validate_strictly(model: str, extra: dict[str, Any]) -> None:
    Response.model_validate(document_of(reply_for(model, stream=False, **extra)))


def test_litellm_dialect_departs_from_the_schema_only_where_litellm_does() -> None:
    events = events_of(reply_for("offline", stream=True, dialect="litellm"))
    departures: set[str] = set()
    for event in events:
        try:
            EVENT_MODELS[event["type"]].model_validate(event)
        except pydantic.ValidationError as error:
            departures |= missing_fields(error)

    assert departures == {"logprobs", "input_tokens_details", "output_tokens_details"}
    assert data_lines(reply_for("offline", stream=True, dialect="litellm"))[-1] == "[DONE]"


def test_streamed_pieces_add_up_to_the_finished_items() -> None:
    events = events_of(reply_for("offline", stream=True, tools=TOOLS, reasoning={"effort": "low"}))
    output = events[-1]["response"]["output"]

    reasoning = "".join(e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta")
    assert reasoning == output[0]["summary"][0]["text"]
    for index, item in enumerate(output[1:], start=1):
        arguments = "".join(
            e["delta"]
            for e in events
            if e["type"] == "response.function_call_arguments.delta" and e["output_index"] == index
        )
        assert arguments == item["arguments"]
    assert [item["type"] for item in output] == ["reasoning", *["function_call"] * 4]


def test_text_deltas_keep_every_character_of_the_text() -> None:
    events = events_of(reply_for("offline", stream=True, input="  spaced   out\ttext \n"))

    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    assert text == events[-1]["response"]["output"][0]["content"][0]["text"]
    assert text.endswith("“spaced out text”.")


def test_request_fields_are_echoed_and_response_ids_differ_per_seed() -> None:
    echoed: dict[str, Any] = {"instructions": "Be brief.", "max_output_tokens": 50, "store": True}
    first, second = (document_of(reply_for("offline", stream=False, seed=seed, **echoed)) for seed in "ab")

    assert first["instructions"] == "Be brief."
    assert first["max_output_tokens"] == 50
    assert first["store"] is True
    assert first["created_at"] == 1_700_000_000
    assert first["id"] != second["id"]
    assert first["output"][0]["id"] != second["output"][0]["id"]


def test_faults_cut_json_bodies_as_documented() -> None:
    truncated = reply_for("offline:truncated-stream", stream=False)
    reset = reply_for("offline:connection-reset", stream=False)
    stall = reply_for("offline:stall", stream=False)
    garbage = reply_for("offline:garbage-data", stream=False)

    (cut,) = truncated.body
    assert isinstance(cut, bytes)
    assert cut.startswith(b'{"id": "resp_')
    assert dict(truncated.headers)["content-length"] == str(len(cut))
    head, marker = reset.body
    assert isinstance(head, bytes)
    assert marker == "reset"
    assert int(dict(reset.headers)["content-length"]) in (2 * len(head), 2 * len(head) + 1)
    assert stall.body[-1] == "stall"
    for spoiled in (cut, b"".join(piece for piece in garbage.body if isinstance(piece, bytes))):
        with pytest.raises(json.JSONDecodeError):
            json.loads(spoiled)


def test_error_scenarios_on_json_answer_a_failed_response() -> None:
    for model in ("offline:error-event", "offline:error-event-nested", "offline:response-failed"):
        document = Response.model_validate(document_of(reply_for(model, stream=False)))
        assert document.status == "failed"
        assert document.error is not None
        assert document.error.code == "server_error"


def test_stream_faults_end_the_body_as_documented() -> None:
    assert reply_for("offline:connection-reset", stream=True).body[-1] == "reset"
    assert reply_for("offline:stall", stream=True).body[-1] == "stall"
    truncated = events_of(reply_for("offline:truncated-stream", stream=True))
    assert truncated[-1]["type"] in {"response.output_text.delta", "response.content_part.added"}
    nested = events_of(reply_for("offline:error-event-nested", stream=True))[-1]
    assert nested == {
        "type": "error",
        "error": {
            "type": "server_error",
            "code": "server_error",
            "message": "The offline model failed on purpose (scenario error-event-nested).",
            "param": None,
        },
    }
    garbage = data_lines(reply_for("offline:garbage-data", stream=True))
    with pytest.raises(json.JSONDecodeError):
        [json.loads(line) for line in garbage]


def history_after(calls: list[Item], *, reject_malformed: bool) -> list[dict[str, Any]]:
    """The transcript, the calls and their results: ok, or invalid_tool_arguments where not JSON."""
    history: list[dict[str, Any]] = [{"role": "user", "content": TRANSCRIPT}]
    for call in calls:
        output = "ok"
        try:
            json.loads(call["arguments"])
        except json.JSONDecodeError:
            output = json.dumps({"error": "invalid_tool_arguments"}) if reject_malformed else "ok"
        history.append({key: call[key] for key in ("type", "call_id", "name", "arguments")})
        history.append({"type": "function_call_output", "call_id": call["call_id"], "output": output})
    return history


def test_huge_arguments_leave_a_later_tool_turn_and_a_closing_text_alone() -> None:
    first, _ = respond(
        ModelRequest.from_body({"model": "offline", "input": TRANSCRIPT, "tools": TOOLS}), malformed=True
    )

    retry = reply_for(
        "offline:huge-arguments", stream=False, tools=TOOLS, input=history_after(first, reject_malformed=True)
    )
    closing = reply_for(
        "offline:huge-arguments",
        stream=False,
        tools=TOOLS,
        input=history_after(first, reject_malformed=False),
    )

    assert [item["type"] for item in document_of(retry)["output"]] == ["function_call"]
    assert [item["type"] for item in document_of(closing)["output"]] == ["message"]
    assert len(json.dumps(document_of(retry))) < 100_000
    assert len(json.dumps(document_of(closing))) < 100_000


@pytest.mark.parametrize(("limit", "status"), [(4, "incomplete"), (10_000, "completed"), (None, "completed")])
def test_max_output_tokens_below_the_answer_ends_it_incomplete(limit: int | None, status: str) -> None:
    document = Response.model_validate(
        document_of(reply_for("offline", stream=False, max_output_tokens=limit))
    )

    assert document.status == status
    assert (document.incomplete_details is not None) is (status == "incomplete")
