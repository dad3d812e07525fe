"""One canary per private use of DBOS (``adapters/durable/dbos_seam.py``): each fails, naming what it
relied on, when a release of DBOS changes it (``make canary`` runs them on the newest)."""

from __future__ import annotations

import importlib
import inspect
import io
import logging
from collections.abc import Iterator

import pytest
from dbos import DBOS

from adapters.durable import dbos_seam


def test_dbos_recovers_the_pending_workflows_of_named_executors() -> None:
    recover = getattr(DBOS, "_recover_pending_workflows", None)
    assert callable(recover), "DBOS._recover_pending_workflows is gone: liveness cannot recover dead workers"
    parameters = list(inspect.signature(recover).parameters)
    assert parameters == ["executor_ids"], f"DBOS._recover_pending_workflows now takes {parameters}"


@pytest.fixture
def dbos_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger("dbos")
    handlers, propagate = list(logger.handlers), logger.propagate
    yield logger
    logger.handlers[:] = handlers
    logger.propagate = propagate


def test_dbos_logs_to_the_console_through_its_named_handler(dbos_logger: logging.Logger) -> None:
    # DBOS adds its console handler (once, when the logger has none) as it is configured.
    dbos_logger.handlers.clear()
    importlib.import_module("dbos._logger").init_logger()
    names = [handler.name for handler in dbos_logger.handlers]
    assert dbos_seam.CONSOLE_HANDLER in names, f"DBOS's console handler is named otherwise now: {names}"
    captured = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stderr", captured)
        assert dbos_seam.console_to_current_stderr()
        dbos_logger.warning("canary")
    assert "canary" in captured.getvalue()


def test_dbos_warns_of_a_missing_logger_provider_in_these_words() -> None:
    source = inspect.getsource(importlib.import_module("dbos._logger"))
    assert dbos_seam.NO_LOGGER_PROVIDER_WARNING in source, "DBOS words its logger-provider warning otherwise"


def test_dbos_logs_a_function_with_its_arguments_in_these_words() -> None:
    sources = "".join(
        inspect.getsource(importlib.import_module(module))
        for module in ("dbos._outcome", "dbos._serialization")
    )
    for start in dbos_seam.WITH_ARGUMENTS:
        assert start in sources, f"DBOS words {start!r} otherwise: the filter no longer recognises it"
