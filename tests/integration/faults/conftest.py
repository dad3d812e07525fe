"""Fixtures for the fault and load suite: one offline server per test and every log record at DEBUG."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from adapters.offline import OfflineResponsesServer


@pytest.fixture
def server() -> Iterator[OfflineResponsesServer]:
    with OfflineResponsesServer() as running:
        yield running


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record of every logger (the SDK's, httpx's, ours) from DEBUG up."""
    caplog.set_level(logging.DEBUG)
    # Named too, in case something (OPENAI_LOG, a host's logging setup) gave one its own higher level.
    for name in ("openai", "httpx", "httpcore", "adapters", "application"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog
