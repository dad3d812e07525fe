"""Long meetings: the transcript split at speaker turns into overlapping chunks, and their items merged."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Protocol, TypeVar

import attrs

from application.meetings.grounding import SPEAKER_LINE, SpokenLine, content_words, normalized, particulars

__all__ = [
    "OVERLAP_TURNS",
    "Chunk",
    "ChunkSettings",
    "chunk_transcript",
    "decision_key",
    "merged_items",
    "task_key",
]

OVERLAP_TURNS: Final = 2
"""How many speaker turns each chunk repeats from the end of the one before it."""


@attrs.frozen
class ChunkSettings:
    """How the summary pipeline splits a long meeting.

    A transcript longer than ``chunk_chars`` characters is split at speaker turns into chunks of at
    most that size (a single turn longer than that is split at its lines), each repeating the last
    :data:`OVERLAP_TURNS` turns of the one before, so an item said across a border is whole in one
    of them. At most ``chunk_concurrency`` chunks are summarized at once.
    """

    chunk_chars: int = attrs.field(default=60_000, validator=attrs.validators.ge(1))
    chunk_concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1))


@attrs.frozen
class Chunk:
    """Lines ``first`` to ``last`` (1-based, inclusive, of the whole file) of a transcript."""

    index: int
    first: int
    last: int
    lines: tuple[str, ...] = attrs.field(repr=False)
    spoken: tuple[SpokenLine, ...] = attrs.field(default=(), repr=False)
    """The same lines as imported (speaker and text apart), when the transcript was imported."""


def _turns(lines: Sequence[str], spoken: Sequence[SpokenLine]) -> list[tuple[int, int]]:
    """Each speaker turn as (start, end) indexes: a speaker line and the unattributed lines after it."""
    if spoken:
        starts = [at for at, line in enumerate(spoken) if at == 0 or line.speaker is not None]
    else:
        starts = [at for at, line in enumerate(lines) if at == 0 or SPEAKER_LINE.match(line)]
    return [(start, end) for start, end in zip(starts, [*starts[1:], len(lines)], strict=True)]


class _Sizes:
    """The size of any run of lines (newlines counted) in constant time, from running totals: summing
    each candidate run afresh made cutting a 2 MB transcript quadratic (seconds with the loop held)."""

    def __init__(self, lines: Sequence[str]) -> None:
        self._ends = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))

    def __call__(self, start: int, end: int) -> int:
        return self._ends[end] - self._ends[start]


def _pieces(
    lines: Sequence[str], spoken: Sequence[SpokenLine], size: _Sizes, chunk_chars: int
) -> list[tuple[int, int]]:
    """Speaker turns, a turn longer than ``chunk_chars`` cut at its lines."""
    pieces: list[tuple[int, int]] = []
    for start, end in _turns(lines, spoken):
        if size(start, end) <= chunk_chars:
            pieces.append((start, end))
            continue
        at = start
        while at < end:
            stop = at + 1
            while stop < end and size(at, stop + 1) <= chunk_chars:
                stop += 1
            pieces.append((at, stop))
            at = stop
    return pieces


def chunk_transcript(
    lines: Sequence[str],
    chunk_chars: int,
    *,
    overlap: int = OVERLAP_TURNS,
    spoken: Sequence[SpokenLine] = (),
) -> tuple[Chunk, ...]:
    """``lines`` as chunks of at most ``chunk_chars`` characters (newlines counted), cut between
    speaker turns; each chunk after the first starts ``overlap`` turns before the previous one ended
    (fewer when those turns and the next one would not fit together: every chunk adds at least one
    turn). One chunk when all of it fits. ``spoken``, when given, are the same lines as imported
    (:class:`application.TranscriptLine`): they say where turns start, and each chunk carries its own."""
    size = _Sizes(lines)
    if size(0, len(lines)) <= chunk_chars or len(lines) <= 1:
        return (Chunk(0, 1, len(lines), tuple(lines), tuple(spoken)),)
    pieces = _pieces(lines, spoken, size, chunk_chars)
    chunks: list[Chunk] = []
    first = 0
    while first < len(pieces):
        last = first
        while last + 1 < len(pieces) and size(pieces[first][0], pieces[last + 1][1]) <= chunk_chars:
            last += 1
        start, end = pieces[first][0], pieces[last][1]
        chunks.append(Chunk(len(chunks), start + 1, end, tuple(lines[start:end]), tuple(spoken[start:end])))
        if last + 1 >= len(pieces):
            break
        # Start ``overlap`` pieces back, fewer when those and the next new piece would not fit together.
        first = max(first + 1, last + 1 - overlap)
        while first <= last and size(pieces[first][0], pieces[last + 1][1]) > chunk_chars:
            first += 1
    return tuple(chunks)


class _Item(Protocol):
    @property
    def lines(self) -> tuple[int, ...]: ...


ItemT = TypeVar("ItemT", bound=_Item)


def merged_items(
    items: Iterable[ItemT],
    key: Callable[[ItemT], object],
    with_lines: Callable[[ItemT, tuple[int, ...]], ItemT],
) -> tuple[ItemT, ...]:
    """``items`` in order with duplicates (equal ``key``) kept once, at the first one's place, citing
    the lines of all of them."""
    kept: dict[object, ItemT] = {}
    for item in items:
        found = kept.get(key(item))
        if found is None:
            kept[key(item)] = item
        else:
            kept[key(item)] = with_lines(found, tuple(sorted({*found.lines, *item.lines})))
    return tuple(kept.values())


def task_key(owner: str, task: str) -> tuple[str, frozenset[str]]:
    """What makes two action items the same: the owner and the task's content words and particulars
    (days, months, numbers), normalized."""
    return " ".join(normalized(owner).split()), _words(task)


def _words(text: str) -> frozenset[str]:
    return (content_words(text) | particulars(text)) or frozenset({normalized(text).strip()})


def decision_key(text: str) -> frozenset[str]:
    """What makes two decisions the same: their content words and particulars, normalized."""
    return _words(text)
