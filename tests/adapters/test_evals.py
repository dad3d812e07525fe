"""Reading a labelled dataset: every meeting, or a typed refusal naming the file and what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.evals import DatasetError, builtin_dataset, read_dataset

LINE = (
    '{"transcript": "Ana: I will write the notes.", '
    '"action_items": [{"owner": "Ana", "task": "write the notes"}]}'
)


def test_a_dataset_reads_one_meeting_a_line_with_a_bom_and_blank_lines(tmp_path: Path) -> None:
    dataset = tmp_path / "set.jsonl"
    dataset.write_bytes(("\ufeff" + LINE + "\n\n" + LINE + "\n").encode("utf-8"))
    meetings = read_dataset(dataset, limit=10_000)
    assert [m.name for m in meetings] == ["line-1", "line-3"]
    assert meetings[0].action_items[0].owner == "Ana"


@pytest.mark.parametrize(
    ("content", "limit", "problem"),
    [
        (LINE.encode(), 10, "larger than 10 bytes"),
        (b"\xff\xfe" + LINE.encode(), 10_000, r"not UTF-8 \(byte 0\)"),
    ],
)
def test_a_dataset_too_large_or_not_utf8_is_refused(
    tmp_path: Path, content: bytes, limit: int, problem: str
) -> None:
    dataset = tmp_path / "set.jsonl"
    dataset.write_bytes(content)
    with pytest.raises(DatasetError, match=problem):
        read_dataset(dataset, limit=limit)


def test_a_dataset_that_cannot_be_opened_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot be read"):
        read_dataset(tmp_path / "missing.jsonl", limit=10_000)


def test_the_built_in_dataset_has_labels_for_every_meeting() -> None:
    meetings = builtin_dataset()
    assert len(meetings) == 24
    assert all(m.action_items or m.decisions for m in meetings)
