"""The ``otel`` fixture of the adapters' tests (telemetry, container): in-memory providers of one test,
shut down after it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.support.telemetry import Otel


@pytest.fixture
def otel() -> Iterator[Otel]:
    # Imported when a test asks for it: `make check` loads this conftest for its one adapters module
    # (test_scripted.py), which needs neither the OpenTelemetry SDK nor the SDK adapters it imports.
    from tests.support.telemetry import Otel

    with Otel() as recorded:
        yield recorded
