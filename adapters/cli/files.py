"""Reading the command's input files (or stdin) as UTF-8 text, and replacing --output atomically."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, Final, Self

__all__ = ["CHARS_PER_TOKEN", "STDIN", "AtomicOutput", "InputError", "long_transcripts", "read_text"]

STDIN: Final = "-"
CHARS_PER_TOKEN: Final = 4
"""About how many characters a token takes: what the long-transcript warning estimates tokens with."""
_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")


class InputError(Exception):
    """An input or output path cannot be used: exit code 2, one line that names it."""


def _where(what: str, argument: str) -> str:
    return f"{what} (stdin)" if argument == STDIN else f"{what} {argument!r}"


def read_text(argument: str, what: str, stdin: BinaryIO, *, limit: int | None = None) -> str:
    """The text of file ``argument`` (``-`` reads ``stdin``): UTF-8, a leading BOM dropped.

    ``what`` names the argument in errors (``TRANSCRIPT_FILE``). A file that cannot be read, holds
    NUL bytes (binary, or UTF-16), is not UTF-8 or is longer than ``limit`` bytes (of which no more
    than one byte past ``limit`` is read, so ``/dev/zero`` or an endless pipe is refused at once)
    raises :class:`InputError` saying where.
    """
    where = _where(what, argument)
    size = -1 if limit is None else limit + 1
    try:
        if argument == STDIN:
            data = stdin.read(size)
        else:
            with Path(argument).open("rb") as file:
                data = file.read(size)
    except OSError as exc:
        raise InputError(f"{where}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if limit is not None and len(data) > limit:
        raise InputError(
            f"{where}: larger than agent.max_transcript_bytes ({limit:,} bytes); "
            "split it, or raise the limit (env AGENT_MAX_TRANSCRIPT_BYTES)"
        )
    if data.startswith(_UTF16_BOMS):
        raise InputError(f"{where}: UTF-16 text; save it as UTF-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(f"{where}: a binary file, not text (a NUL byte at offset {nul})")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8, e.g. iconv -f latin1 -t utf-8"
        ) from None


def long_transcripts(lengths: Sequence[tuple[str | None, int]], limit: int) -> str | None:
    """The one-line warning for the transcripts (each ``(path, characters)``, the path None for the
    command's one transcript) longer than ``limit`` characters (``agent.transcript_warning_chars``), or
    None when none is: its size and estimated tokens (the longest's, when several are)."""
    over = [(path, length) for path, length in lengths if length > limit]
    if not over:
        return None
    path, length = max(over, key=lambda pair: pair[1])
    size = f"{length:,} characters (about {length // CHARS_PER_TOKEN:,} tokens)"
    if len(over) > 1:
        return (
            f"{len(over)} transcripts are over agent.transcript_warning_chars={limit} (the longest, "
            f"{path!r}, {size}); the model may cut them short or refuse them"
        )
    named = "the transcript" if path is None else f"the transcript {path!r}"
    return (
        f"{named} is {size}, over agent.transcript_warning_chars={limit}; "
        "the model may cut it short or refuse it"
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _default_mode() -> int:
    # A new file gets what open() would give it; the umask can only be read by setting it.
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


class AtomicOutput:
    """A file that is replaced in one step: written to a temporary file in the same folder, then
    renamed over the target, so a reader sees the old file or the new one, never half of either.

    :meth:`open` checks the target and creates the temporary file at once, so an unusable path is
    found before any paid request is made. :meth:`commit` writes and renames; :meth:`discard`
    (also on leaving a ``with`` block without a commit) removes the temporary file.
    """

    def __init__(self, target: Path, temporary: Path, descriptor: int, mode: int) -> None:
        self.target = target
        self._temporary = temporary
        self._descriptor: int | None = descriptor
        self._mode = mode

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        inputs: Sequence[tuple[str, str]] = (),
        force: bool = False,
        option: str = "--output",
    ) -> Self:
        """Check ``path`` and make the temporary file beside it.

        ``inputs`` are ``(name, argument)`` pairs of the command's input files: replacing one of them
        needs ``force``; ``option`` names the path in errors. Raises :class:`InputError` for a folder,
        a missing folder, something that is not a regular file, a folder that cannot be written, or
        an input file without ``force``.
        Like ``mv``, replacing needs the folder to be writable, not the file; the file's permissions
        carry over to its replacement.
        """
        where = f"{option} {str(path)!r}"
        # Writing through a symbolic link is what the user asked for; replacing the link would not be.
        target = Path(os.path.realpath(path))
        if target.is_dir():
            raise InputError(f"{where}: is a folder; name a file")
        folder = target.parent
        if not folder.is_dir():
            raise InputError(f"{where}: the folder {str(folder)!r} does not exist")
        for name, argument in inputs:
            if argument != STDIN and not force and _same_file(target, Path(argument)):
                raise InputError(f"{where}: is the input file {name}; add --force to replace it")
        existing = None
        with contextlib.suppress(FileNotFoundError):
            existing = target.stat()
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise InputError(f"{where}: is not a regular file")
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else _default_mode()
        try:
            descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as exc:
            raise InputError(
                f"{where}: cannot write in {str(folder)!r} ({exc.strerror or type(exc).__name__})"
            ) from None
        return cls(target, Path(temporary), descriptor, mode)

    def commit(self, text: str) -> None:
        """Write ``text`` (UTF-8), flush it to disk and rename it over the target."""
        descriptor = self._descriptor
        if descriptor is None:
            raise RuntimeError("this output was already committed or discarded")
        self._descriptor = None
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as file:
                file.write(text)
                file.flush()
                os.fchmod(file.fileno(), self._mode)
                os.fsync(file.fileno())
            os.replace(self._temporary, self.target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                self._temporary.unlink()
            raise

    def discard(self) -> None:
        """Remove the temporary file; the target is left as it was. Safe to call more than once."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            os.close(descriptor)
            with contextlib.suppress(FileNotFoundError):
                self._temporary.unlink()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.discard()
