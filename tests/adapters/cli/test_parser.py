"""The command line's parser (adapters/cli/parser.py): what it reports of itself."""

from __future__ import annotations

import importlib.metadata

import pytest

from adapters.cli.parser import parse_arguments, program_version


def test_the_version_of_a_source_tree_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert program_version() == "unknown (not installed)"


def test_help_tells_stream_and_streaming_apart(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_arguments(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--stream and --streaming are two different things" in shown
    assert "not --stream, which is about printing" in shown
    assert "not --streaming, which is about how answers travel" in shown
    # Both spellings still parse, each to its own setting.
    args = parse_arguments(["--no-streaming", "summarize", "t.txt", "--stream"])
    assert (args.streaming, args.stream) == (False, True)
