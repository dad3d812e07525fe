"""Where the command writes: results to stdout, everything else to stderr, all of it redacted."""

from __future__ import annotations

import codecs
import io
import os
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final, TextIO

from adapters.cli.parser import PROG
from adapters.redaction import Redactor
from application.scrubbing import shown_json

__all__ = ["Console", "printable", "printable_settled"]

# Carriage return, then erase to the end of the line: the live line is redrawn where it stands.
_REDRAW: Final = "\r\x1b[K"
_FALLBACK_COLUMNS: Final = 80
# Escape sequences whole (OSC up to its terminator, CSI up to its final byte, any other ESC and the
# character after it), then any C0 control but tab and newline, DEL and C1 (U+009B is a CSI too).
_SEQUENCES: Final = re.compile(
    "(?:\x1b\\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"
    "|(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]?"
    "|\x1b[\x20-\x7e]?"
)
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# An escape sequence the text ends in that a later piece may finish: an OSC without its terminator
# (or with only the ESC of its ESC-backslash terminator), a CSI without its final byte, a lone ESC.
_UNFINISHED: Final = re.compile(
    "(?:(?:\x1b\\]|\x9d)[^\x07\x1b\x9c]*\x1b?|(?:\x1b\\[|\x9b)[0-?]*[ -/]*|\x1b)\\Z"
)


def printable(text: str) -> str:
    """``text`` without escape sequences and control characters other than tab and newline (a CR LF
    is one newline): a gateway's text cannot move the cursor, retitle the window or rewrite a line."""
    return _CONTROL.sub("", _SEQUENCES.sub("", text.replace("\r\n", "\n")))


def printable_settled(text: str) -> tuple[str, str]:
    """``text`` cut where an escape sequence it ends in may still go on (text that arrives in pieces):
    the part before, fit to print, and that unfinished tail as it came ("" when there is none), so
    that the pieces shown one by one read as :func:`printable` of the whole."""
    unfinished = _UNFINISHED.search(text)
    cut = unfinished.start() if unfinished is not None else len(text)
    return printable(text[:cut]), text[cut:]


class Console:
    """Results to stdout; errors, warnings, the banner and the live line to stderr; all redacted.

    ``chatty`` (stderr is a terminal, or -v) lets the banner and usage lines through; errors and
    warnings always go, one line each. The live line (:meth:`status`) is one line of stderr rewritten
    in place, erased before any other stderr line so nothing is written over it.
    """

    def __init__(
        self, stdout: TextIO, stderr: TextIO, *, verbose: bool, chatty: bool, environ: Mapping[str, str]
    ) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.verbose = verbose
        self.chatty = chatty
        # The key from the environment is known at once; one from --config is added once it is read.
        self.redactor = Redactor([environ.get("AGENT_API_KEY")])
        # The offline stand-in logs from its own thread under -v; lines must not cut into each other.
        self._lock = threading.RLock()
        self._status_shown = False
        for stream in (stdout, stderr):
            if isinstance(stream, io.TextIOWrapper):
                # A result must not be lost to a character the terminal's encoding lacks.
                stream.reconfigure(errors="replace")

    def redact(self, text: str) -> str:
        """``text`` fit to print: secrets cut, and control characters (escape sequences a gateway could
        send to move the cursor, retitle the window or rewrite the line) left out."""
        return printable(self.redactor.redact(text))

    def result(self, text: str) -> None:
        self.result_piece(self.redact(text))

    def result_piece(self, text: str) -> None:
        """Already redacted text for stdout, written and flushed at once (the streamed answer)."""
        self.stdout.write(printable(text))
        self.stdout.flush()

    def result_json(self, document: Mapping[str, Any]) -> None:
        try:
            utf8 = codecs.lookup(self.stdout.encoding).name == "utf-8"
        except (AttributeError, TypeError, LookupError):  # a stream that names no usable encoding
            utf8 = False
        # Escapes keep the JSON whole on a stream that cannot carry every character.
        self.result(shown_json(document, ensure_ascii=not utf8) + "\n")

    def status(self, text: str) -> None:
        """Show ``text`` as the live line, cut to the terminal's width: a wrapped line cannot be redrawn."""
        with self._lock:
            self.stderr.write(_REDRAW + self.redact(text)[: self._columns() - 1])
            self.stderr.flush()
            self._status_shown = True

    def clear_status(self) -> None:
        """Erase the live line, if one is shown."""
        with self._lock:
            if self._status_shown:
                self.stderr.write(_REDRAW)
                self.stderr.flush()
                self._status_shown = False

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stderr.fileno()).columns or _FALLBACK_COLUMNS
        except (AttributeError, OSError, ValueError):  # no file descriptor, or not a terminal after all
            return _FALLBACK_COLUMNS

    def line(self, text: str) -> None:
        """One line on stderr, redacted, the live line erased first."""
        with self._lock:
            self.clear_status()
            self.stderr.write(self.redact(text) + "\n")
            self.stderr.flush()

    def ask(self, question: str) -> None:
        """A question on stderr, the live line erased first; the answer is typed after it, on its line."""
        with self._lock:
            self.clear_status()
            self.stderr.write(self.redact(question))
            self.stderr.flush()

    def error(self, text: str) -> None:
        self.line(f"{PROG}: error: {' '.join(text.split())}")

    def warning(self, text: str) -> None:
        self.line(f"{PROG}: warning: {' '.join(text.split())}")

    def info(self, text: str) -> None:
        if self.chatty:
            self.line(text)

    def block(self, text: str) -> None:
        """Lines asked for on the command line (``--trace``): shown whether or not stderr is a terminal."""
        for line in text.splitlines():
            self.line(line)

    def details(self, lines: Sequence[str]) -> None:
        if self.verbose:
            for line in lines:
                self.line(f"  {line}")
