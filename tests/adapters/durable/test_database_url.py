"""The run database's URL, checked before anything starts: each bad one a DatabaseError in one line that
never shows a password, even when the URL cannot be read at all."""

from __future__ import annotations

import importlib.metadata

import pytest

from adapters.durable import DatabaseError, check_database_url
from adapters.durable.engine import APP_NAME, version


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "runs.sqlite",
            "--db 'runs.sqlite': not a database URL; for a SQLite file type --db sqlite:///runs.sqlite",
        ),
        (
            "/var/runs.sqlite",
            "--db '/var/runs.sqlite': not a database URL; for a SQLite file type --db sqlite:////var/runs.sqlite",
        ),
        (
            "ana:s3cret-pw@db.example/runs",
            "--db '<unreadable URL>': expected sqlite:///PATH or postgresql://",
        ),
        ("postgresql:no-slashes", "--db '<unreadable URL>': not a database URL"),
        (
            "postgresql://ana:s3cret-pw@db.example:notaport/runs",
            "--db '<unreadable URL>': not a database URL",
        ),
        ("mysql://ana:s3cret-pw@db.example/runs", "--db 'mysql://ana:***@db.example/runs': expected sqlite"),
        ("postgresql://ana:s3cret-pw@/runs", "--db 'postgresql://ana:***@/runs': name the server's host"),
        ("sqlite://", "--db 'sqlite://': name a file (sqlite:///PATH); an in-memory database is lost"),
        ("sqlite:///:memory:", "--db 'sqlite:///:memory:': name a file (sqlite:///PATH)"),
    ],
)
def test_a_bad_url_is_one_line_without_its_password(url: str, message: str) -> None:
    with pytest.raises(DatabaseError) as raised:
        check_database_url(url)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_postgres_is_spelled_as_dbos_takes_it() -> None:
    assert check_database_url("postgres://ana@127.0.0.1:5432/runs") == "postgresql://ana@127.0.0.1:5432/runs"


def test_the_version_recorded_with_each_workflow_names_the_package_or_says_it_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = importlib.metadata.version("meeting-assistant-agents")
    assert version() == f"{APP_NAME}-{installed}"

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    # Run from a source tree that was never installed: processes of that tree still share one version.
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert version() == f"{APP_NAME}-unknown"
