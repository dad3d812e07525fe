"""The command line's parser (adapters/cli/parser.py): what it reports of itself."""

from __future__ import annotations

import importlib.metadata

import pytest

from adapters.cli.parser import program_version


def test_the_version_of_a_source_tree_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert program_version() == "unknown (not installed)"
