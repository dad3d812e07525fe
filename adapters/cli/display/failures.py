"""A failed request on the command line: its one line (adapters/rendering.py), details and logs with -v."""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Final

from adapters.rendering import describe_failure, shown_url
from application import ToolRunError
from domain import ChatError

__all__ = ["describe_failure", "failure_details", "logging_to", "shown_url"]

_SHOWN_PARTIAL: Final = 500
_LOGGED: Final = ("adapters", "application", "openai", "httpx", "httpx2", "dbos")


def failure_details(error: BaseException, redact: Callable[[str], str] = str) -> list[str]:
    """The lines -v adds: what had arrived, then the traceback with its whole cause chain.

    ``redact`` cuts the secrets out of what had arrived before it is cut to length: cut first, the
    start of an echoed key at the cut would no longer be the key, and would be shown.
    """
    lines: list[str] = []
    if isinstance(error, ChatError):
        # The text of the answer that failed, else the last whole answer of the run before it.
        arrived = error.partial.text if error.partial is not None else ""
        if not arrived and isinstance(error, ToolRunError):
            arrived = error.run.text
        if arrived:
            text = redact(arrived)
            shown = text if len(text) <= _SHOWN_PARTIAL else text[:_SHOWN_PARTIAL] + "..."
            lines.append(f"what had arrived ({len(text)} characters of text): {shown}")
    lines += "".join(traceback.format_exception(error)).rstrip("\n").splitlines()
    return lines


class _LineHandler(logging.Handler):
    """Each record as one call of ``write_line``, which redacts it and keeps it off the live line."""

    def __init__(self, write_line: Callable[[str], None]) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self._write_line = write_line

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._write_line(self.format(record))
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def logging_to(write_line: Callable[[str], None], *, verbose: bool) -> Iterator[None]:
    """Log lines through ``write_line`` with ``verbose``; otherwise none at all, so a failure
    stays one line: the libraries' warnings about it would repeat the error the command prints.
    """
    handler: logging.Handler = _LineHandler(write_line) if verbose else logging.NullHandler()
    # Without any handler, logging's last resort would print warnings anyway: hence the NullHandler.
    loggers = [logging.getLogger(name) for name in _LOGGED]
    saved = [(logger, logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO if verbose else logging.CRITICAL)
        # The command's handler is the one that shows them; the root's (a host's) would show them twice.
        logger.propagate = False
    try:
        yield
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate
