"""The guard every tool run invokes tools through: unparsed arguments never reach a tool."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

import attrs

from application.tools.registry import INVALID_TOOL_ARGUMENTS, TOOL_FAILED, error_result
from domain import FunctionCallContent, FunctionResultContent, ParseErrorKind, ToolInvokerPort

__all__ = ["GuardedToolInvoker"]

# The guard writes its own sentences from the error kind alone, so nothing that came from the
# model or from a parser's exception can reach the message, whatever the ArgumentsParseError says.
_WHY: Final[Mapping[ParseErrorKind, str]] = types.MappingProxyType(
    {
        "empty": "the arguments were empty",
        "invalid_json": "the arguments were not valid JSON",
        "not_an_object": "the arguments were JSON but not a JSON object",
    }
)


def parsed(call: FunctionCallContent) -> FunctionCallContent:
    """``call`` with its arguments parsed (a call built without :meth:`FunctionCallContent.parse`)."""
    if call.parse_error is None and call.arguments is None:
        return FunctionCallContent.parse(
            call_id=call.call_id, name=call.name, raw_arguments=call.raw_arguments, item_id=call.item_id
        )
    return call


class GuardedToolInvoker:
    """Answers a call whose arguments failed to parse with ``invalid_tool_arguments``; else delegates.

    For such a call ``inner`` is never awaited: the result carries the call's id, ``is_error=True``
    and a fixed message that quotes neither the raw arguments nor parser exception text. A call
    built without :meth:`FunctionCallContent.parse` is parsed here first. Should ``inner`` raise
    or answer under another call id despite its port's promise, the guard still answers this call
    id exactly once (``tool_failed``, with no exception text).

    :attr:`refused` reports the call ids the guard answered itself. :class:`application.ToolLoop`
    builds one guard per run around the tools it is handed, so no caller needs to add one.
    """

    def __init__(self, inner: ToolInvokerPort) -> None:
        self._inner = inner
        # Rebuilt on each refusal, which is rare, so that reading it (once per call) copies nothing.
        self._refused: frozenset[str] = frozenset()

    @property
    def refused(self) -> frozenset[str]:
        """The ids of the calls this guard answered itself, without awaiting ``inner``."""
        return self._refused

    async def invoke(self, call: FunctionCallContent) -> FunctionResultContent:
        call = parsed(call)
        if call.parse_error is not None:
            self._refused = self._refused | {call.call_id}
            where = call.parse_error.position
            at = f" (parsing stopped at character {where})" if where is not None else ""
            message = (
                f"The tool was not run: {_WHY[call.parse_error.kind]}{at}. "
                "Call it again with a JSON object that matches its parameters."
            )
            return error_result(call.call_id, INVALID_TOOL_ARGUMENTS, message)
        try:
            result = await self._inner.invoke(call)
        except Exception:
            return error_result(call.call_id, TOOL_FAILED, "The tool failed.")
        if result.call_id != call.call_id:
            return attrs.evolve(result, call_id=call.call_id)
        return result
