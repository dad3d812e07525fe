"""ToolRun and ToolRunError: what a run holds, and the error that ends one without touching the adapter's."""

from __future__ import annotations

import copy
import pickle
import traceback
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from application import ToolCallRecord, ToolRun, ToolRunError
from domain import ChatMessage, ChatResponse, FunctionCallContent, FunctionResultContent, Usage
from domain.errors import ChatError, ChatTransportError, MalformedResponseError, ResponseFailedError

_ids = st.none() | st.text(min_size=1, max_size=8)
_partials = st.none() | st.builds(ChatResponse, response_id=_ids, status=st.none() | st.just("in_progress"))


@st.composite
def adapter_errors(draw: st.DrawFn) -> ChatError:
    """An error as any adapter may raise it, every field drawn."""
    message = draw(st.text(max_size=20))
    response_id, model_id, request_id, partial = draw(_ids), draw(_ids), draw(_ids), draw(_partials)
    kind = draw(st.sampled_from(["chat", "failed", "malformed", "transport"]))
    if kind == "failed":
        return ResponseFailedError(
            message,
            code=draw(_ids),
            response_id=response_id,
            model_id=model_id,
            request_id=request_id,
            partial=partial,
        )
    if kind == "transport":
        return ChatTransportError(
            message,
            status_code=draw(st.none() | st.integers(300, 599)),
            attempts=draw(st.integers(1, 5)),
            response_id=response_id,
            model_id=model_id,
            request_id=request_id,
            partial=partial,
        )
    error_class = MalformedResponseError if kind == "malformed" else ChatError
    return error_class(
        message, response_id=response_id, model_id=model_id, request_id=request_id, partial=partial
    )


def a_run() -> ToolRun:
    call = FunctionCallContent.parse(call_id="c1", name="t", raw_arguments="{}")
    first = ChatResponse(
        messages=(ChatMessage("assistant", (call,)),), response_id="r1", usage=Usage(1, 2, 3)
    )
    result = FunctionResultContent("c1", "ok")
    return ToolRun(
        messages=(*first.messages, ChatMessage("tool", (result,))),
        responses=(first,),
        tool_calls=(ToolCallRecord(call, result, guarded=False),),
        iterations=1,
    )


@given(error=adapter_errors())
def test_a_run_error_is_a_new_error_of_the_adapters_class_with_its_fields_and_the_run(
    error: ChatError,
) -> None:
    before = dict(vars(error))
    run = a_run()

    failure = ToolRunError.from_error(error, run)

    assert failure is not error
    assert vars(error) == before  # the adapter's error is left exactly as it was
    assert isinstance(failure, type(error))
    assert isinstance(failure, ToolRunError)
    assert type(failure).__name__ == type(error).__name__
    assert failure.run is run
    assert {k: v for k, v in vars(failure).items() if k != "run"} == before
    assert (str(failure), repr(failure), failure.args) == (str(error), repr(error), error.args)


@given(error=adapter_errors())
def test_a_run_error_survives_pickling_and_copying(error: ChatError) -> None:
    # Pickling needs picklable contents: parsed arguments are read-only mappings, which do not pickle.
    failure = ToolRunError.from_error(error, ToolRun(responses=(ChatResponse(response_id="r1"),)))

    pickled = pickle.loads(pickle.dumps(failure))  # noqa: S301  # our own bytes, made one line above
    for clone in (pickled, copy.copy(failure)):
        assert type(clone) is type(failure)
        assert vars(clone) == vars(failure)
        assert clone.args == failure.args


def test_one_derived_class_per_adapter_error_class() -> None:
    first = ToolRunError.from_error(ChatTransportError("a", status_code=502), ToolRun())
    second = ToolRunError.from_error(ChatTransportError("b"), ToolRun())
    failed = ToolRunError.from_error(ResponseFailedError("c"), ToolRun())

    assert type(first) is type(second)
    assert type(first) is not type(failed)
    # A run error of a run error (a run inside a run) keeps its class.
    assert type(ToolRunError.from_error(first, a_run())) is type(first)


def test_except_clauses_written_for_adapter_errors_still_catch_it() -> None:
    failure = ToolRunError.from_error(ChatTransportError("HTTP 503", status_code=503, attempts=3), a_run())

    with pytest.raises(ChatTransportError) as caught:
        raise failure
    assert caught.value.status_code == 503
    assert caught.value.attempts == 3


def test_the_derived_class_reads_like_the_adapters_in_a_traceback() -> None:
    failure = ToolRunError.from_error(ResponseFailedError("overloaded", code="server_error"), ToolRun())
    shown = "".join(traceback.format_exception_only(failure))
    assert shown == "domain.errors.ResponseFailedError: overloaded\n"


def test_the_derived_class_can_still_be_built_by_its_adapter_constructor() -> None:
    # What mypy knows of the derived class is ToolRunError; at run time it is a ResponseFailedError too.
    derived = typing.cast(
        type[ResponseFailedError], type(ToolRunError.from_error(ResponseFailedError("x"), a_run()))
    )

    rebuilt = derived("again", code="rate_limited", response_id="resp_2")

    assert isinstance(rebuilt, ResponseFailedError)
    assert isinstance(rebuilt, ToolRunError)
    assert (rebuilt.code, rebuilt.response_id, rebuilt.run) == ("rate_limited", "resp_2", ToolRun())


def test_a_host_can_raise_a_run_error_of_its_own() -> None:
    run = a_run()
    error = ToolRunError("the host gave up", run=run, request_id="req_7")
    assert (error.message, error.run, error.request_id, error.partial) == (
        "the host gave up",
        run,
        "req_7",
        None,
    )


def test_a_run_sums_the_usage_its_answers_reported() -> None:
    answers = (
        ChatResponse(response_id="r1", usage=Usage(1, 1, 2)),
        ChatResponse(response_id="r2"),
        ChatResponse(messages=(ChatMessage.assistant("bye"),), response_id="r3", usage=Usage(3, 4, 7, 1)),
    )
    run = ToolRun(responses=answers)
    assert run.usage == Usage(4, 5, 9, 1)
    assert run.final.response_id == "r3"
    assert run.text == "bye"


def test_a_run_with_no_answer_has_no_usage_text_or_final_answer() -> None:
    run = ToolRun()
    assert (run.usage, run.text, run.final) == (None, "", ChatResponse())
