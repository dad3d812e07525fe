"""ToolRegistry: typed parameters, strict structuring, derived schemas and safe error results."""

from __future__ import annotations

import json
from typing import Any, Literal

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from application import ParameterError, ToolError, ToolRegistry, json_schema_for, not_blank
from domain import FunctionCallContent, FunctionResultContent, ToolInvokerPort
from tests.strategies import MARKER


@attrs.frozen
class Point:
    x: int
    y: int


@attrs.frozen
class Everything:
    text: str = attrs.field(metadata={"description": "Some text."})
    count: int
    ratio: float
    flag: bool
    mode: Literal["fast", "slow"]
    note: str | None
    tags: tuple[str, ...]
    points: list[Point]
    origin: Point | None
    level: Literal["a", "b"] | None = None


@attrs.frozen
class Decision:
    decision: str = attrs.field(validator=not_blank)


def call(name: str, arguments: object) -> FunctionCallContent:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return FunctionCallContent.parse(call_id="call-1", name=name, raw_arguments=raw)


def error_of(result: FunctionResultContent) -> tuple[str, str]:
    assert result.is_error
    assert isinstance(result.result, dict)
    code, message = result.result["error"], result.result["message"]
    assert isinstance(code, str)
    assert isinstance(message, str)
    assert set(result.result) == {"error", "message"}
    return code, message


VALID_EVERYTHING: dict[str, Any] = {
    "text": "t",
    "count": 3,
    "ratio": 2,
    "flag": False,
    "mode": "slow",
    "note": None,
    "tags": ["a", "b"],
    "points": [{"x": 1, "y": 2}],
    "origin": None,
    "level": "b",
}


def everything_registry(received: list[Everything]) -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool()
    def everything(params: Everything) -> str:
        """Take everything.

        This second paragraph is not part of the description.
        """
        received.append(params)
        return "ok"

    return registry


def test_the_registry_satisfies_the_port() -> None:
    port: ToolInvokerPort = ToolRegistry()
    assert isinstance(port, ToolRegistry)


def test_the_schema_is_strict_mode_compatible() -> None:
    schema = json_schema_for(Everything)
    assert schema == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "Some text."},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "note": {"type": ["string", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "points": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                    "required": ["x", "y"],
                    "additionalProperties": False,
                },
            },
            "origin": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                        "required": ["x", "y"],
                        "additionalProperties": False,
                    },
                    {"type": "null"},
                ]
            },
            "level": {"type": ["string", "null"], "enum": ["a", "b", None]},
        },
        "required": ["text", "count", "ratio", "flag", "mode", "note", "tags", "points", "origin", "level"],
        "additionalProperties": False,
    }


def test_specs_carry_name_first_docstring_paragraph_and_schema() -> None:
    (spec,) = everything_registry([]).specs
    assert spec.name == "everything"
    assert spec.description == "Take everything."
    assert spec.strict
    assert dict(spec.parameters) == json_schema_for(Everything)


def test_a_tool_without_parameters_offers_an_empty_strict_object() -> None:
    registry = ToolRegistry()
    registry.add(lambda: "pong", name="ping", description="Answer pong.", strict=False)
    (spec,) = registry.specs
    assert (spec.name, spec.description, spec.strict) == ("ping", "Answer pong.", False)
    assert dict(spec.parameters) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


async def test_valid_arguments_are_structured_into_the_parameter_class() -> None:
    received: list[Everything] = []
    result = await everything_registry(received).invoke(call("everything", VALID_EVERYTHING))
    assert result == FunctionResultContent("call-1", "ok")
    assert received == [Everything("t", 3, 2.0, False, "slow", None, ("a", "b"), [Point(1, 2)], None, "b")]
    assert isinstance(received[0].ratio, float)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"count": "3"}, "expected an integer @ $.count"),
        ({"count": True}, "expected an integer @ $.count"),
        ({"count": 1.5}, "expected an integer @ $.count"),
        ({"text": 5}, "expected a string @ $.text"),
        ({"flag": 1}, "expected a boolean @ $.flag"),
        ({"ratio": "2"}, "expected a number @ $.ratio"),
        ({"mode": "medium"}, 'expected one of "fast", "slow" @ $.mode'),
        ({"note": 3}, "expected a string or null @ $.note"),
        ({"tags": "ab"}, "expected an array (each item a string) @ $.tags"),
        ({"tags": {"a": 1}}, "expected an array (each item a string) @ $.tags"),
        ({"tags": ["a", 2]}, "expected a string @ $.tags[1]"),
        ({"points": [{"x": 1, "y": 2}, {"x": 1}]}, "required field is missing @ $.points[1].y"),
        ({"points": [5]}, "expected an object @ $.points[0]"),
        ({"origin": {"x": 1, "y": 2, "z": 3}}, "unexpected field; the allowed fields are: x, y @ $.origin"),
        ({"unknown": 1}, "unexpected field; the allowed fields are: text, count, ratio"),
    ],
)
async def test_ill_typed_arguments_name_the_path_and_never_run_the_tool(
    change: dict[str, object], expected: str
) -> None:
    received: list[Everything] = []
    result = await everything_registry(received).invoke(call("everything", {**VALID_EVERYTHING, **change}))
    code, message = error_of(result)
    assert code == "invalid_tool_arguments"
    assert expected in message
    assert received == []


async def test_a_missing_field_is_reported_even_when_several_are_wrong() -> None:
    arguments = {k: v for k, v in VALID_EVERYTHING.items() if k != "mode"}
    result = await everything_registry([]).invoke(call("everything", {**arguments, "count": "x"}))
    _, message = error_of(result)
    assert "required field is missing @ $.mode" in message
    assert "expected an integer @ $.count" in message


@given(
    field=st.sampled_from(["text", "count", "mode", "tags", "flag"]),
    planted=st.text(max_size=20).map(lambda s: MARKER + s),
)
async def test_an_offending_value_is_never_quoted(field: str, planted: str) -> None:
    arguments = {**VALID_EVERYTHING, field: planted if field != "text" else [planted]}
    result = await everything_registry([]).invoke(call("everything", arguments))
    _, message = error_of(result)
    assert MARKER not in message


async def test_an_unknown_key_name_is_not_quoted_either() -> None:
    result = await everything_registry([]).invoke(call("everything", {**VALID_EVERYTHING, MARKER: 1}))
    code, message = error_of(result)
    assert code == "invalid_tool_arguments"
    assert MARKER not in message


async def test_a_parameter_validator_speaks_for_itself() -> None:
    registry = ToolRegistry()
    registry.add(lambda params: "ok", name="decide", params=Decision)
    code, message = error_of(await registry.invoke(call("decide", {"decision": "  "})))
    assert code == "invalid_tool_arguments"
    assert "must not be empty @ $" in message


async def test_an_unknown_tool_lists_the_offered_ones_without_echoing_the_name() -> None:
    registry = everything_registry([])
    code, message = error_of(await registry.invoke(call(MARKER, {})))
    assert code == "unknown_tool"
    assert "everything" in message
    assert MARKER not in message


async def test_an_empty_registry_says_no_tools_are_offered() -> None:
    code, message = error_of(await ToolRegistry().invoke(call("anything", {})))
    assert code == "unknown_tool"
    assert "none" in message


@pytest.mark.parametrize("raw", ["", "{", "[]", f'"{MARKER}"'])
async def test_the_registry_alone_refuses_unparsed_arguments(raw: str) -> None:
    ran: list[bool] = []
    registry = ToolRegistry()
    registry.add(lambda: ran.append(True), name="zero")
    code, message = error_of(await registry.invoke(call("zero", raw)))
    assert code == "invalid_tool_arguments"
    assert MARKER not in message
    assert ran == []


async def test_a_tool_without_parameters_runs_only_on_an_empty_object() -> None:
    ran: list[bool] = []
    registry = ToolRegistry()

    @registry.tool()
    def zero() -> str:
        ran.append(True)
        return "ran"

    code, message = error_of(await registry.invoke(call("zero", {"x": 1})))
    assert (code, message) == ("invalid_tool_arguments", "This tool takes no arguments; send {}.")
    assert ran == []
    assert await registry.invoke(call("zero", " { } ")) == FunctionResultContent("call-1", "ran")
    assert ran == [True]


async def test_a_tool_that_raises_answers_tool_failed_without_its_text() -> None:
    registry = ToolRegistry()

    @registry.tool()
    async def explode() -> str:
        raise RuntimeError(f"secret detail {MARKER}")

    code, message = error_of(await registry.invoke(call("explode", {})))
    assert code == "tool_failed"
    assert message == "The tool failed."


async def test_detailed_errors_add_the_exception_type_and_text() -> None:
    registry = ToolRegistry(detailed_errors=True)
    registry.add(lambda: 1 // 0, name="divide")
    code, message = error_of(await registry.invoke(call("divide", {})))
    assert code == "tool_failed"
    assert message == "The tool failed. ZeroDivisionError: integer division or modulo by zero"


async def test_a_tool_error_becomes_the_tools_own_error_result() -> None:
    registry = ToolRegistry()

    def refuse() -> str:
        raise ToolError("not_allowed", "That step is locked.")

    registry.add(refuse)
    assert error_of(await registry.invoke(call("refuse", {}))) == ("not_allowed", "That step is locked.")


async def test_async_and_sync_tools_return_their_values_as_json() -> None:
    registry = ToolRegistry()

    async def origin() -> Point:
        return Point(0, 0)

    def pairs() -> dict[str, object]:
        return {"pairs": ((1, 2), (3, 4)), "none": None}

    registry.add(origin)
    registry.add(pairs)
    assert (await registry.invoke(call("origin", {}))).result == {"x": 0, "y": 0}
    assert (await registry.invoke(call("pairs", {}))).result == {"pairs": [[1, 2], [3, 4]], "none": None}


@pytest.mark.parametrize("value", [float("nan"), b"bytes", object()])
async def test_a_result_json_cannot_carry_is_a_tool_failure(value: object) -> None:
    registry = ToolRegistry()
    registry.add(lambda: value, name="odd")
    code, message = error_of(await registry.invoke(call("odd", {})))
    assert code == "tool_failed"
    assert message == "The tool's result could not be converted to JSON."


class TestRegistrationErrors:
    def test_a_name_is_registered_once(self) -> None:
        registry = ToolRegistry()
        registry.add(lambda: 1, name="one")
        with pytest.raises(ValueError, match="already registered"):
            registry.add(lambda: 2, name="one")

    def test_a_tool_takes_at_most_one_parameter(self) -> None:
        def two(a: Point, b: Point) -> None: ...

        with pytest.raises(TypeError, match="one attrs parameter object"):
            ToolRegistry().add(two)

    def test_the_parameter_must_be_an_attrs_class(self) -> None:
        def plain(a: dict[str, int]) -> None: ...

        with pytest.raises(TypeError, match="annotated with an attrs class"):
            ToolRegistry().add(plain)

    def test_an_annotation_that_cannot_be_resolved_asks_for_params(self) -> None:
        @attrs.frozen
        class Local:
            x: int

        def local(params: Local) -> None: ...

        with pytest.raises(TypeError, match="cannot be resolved; pass params="):
            ToolRegistry().add(local)
        registry = ToolRegistry()
        registry.add(local, params=Local)
        assert [spec.name for spec in registry.specs] == ["local"]

    def test_params_for_a_tool_without_parameters_is_a_mistake(self) -> None:
        with pytest.raises(TypeError, match="takes no parameter object"):
            ToolRegistry().add(lambda: 1, name="zero", params=Point)

    def test_parameter_types_need_a_schema(self) -> None:
        @attrs.frozen
        class Untyped:
            data: dict[str, int]

        with pytest.raises(TypeError, match="no JSON Schema"):
            ToolRegistry().add(lambda params: 1, name="untyped", params=Untyped)

    def test_json_schema_for_refuses_what_it_cannot_describe(self) -> None:
        @attrs.frozen
        class Untyped:
            data: set[int]

        with pytest.raises(TypeError, match="has no JSON Schema"):
            json_schema_for(Untyped)


@attrs.frozen
class Folder:
    name: str
    inside: tuple[Folder, ...] = ()


def test_a_parameter_class_that_holds_itself_is_refused_with_a_type_error() -> None:
    with pytest.raises(TypeError, match="holds itself"):
        ToolRegistry().add(lambda params: 1, name="folders", params=Folder)
    with pytest.raises(TypeError, match="Folder holds itself"):
        json_schema_for(Folder)


def test_parameter_error_is_a_value_error() -> None:
    assert issubclass(ParameterError, ValueError)
