"""InstrumentedToolInvoker: one ``execute_tool`` span per call, an error result or a raise marked with its
code, and no secret in a span's name or attributes."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from adapters.redaction import Redactor
from adapters.telemetry import InstrumentedToolInvoker
from adapters.telemetry.tools import error_code
from domain import FunctionCallContent, JsonValue, ToolInvokerPort
from tests.support.doubles import FailingTools, RaisingTools, RecordingTools
from tests.support.gateway import API_KEY
from tests.support.telemetry import Otel, every_text

CALL = FunctionCallContent.parse(call_id="c9", name="lookup", raw_arguments="{}")


@pytest.mark.parametrize(
    ("result", "code"),
    [
        ({"error": "unknown_tool", "message": "no such tool"}, "unknown_tool"),
        ({"error": "duplicate_call_id", "message": "answered before"}, "duplicate_call_id"),
        ("the tool failed", "_OTHER"),
        ({"error": ""}, "_OTHER"),
    ],
)
def test_an_error_result_is_known_by_its_code_or_as_other(result: JsonValue, code: str) -> None:
    assert error_code(result) == code


async def test_an_error_result_marks_the_tool_span_with_its_code(otel: Otel) -> None:
    invoker: ToolInvokerPort = InstrumentedToolInvoker(FailingTools(), otel.telemetry())

    answered = await invoker.invoke(CALL)

    assert answered.is_error
    (span,) = otel.spans()
    assert span.name == "execute_tool lookup"
    assert dict(span.attributes or {})["error.type"] == error_code(answered.result) == "tool_failed"
    assert span.status.status_code is StatusCode.ERROR


async def test_a_raising_invoker_marks_the_span_and_the_error_propagates(otel: Otel) -> None:
    invoker = InstrumentedToolInvoker(RaisingTools(), otel.telemetry())

    with pytest.raises(RuntimeError, match="the tool broke"):
        await invoker.invoke(CALL)

    (span,) = otel.spans()
    assert dict(span.attributes or {})["error.type"] == "RuntimeError"
    assert repr(invoker) == f"InstrumentedToolInvoker({invoker._inner!r})"


async def test_a_key_in_a_tool_name_or_call_id_is_cut_from_the_span(otel: Otel) -> None:
    telemetry = otel.telemetry(redactor=Redactor([API_KEY]))
    invoker = InstrumentedToolInvoker(RecordingTools(lambda call: "ok"), telemetry)

    await invoker.invoke(FunctionCallContent.parse(call_id=f"id-{API_KEY}", name=API_KEY, raw_arguments="{}"))

    (span,) = otel.spans()
    assert span.name == "execute_tool [REDACTED]"
    assert all(API_KEY not in text for text in every_text(otel))
