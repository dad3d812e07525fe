"""Finding a secret in log records: every text a record can show, and the records that show one."""

from __future__ import annotations

import contextlib
import logging
import traceback
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["leaking_records", "reachable_strings", "record_texts"]


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


# What an object carries as code or as the program's own state, not as data: not walked.
_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
             types.TracebackType, types.FrameType, types.CodeType)  # fmt: skip


def reachable_strings(root: object, *, limit: int = 200_000) -> Iterator[tuple[str, str]]:
    """``(path, text)`` for every string reachable from ``root``: attributes (``__dict__`` and slots),
    attrs fields, exception arguments, causes, contexts and notes, and the items and keys of
    tuples, lists, sets and mappings, at any depth, each object once. Also the ``str`` and ``repr``
    of every exception on the way. Code and the interpreter's own state (classes, functions,
    frames, tracebacks) are not data an object carries, and are not walked."""
    seen: set[int] = set()
    pending: list[tuple[str, Any]] = [("root", root)]
    while pending and len(seen) < limit:
        path, value = pending.pop()
        if isinstance(value, str):
            yield path, value
            continue
        if value is None or isinstance(value, (int, float, bytes, *_NOT_DATA)) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, Mapping):
            for key, item in value.items():
                pending += [(f"{path}[key {key!r:.40}]", key), (f"{path}[{key!r:.40}]", item)]
            continue
        if isinstance(value, list | tuple | set | frozenset):
            pending += [(f"{path}[{index}]", item) for index, item in enumerate(value)]
            continue
        if isinstance(value, BaseException):
            yield f"str({path})", str(value)
            yield f"repr({path})", repr(value)
            pending += [(f"{path}.args", value.args), (f"{path}.__cause__", value.__cause__)]
            pending += [(f"{path}.__context__", value.__context__)]
            pending += [(f"{path}.__notes__", getattr(value, "__notes__", None))]
        for name, item in vars(value).items() if hasattr(value, "__dict__") else ():
            pending.append((f"{path}.{name}", item))
        for cls in type(value).__mro__:
            for name in getattr(cls, "__slots__", ()):
                with contextlib.suppress(AttributeError):
                    pending.append((f"{path}.{name}", getattr(value, name)))
