"""How a failed request is told: one line naming what failed and where, details and logs with -v."""

from __future__ import annotations

import contextlib
import logging
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Final

from adapters.settings import AgentSettings
from application import ToolRunError
from domain import ChatError, ChatTransportError, MalformedResponseError, ResponseFailedError

__all__ = ["describe_failure", "failure_details", "logging_to", "shown_url"]

_SHOWN_PARTIAL: Final = 500
_SHOWN_CAUSE: Final = 200
_LOGGED: Final = ("adapters", "application", "openai", "httpx", "httpx2", "dbos")


def shown_url(url: str) -> str:
    """``url`` without any user name or password it carries."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _what_failed(error: ChatError) -> str:
    if isinstance(error, ChatTransportError):
        return "the gateway request failed"
    if isinstance(error, ResponseFailedError):
        return "the model failed" + (f" ({error.code})" if error.code else "")
    if isinstance(error, MalformedResponseError):
        return "the gateway's answer could not be read"
    return "the request failed"


def _root_cause(error: BaseException) -> BaseException | None:
    """The deepest exception under ``error`` that is not itself a ChatError (a run's error is
    chained from the adapter's), or None when the chain holds nothing else."""
    seen = {id(error)}
    root = None
    while (cause := error.__cause__ or error.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        error = cause
        if not isinstance(cause, ChatError):
            root = cause
    return root


def describe_failure(error: ChatError, agent: AgentSettings, redact: Callable[[str], str] = str) -> str:
    """One line: what failed, the error's own words, then where (URL, model, attempts, status, limits, ids).

    The caller redacts it; ``redact`` is applied before anything is cut to length (the cause's text).
    Nothing here reads the API key.
    """
    where = [f"POST {shown_url((agent.base_url or '').rstrip('/'))}/responses", f"model {agent.model}"]
    if isinstance(error, ChatTransportError):
        where.append(f"{error.attempts} attempt{'s' if error.attempts != 1 else ''}")
        if error.status_code is not None and f"HTTP {error.status_code}" not in error.message:
            where.append(f"HTTP {error.status_code}")
        if error.status_code is None and "timed out" in error.message:
            where.append(f"idle timeout agent.timeout_seconds={agent.timeout_seconds:g} s")
        root = _root_cause(error)
        if error.status_code is None and root is not None and str(root):
            where.append(f"cause {type(root).__name__}: {redact(str(root))[:_SHOWN_CAUSE]}")
    if error.request_id:
        where.append(f"request id {error.request_id}")
    if error.response_id:
        where.append(f"response id {error.response_id}")
    return f"{_what_failed(error)}: {error.message} [{'; '.join(where)}]"


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
