"""What the command shows while a run works: a live line on a terminal's stderr, and --stream's text."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Final

import attrs

from adapters.cli.display.console import Console, printable, printable_settled
from adapters.cli.parser import PROG
from application import ChunkFinished, RoundFinished, RoundStarted, RunEvent, TextDelta, ToolCallFinished

__all__ = ["LiveRun", "Progress", "TextStream"]

# The adapters log each failed attempt here (with an ``attempt`` field) before the SDK waits to retry.
_ATTEMPTS_LOGGER: Final = "adapters.responses"
# Often enough that the elapsed time reads as running, rarely enough to cost nothing.
_REFRESH_SECONDS: Final = 0.2


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


@attrs.define
class Progress:
    """The state the live line shows: the round, the calls answered and refused, the time, a retry."""

    started: float
    max_retries: int
    clock: Callable[[], float] = time.monotonic
    round: int = 0
    answered: int = 0
    refused: int = 0
    characters: int = 0
    note: str = ""
    chunks: tuple[int, int] = (0, 0)
    """A long meeting's parts: (done, all); (0, 0) for a meeting summarized in one run."""

    def observe(self, event: RunEvent[object]) -> None:
        # Any news from the run means a retry, if there was one, got through.
        self.note = ""
        if isinstance(event, RoundStarted):
            self.round = event.round
            self.characters = 0
        elif isinstance(event, TextDelta):
            self.characters += len(event.text)
        elif isinstance(event, ToolCallFinished):
            self.answered += 1
            self.refused += event.record.guarded
        elif isinstance(event, ChunkFinished):
            # A long meeting's chunks run concurrently: count them and the calls each answered.
            self.chunks = (self.chunks[0] + 1, event.count)
            self.answered += len(event.tool_calls)
            self.refused += sum(record.guarded for record in event.tool_calls)

    def attempt_failed(self, attempt: int, why: str) -> None:
        # max_retries counts the attempts after the first; a body broken in transit draws on it too.
        then = "trying again" if attempt <= self.max_retries else "no attempts left"
        self.note = f"attempt {attempt} failed ({why}), {then}"

    def line(self) -> str:
        done, count = self.chunks
        parts = [
            f"{done} of {count} parts done" if count else f"round {self.round}" if self.round else "starting"
        ]
        if self.answered:
            refused = f" ({self.refused:,} refused by the guard)" if self.refused else ""
            parts.append(_plural(self.answered, "tool call") + " answered" + refused)
        if self.characters:
            parts.append(_plural(self.characters, "character") + " of text")
        parts.append(f"{self.clock() - self.started:.1f} s")
        if self.note:
            parts.append(self.note)
        return f"{PROG}: " + ", ".join(parts)


class _AttemptWatcher(logging.Handler):
    """Hands each failed attempt the adapters log to ``on_attempt(attempt, why)``."""

    def __init__(self, on_attempt: Callable[[int, str], None]) -> None:
        super().__init__(logging.INFO)
        self._on_attempt = on_attempt

    def emit(self, record: logging.LogRecord) -> None:
        attempt = getattr(record, "attempt", None)
        if not isinstance(attempt, int):
            return
        status = getattr(record, "status_code", None)
        error_type = getattr(record, "error_type", None)
        why = f"HTTP {status}" if isinstance(status, int) else str(error_type or "no answer")
        self._on_attempt(attempt, why)


class TextStream:
    """The model's text on stdout as it arrives, with secrets cut even when split across pieces."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._held = ""  # not yet redacted: it may be the start of a secret
        self._unfinished = ""  # redacted, but it may be the start of an escape sequence
        self.line_open = False
        self.shown_any = False

    def write(self, piece: str) -> None:
        settled, self._held = self._console.redactor.redact_settled(self._held + piece)
        shown, self._unfinished = printable_settled(self._unfinished + settled)
        self._show(shown)

    def end_line(self) -> None:
        """Show what is held back and end the line, so what follows starts on a line of its own."""
        rest = self._unfinished + self._console.redactor.redact(self._held)
        self._held = self._unfinished = ""
        self._show(printable(rest))
        if self.line_open:
            self._show("\n")

    def _show(self, text: str) -> None:
        """Print ``text``, already redacted and printable."""
        if text:
            self._console.result_piece(text)
            self.line_open = not text.endswith("\n")
            self.shown_any = True


class LiveRun:
    """Shows a run as it works: the live line when ``progress``, the model's text when ``stream``.

    An async context manager around the run; :meth:`observe` takes each of its events. On the way
    out (done, failed or cancelled) the live line is erased and streamed text ends its line.
    """

    def __init__(
        self,
        console: Console,
        *,
        progress: bool,
        stream: bool,
        max_retries: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self._showing_progress = progress
        self.streams_text = stream
        self.text = TextStream(console)
        self.progress = Progress(started=clock(), max_retries=max_retries, clock=clock)
        # Text and the live line on one terminal would write over each other: the line waits while
        # a line of text is open there.
        self._text_on_terminal = stream and console.stdout.isatty()
        self._watcher = _AttemptWatcher(self._attempt_failed)
        self._ticker: asyncio.Task[None] | None = None
        self._saved_level = logging.NOTSET
        self._paused = False

    def observe(self, event: RunEvent[object]) -> None:
        self.progress.observe(event)
        if self.streams_text and isinstance(event, TextDelta):
            if self._text_on_terminal:
                self._console.clear_status()
            self.text.write(event.text)
        elif self.streams_text and isinstance(event, RoundFinished):
            # Each round's text on lines of its own: a model may talk before it calls its tools.
            self.text.end_line()
        self._redraw()

    def _attempt_failed(self, attempt: int, why: str) -> None:
        self.progress.attempt_failed(attempt, why)
        self._redraw()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No live line for the block (a question on the terminal is waiting for its answer)."""
        self._paused = True
        self._console.clear_status()
        if self.streams_text:
            self.text.end_line()
        try:
            yield
        finally:
            self._paused = False

    def _redraw(self) -> None:
        if self._paused:
            return
        if self._showing_progress and not (self._text_on_terminal and self.text.line_open):
            self._console.status(self.progress.line())

    async def _tick(self) -> None:
        while True:
            self._redraw()
            await asyncio.sleep(_REFRESH_SECONDS)

    async def __aenter__(self) -> LiveRun:
        if self._showing_progress:
            logger = logging.getLogger(_ATTEMPTS_LOGGER)
            self._saved_level = logger.level
            # Without -v the command's logging keeps the adapters at CRITICAL; the attempts are INFO.
            logger.setLevel(min(logging.INFO, logger.getEffectiveLevel()))
            logger.addHandler(self._watcher)
            self._ticker = asyncio.create_task(self._tick())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            logger = logging.getLogger(_ATTEMPTS_LOGGER)
            logger.removeHandler(self._watcher)
            logger.setLevel(self._saved_level)
        self._console.clear_status()
        if self.streams_text:
            self.text.end_line()
