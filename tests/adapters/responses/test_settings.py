"""The Responses adapters' settings (``ResponsesSettings``): values that cannot work are refused, and header
values, which can be credentials, never show."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.responses import ResponsesSettings


@pytest.mark.parametrize(
    "bad",
    [
        {"model": ""},
        {"model": "m", "malformed_arguments_in_history": "drop"},
        {"model": "m", "max_output_tokens": 0},
    ],
)
def test_settings_reject_values_that_cannot_work(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  # attrs validators raise plain ValueError with varied text
        ResponsesSettings(**bad)


def test_settings_repr_names_extra_headers_but_not_their_values() -> None:
    settings = ResponsesSettings(model="gpt-test", extra_headers={"X-Gateway-Key": "gw-secret-123"})

    assert "gw-secret-123" not in repr(settings)
    assert "X-Gateway-Key" in repr(settings)
