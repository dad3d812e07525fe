"""The ``otel`` fixture of the adapters' tests (telemetry, container): in-memory providers of one test,
shut down after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.telemetry import Otel


@pytest.fixture
def otel() -> Iterator[Otel]:
    with Otel() as recorded:
        yield recorded
