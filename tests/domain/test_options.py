"""Chat options and tool specs (domain/options.py): read-only parameters, hashable options,
a known initiator."""

from __future__ import annotations

import pytest

from domain import ChatOptions, ToolSpec


def test_tool_spec_parameters_are_read_only_and_options_hashable() -> None:
    spec = ToolSpec("f", "does f", {"type": "object", "properties": {}})
    with pytest.raises(TypeError):
        spec.parameters["x"] = 1  # type: ignore[index]  # the point: read-only
    options = ChatOptions(tools=[spec], initiator="agent")
    assert options.tools == (spec,)
    assert hash(options) == hash(ChatOptions(tools=(spec,), initiator="agent"))
    with pytest.raises(ValueError, match="initiator"):
        ChatOptions(initiator="robot")  # type: ignore[arg-type]  # the point: invalid
