"""What a run reports while it runs: model text as it arrives, each answered call, each round, the result."""

from __future__ import annotations

from typing import Generic, TypeAlias, TypeVar

import attrs

from application.runs.run import ToolCallRecord
from application.tools.approval import ApprovalRequest
from domain import ChatResponse

__all__ = [
    "ApprovalRequested",
    "ChunkFinished",
    "RoundFinished",
    "RoundStarted",
    "RunEvent",
    "RunFinished",
    "TextDelta",
    "ToolCallFinished",
]

# Covariant: a run of summaries is a run of objects, so hosts can handle both pipelines' events alike.
ResultT = TypeVar("ResultT", covariant=True)


@attrs.frozen
class RoundStarted:
    """A request is going out to the model; ``round`` counts the run's requests from 1."""

    round: int


@attrs.frozen
class TextDelta:
    """A piece of the model's text, in the order the pieces arrived.

    The pieces of one round, joined, are that round's answer text (each text part is one piece
    when the chat has only whole answers).
    """

    text: str


@attrs.frozen
class ToolCallFinished:
    """A call of the model was answered: run by its tool, or refused (``record.guarded``)."""

    record: ToolCallRecord


@attrs.frozen
class ApprovalRequested:
    """A call of the model's answer waits for a decision; nothing of that answer runs before it.

    Without an approver the run stops after these (``RunFinished`` carries the paused result);
    with one, it is asked right after each.
    """

    request: ApprovalRequest


@attrs.frozen
class RoundFinished:
    """Round ``round`` is over: the model's ``response`` and the records of the calls it answered."""

    round: int
    response: ChatResponse
    tool_calls: tuple[ToolCallRecord, ...]


@attrs.frozen
class ChunkFinished:
    """Chunk ``index`` (from 0) of ``count`` of a long meeting is over: ``lines`` (first, last) of the
    whole file, the calls it answered, and ``failed`` (the error's class name, ``incomplete``, or
    ``not_started`` when the meeting's budget or deadline had stopped it before it began) when it is
    not covered, else None."""

    index: int
    count: int
    lines: tuple[int, int]
    tool_calls: tuple[ToolCallRecord, ...]
    failed: str | None = None


@attrs.frozen
class RunFinished(Generic[ResultT]):
    """The run is over; ``result`` is what the non-streaming call returns for the same run."""

    result: ResultT


RunEvent: TypeAlias = (
    RoundStarted
    | TextDelta
    | ToolCallFinished
    | ApprovalRequested
    | RoundFinished
    | ChunkFinished
    | RunFinished[ResultT]
)
"""One event of a run: ``RunEvent[ToolRun]`` from the loop, ``RunEvent[MeetingSummary]`` from a pipeline."""
