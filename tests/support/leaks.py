"""Finding a secret in log records: every text a record can show, and the records that show one."""

from __future__ import annotations

import contextlib
import logging
import traceback
from collections.abc import Iterable, Iterator

__all__ = ["leaking_records", "record_texts"]


def record_texts(record: logging.LogRecord) -> Iterator[str]:
    """Every text ``record`` could show a reader: message, arguments, attributes, traceback and stack."""
    yield str(record.msg)
    yield repr(record.args)
    # A record whose arguments do not fit its format still has its parts checked above and below.
    with contextlib.suppress(TypeError, ValueError):
        yield record.getMessage()
    # Every attribute, so that whatever a logger passed as ``extra`` is checked too.
    for name, value in vars(record).items():
        yield f"{name}={value!r}"
    if record.exc_info and record.exc_info[1] is not None:
        yield "".join(traceback.format_exception(record.exc_info[1]))
    if record.stack_info:
        yield record.stack_info


def leaking_records(records: Iterable[logging.LogRecord], *secrets: str) -> list[str]:
    """``logger: message`` of each record showing any of ``secrets`` anywhere (see :func:`record_texts`)."""
    return [
        f"{record.name}: {record.msg}"
        for record in records
        if any(secret in text for text in record_texts(record) for secret in secrets)
    ]
