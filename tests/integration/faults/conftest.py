"""Fixtures for the fault and load suite (the offline stand-in is tests/conftest.py's ``offline_server``):
every log record at DEBUG."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every record of every logger (the SDK's, httpx's, ours) from DEBUG up."""
    caplog.set_level(logging.DEBUG)
    # Named too, in case something (OPENAI_LOG, a host's logging setup) gave one its own higher level.
    for name in ("openai", "httpx", "httpcore", "adapters", "application"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog
