"""The command's input and output files (adapters/cli/files.py): any text or bytes read, atomic output."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.cli.files import AtomicOutput, InputError, read_text

FILE_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"))


@given(FILE_TEXT)
def test_any_utf8_text_reads_back_whole_with_or_without_a_bom(text: str) -> None:
    encoded = text.encode("utf-8")
    assert read_text("-", "TRANSCRIPT_FILE", io.BytesIO(b"\xef\xbb\xbf" + encoded)) == text
    assert read_text("-", "TRANSCRIPT_FILE", io.BytesIO(encoded)) == text.removeprefix("\ufeff")


@given(st.binary())
def test_any_bytes_are_text_or_one_line_naming_the_input(data: bytes) -> None:
    try:
        read_text("-", "TRANSCRIPT_FILE", io.BytesIO(data))
    except InputError as error:
        message = str(error)
        assert message.startswith("TRANSCRIPT_FILE (stdin): ")
        assert "\n" not in message


def test_an_unreadable_file_names_the_reason(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"TRANSCRIPT_FILE '.*': cannot be read \(Is a directory\)"):
        read_text(str(tmp_path), "TRANSCRIPT_FILE", io.BytesIO())


def test_output_is_committed_once(tmp_path: Path) -> None:
    output = AtomicOutput.open(tmp_path / "out.json")
    output.commit("{}\n")
    assert (tmp_path / "out.json").read_text(encoding="utf-8") == "{}\n"
    with pytest.raises(RuntimeError, match="already committed or discarded"):
        output.commit("again")
    output.discard()  # nothing left to discard, and no harm done
    assert [path.name for path in tmp_path.iterdir()] == ["out.json"]


def test_a_discarded_output_leaves_nothing(tmp_path: Path) -> None:
    with AtomicOutput.open(tmp_path / "out.json") as output:
        assert len(list(tmp_path.iterdir())) == 1  # the temporary file, made before any request
    assert output.target == tmp_path / "out.json"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_removes_the_temporary_file(tmp_path: Path) -> None:
    output = AtomicOutput.open(tmp_path / "out.json")
    (tmp_path / "out.json").mkdir()  # the target turned into a folder while the model ran
    with pytest.raises(OSError, match="Is a directory"):
        output.commit("{}")
    assert [path.name for path in tmp_path.iterdir()] == ["out.json"]


def test_output_may_be_an_input_read_from_stdin(tmp_path: Path) -> None:
    with AtomicOutput.open(tmp_path / "out.json", inputs=[("WORKFLOW_JSON", "-")]) as output:
        assert output.target.parent == tmp_path


def test_umask_is_left_as_it_was(tmp_path: Path) -> None:
    before = os.umask(0o027)
    try:
        AtomicOutput.open(tmp_path / "out.json").commit("x")
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(before)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o640
