"""Labelled meetings for ``meeting-agents eval``: reading a dataset, and the built-in one."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Final

from application.meetings.evaluation import DatasetError, LabelledMeeting, labelled_meeting

__all__ = ["BUILTIN_NAME", "DatasetError", "builtin_dataset", "read_dataset"]

BUILTIN_NAME: Final = "the built-in labelled meetings"


def _meetings(text: str, source: str) -> tuple[LabelledMeeting, ...]:
    meetings = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{source}:{number}: not JSON ({exc.msg})") from None
        try:
            meetings.append(labelled_meeting(value, name=f"line-{number}"))
        except DatasetError as exc:
            raise DatasetError(f"{source}:{number}: {exc}") from None
    if not meetings:
        raise DatasetError(f"{source}: holds no labelled meeting")
    return tuple(meetings)


def read_dataset(path: str | Path, *, limit: int) -> tuple[LabelledMeeting, ...]:
    """The labelled meetings of a JSON-lines file (one meeting a line); :class:`DatasetError` naming the
    file and line of the first that cannot be read, or a file over ``limit`` bytes."""
    source = str(path)
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        raise DatasetError(f"{source}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > limit:
        raise DatasetError(f"{source}: larger than {limit:,} bytes (agent.max_transcript_bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{source}: not UTF-8 (byte {exc.start})") from None
    return _meetings(text, source)


def builtin_dataset() -> tuple[LabelledMeeting, ...]:
    """The grounding benchmark's 24 synthetic meetings, with their labels."""
    text = resources.files(__name__).joinpath("meetings.jsonl").read_text(encoding="utf-8")
    return _meetings(text, BUILTIN_NAME)
