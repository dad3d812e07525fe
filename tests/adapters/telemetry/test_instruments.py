"""Telemetry, what the decorators share: the server read from the base URL, the GenAI histograms with the
conventions' units and buckets, and a scope that works from a source tree too."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.scripted import ScriptedChat, ScriptedTurn
from adapters.telemetry import InstrumentedChat, Telemetry, conventions, server_of
from adapters.telemetry import instruments as telemetry_instruments
from domain import ChatMessage, Usage
from tests.support.telemetry import MODEL, Otel


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("http://127.0.0.1:4000/v1", ("127.0.0.1", 4000)),
        ("https://gateway.example/v1", ("gateway.example", 443)),
        ("http://gateway.example", ("gateway.example", 80)),
        ("http://[::1]:8080/v1", ("::1", 8080)),
        ("http://gateway.example:notaport/v1", ("gateway.example", None)),
        ("http://[::1/v1", (None, None)),
        ("gateway.example", (None, None)),
        ("", (None, None)),
        (None, (None, None)),
    ],
)
def test_the_server_is_read_from_the_base_url(
    base_url: str | None, expected: tuple[str | None, int | None]
) -> None:
    assert server_of(base_url) == expected


@given(
    host=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z]{2,6}){0,2}", fullmatch=True), port=st.integers(1, 65535)
)
def test_any_host_and_port_are_read_back(host: str, port: int) -> None:
    assert server_of(f"https://{host}:{port}/v1") == (host, port)


async def test_the_histograms_use_the_conventions_units_and_bucket_boundaries(otel: Otel) -> None:
    chat = InstrumentedChat(
        ScriptedChat(ScriptedTurn(text="ok", usage=Usage(3, 4, 7))), otel.telemetry(), model=MODEL
    )

    await chat.get_response([ChatMessage.user("hi")])

    data = otel.reader.get_metrics_data()
    assert data is not None
    metrics = {m.name: m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    duration, tokens = metrics["gen_ai.client.operation.duration"], metrics["gen_ai.client.token.usage"]
    assert (duration.unit, tokens.unit) == ("s", "{token}")
    # test_conventions checks the bucket boundaries themselves against the conventions' advice.
    duration_bounds = duration.data.data_points[0].explicit_bounds  # type: ignore[union-attr]
    token_bounds = tokens.data.data_points[0].explicit_bounds  # type: ignore[union-attr]
    assert (tuple(duration_bounds), tuple(token_bounds)) == (
        conventions.DURATION_BUCKETS,
        conventions.TOKEN_BUCKETS,
    )


def test_telemetry_works_from_a_source_tree_that_was_never_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(telemetry_instruments, "version", not_installed)

    telemetry = Telemetry(base_url="https://gateway.example/v1")

    assert repr(telemetry) == "Telemetry(capture_content=False, server='gateway.example':443)"
    assert telemetry.server_attributes() == {"server.address": "gateway.example", "server.port": 443}
