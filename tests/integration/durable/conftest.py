"""One Postgres on 127.0.0.1 for every durable test that needs one (each test a database of its own).

The tests that use it run on one xdist worker, one after another (``tests/conftest.py`` groups them), so
the server starts once for all of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.durable.support import write_transcripts
from tests.support.postgres import create_database, postgres_server

_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture
def database(postgres: str) -> str:
    return create_database(postgres, f"batch_{next(_databases)}")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The example transcripts (``TRANSCRIPTS``) written to the folder ``in`` of the test's ``tmp_path``."""
    return write_transcripts(tmp_path / "in")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """Where the test's batch writes its summaries and index: the folder ``out`` of its ``tmp_path`` (the
    batch makes it)."""
    return tmp_path / "out"
