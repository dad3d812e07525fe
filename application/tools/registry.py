"""Typed tools: a registry of functions whose attrs parameter classes give their JSON Schema."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import attrs

from application.tools.parameters import describe_errors, json_schema_for, strict_converter, supported_type
from domain import FunctionCallContent, FunctionResultContent, JsonValue, ToolSpec

__all__ = ["ToolError", "ToolRegistry", "error_result"]

F = TypeVar("F", bound=Callable[..., Any])

INVALID_TOOL_ARGUMENTS: Final = "invalid_tool_arguments"
UNKNOWN_TOOL: Final = "unknown_tool"
TOOL_FAILED: Final = "tool_failed"
DUPLICATE_CALL_ID: Final = "duplicate_call_id"
BUDGET_EXCEEDED: Final = "budget_exceeded"
"""The code of a call the model made but the run did not run: its budget or deadline stopped it first."""

# One converter per purpose: this one turns parsed arguments into parameter objects, strictly.
_ARGUMENTS: Final = strict_converter()
# And this one turns whatever a tool returns (attrs values, tuples, mappings) into plain JSON data.
_RESULTS: Final = strict_converter()


def error_result(call_id: str, code: str, message: str) -> FunctionResultContent:
    """The error result the model reads: ``{"error": code, "message": message}``."""
    return FunctionResultContent(call_id=call_id, result={"error": code, "message": message}, is_error=True)


class ToolError(Exception):
    """Raised by a tool to answer with an error result that the model can act on.

    ``code`` and ``message`` are sent to the model as they are, so the message must not quote
    anything secret; unlike other exceptions, it is shown even when detailed errors are off.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


NeedsApproval = bool | Callable[..., bool]
"""``True``, or a predicate over the tool's typed parameter object (nothing for a tool without one)."""


@attrs.frozen
class _Tool:
    spec: ToolSpec
    function: Callable[..., object]
    params: type | None
    needs_approval: NeedsApproval = False


def _params_class(function: Callable[..., object], params: type | None) -> type | None:
    parameters = tuple(inspect.signature(function).parameters.values())
    if not parameters:
        if params is not None:
            raise TypeError(f"tool {function.__name__!r} takes no parameter object but params= was given")
        return None
    if len(parameters) > 1:
        raise TypeError(f"tool {function.__name__!r} must take one attrs parameter object or nothing")
    if params is None:
        try:
            hints = typing.get_type_hints(function)
        except NameError:
            # A class defined inside a function cannot be found from a string annotation.
            raise TypeError(
                f"the parameter annotation of tool {function.__name__!r} cannot be resolved; pass params="
            ) from None
        params = hints.get(parameters[0].name)
    if not (isinstance(params, type) and attrs.has(params)):
        raise TypeError(f"the parameter of tool {function.__name__!r} must be annotated with an attrs class")
    if not supported_type(params):
        raise TypeError(
            f"the parameter class of tool {function.__name__!r} uses a type with no JSON Schema "
            "(or holds itself, directly or through another class)"
        )
    return params


def _description(function: Callable[..., object], description: str | None) -> str:
    if description is not None:
        return description
    return inspect.cleandoc(function.__doc__ or "").split("\n\n", 1)[0].replace("\n", " ")


def _to_json(value: object) -> JsonValue:
    data = _RESULTS.unstructure(value)
    # Round-trip through the encoder: rejects NaN, non-string keys and objects JSON cannot carry.
    return typing.cast(JsonValue, json.loads(json.dumps(data, allow_nan=False)))


class ToolRegistry:
    """The tools offered to a model, invoked by name; implements ``ToolInvokerPort``.

    A tool is a function (sync or async) that takes nothing or one attrs parameter object; its
    JSON Schema comes from that class (strict mode: every property required, optional ones
    nullable, no additional properties). Arguments are structured strictly, so a tool only ever
    runs with values of its declared types. Failures never raise; they become error results:
    ``invalid_tool_arguments`` (with the field path, never the value), ``unknown_tool``,
    ``tool_failed`` (with no exception text unless ``detailed_errors``), or a tool's own
    :class:`ToolError`. Sync tools run on the event loop, so keep them quick.

    Hand it to :meth:`ToolLoop.run`, which puts :class:`GuardedToolInvoker` around it.
    """

    def __init__(self, *, detailed_errors: bool = False) -> None:
        self._detailed_errors = detailed_errors
        self._tools: dict[str, _Tool] = {}

    def add(
        self,
        function: Callable[..., object],
        *,
        name: str | None = None,
        description: str | None = None,
        params: type | None = None,
        strict: bool = True,
        needs_approval: NeedsApproval = False,
    ) -> None:
        """Register ``function``; its name and description default to its own name and docstring.

        ``needs_approval``: ``True``, or a callable over the typed parameter object returning whether
        this call must be approved before it runs (see :meth:`needs_approval`).
        """
        tool_name = name or function.__name__
        if tool_name in self._tools:
            raise ValueError(f"a tool named {tool_name!r} is already registered")
        params_class = _params_class(function, params)
        schema = json_schema_for(params_class) if params_class is not None else None
        spec = ToolSpec(tool_name, _description(function, description), strict=strict)
        if schema is not None:
            spec = attrs.evolve(spec, parameters=schema)
        self._tools[tool_name] = _Tool(spec, function, params_class, needs_approval)

    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        params: type | None = None,
        strict: bool = True,
        needs_approval: NeedsApproval = False,
    ) -> Callable[[F], F]:
        """Decorator form of :meth:`add`; returns the function unchanged."""

        def register(function: F) -> F:
            self.add(
                function,
                name=name,
                description=description,
                params=params,
                strict=strict,
                needs_approval=needs_approval,
            )
            return function

        return register

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools to offer to the model, in registration order."""
        return tuple(tool.spec for tool in self._tools.values())

    def needs_approval(self, call: FunctionCallContent) -> bool:
        """Whether ``call`` must be approved before it runs (``application.ApprovalPolicy``).

        False for an unknown tool and for arguments that do not fit the parameters (neither would
        run: each is answered with its error). A predicate that raises holds the call, to be safe.
        """
        tool = self._tools.get(call.name)
        if tool is None or tool.needs_approval is False:
            return False
        arguments = self._arguments(call, tool)
        if isinstance(arguments, FunctionResultContent):
            return False
        if tool.needs_approval is True:
            return True
        try:
            return bool(tool.needs_approval(*arguments))
        except Exception:
            return True

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        tool = self._tools.get(call.name)
        if tool is None:
            offered = ", ".join(self._tools) or "none"
            return error_result(
                call.call_id, UNKNOWN_TOOL, f"No tool of that name is offered. The tools are: {offered}."
            )
        arguments = self._arguments(call, tool)
        if isinstance(arguments, FunctionResultContent):
            return arguments
        try:
            outcome = tool.function(*arguments)
            if inspect.isawaitable(outcome):
                outcome = await typing.cast(Awaitable[object], outcome)
        except ToolError as exc:
            return error_result(call.call_id, exc.code, exc.message)
        except Exception as exc:
            return error_result(call.call_id, TOOL_FAILED, self._failure("The tool failed.", exc))
        try:
            return FunctionResultContent(call.call_id, _to_json(outcome))
        except Exception as exc:
            message = "The tool's result could not be converted to JSON."
            return error_result(call.call_id, TOOL_FAILED, self._failure(message, exc))

    @staticmethod
    def _arguments(call: FunctionCallContent, tool: _Tool) -> tuple[object, ...] | FunctionResultContent:
        """What to call the tool with (its parameter object, or nothing) or the error result."""
        if call.arguments is None:
            # Not a second guard: matching arguments to parameters is the registry's job, and an
            # absent object matches none. Under ToolLoop the guard has already answered such calls.
            return error_result(
                call.call_id, INVALID_TOOL_ARGUMENTS, "The tool arguments were not a JSON object."
            )
        if tool.params is None:
            if call.arguments:
                return error_result(
                    call.call_id, INVALID_TOOL_ARGUMENTS, "This tool takes no arguments; send {}."
                )
            return ()
        try:
            return (_ARGUMENTS.structure(dict(call.arguments), tool.params),)
        except Exception as exc:
            problems = "; ".join(describe_errors(exc))
            return error_result(call.call_id, INVALID_TOOL_ARGUMENTS, f"Invalid tool arguments: {problems}.")

    def _failure(self, message: str, exc: Exception) -> str:
        if not self._detailed_errors:
            return message
        return f"{message} {type(exc).__name__}: {exc}"
