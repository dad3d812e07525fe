"""The documents' code blocks, read as a reader copies them and run as a reader pastes them into a file.

:func:`documents` lists every page whose ```python blocks the suite runs (README.md, examples/README.md
and every ``docs/*.md``, so a page added later is picked up); :func:`blocks` and :func:`section_block`
read a page's fenced blocks; :func:`run_python` runs one in a fresh interpreter working in a folder of
the test's, this checkout first on its path and no ``AGENT_*`` or ``OTEL_*`` variable leaking in unless
the test sets it (:func:`environment`). :func:`console_blocks` and :func:`commands` read the terminal
sessions of ```console blocks and :func:`shows` checks what a command printed against what a block shows.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.support.processes import CHECKOUT, checkout_first, clean_environment

__all__ = [
    "ELIDED",
    "ROOT",
    "TIMEOUT_SECONDS",
    "Command",
    "blocks",
    "commands",
    "console_blocks",
    "documents",
    "environment",
    "exported_variables",
    "run_python",
    "section",
    "section_block",
    "shows",
]

ROOT: Final = CHECKOUT
# Bounds a hung block only: each takes a few seconds, most of it importing the SDK.
TIMEOUT_SECONDS: Final = 180.0
_BLOCK: Final = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_HEADING: Final = re.compile(r"^#{1,6} ", re.MULTILINE)
# A console block may sit in a list item: its fence and lines are indented alike.
_CONSOLE: Final = re.compile(r"^( *)```console\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)
_PROMPT: Final = "$ "
ELIDED: Final = "..."


def documents() -> list[str]:
    """Every page whose blocks run, relative to the checkout's root."""
    pages = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md"))
    return ["README.md", "examples/README.md", *pages]


def _text(document: str) -> str:
    return (ROOT / document).read_text(encoding="utf-8")


def blocks(document: str, language: str) -> list[str]:
    """The bodies of ``document``'s blocks fenced as ``language``, in order."""
    found: list[str] = [body for lang, body in _BLOCK.findall(_text(document)) if lang == language]
    return found


def section(document: str, heading: str) -> str:
    """The part of ``document`` under the heading line ``heading`` (``## Batches``), up to the next heading
    of any level; a missing heading is a ``ValueError`` naming the page."""
    text = _text(document)
    start = text.find(f"\n{heading}\n")
    if start < 0:
        raise ValueError(f"{document} has no heading {heading!r}")
    body = text[start + len(heading) + 2 :]
    # Headings inside fenced blocks (a comment line of a shell or Python block) are not headings.
    fenced = [match.span() for match in _BLOCK.finditer(body)]
    for found in _HEADING.finditer(body):
        if not any(begin <= found.start() < end for begin, end in fenced):
            return body[: found.start()]
    return body


def section_block(document: str, heading: str, language: str = "python") -> str:
    """The one block fenced as ``language`` under ``heading`` in ``document``."""
    found: list[str] = [body for lang, body in _BLOCK.findall(section(document, heading)) if lang == language]
    if len(found) != 1:
        raise ValueError(f"{document}, {heading!r}: {len(found)} {language} blocks, expected one")
    return found[0]


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without AGENT_* or OTEL_* variables, plus ``extra``."""
    kept = {name: value for name, value in clean_environment().items() if not name.startswith("OTEL_")}
    return {**kept, **(extra or {})}


def run_python(body: str, environ: Mapping[str, str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``body`` in a fresh interpreter working in ``folder`` (a block may write files), this checkout's
    packages first on its path."""
    return subprocess.run(  # noqa: S603  # this interpreter running the document's own code
        [sys.executable, "-c", body],
        capture_output=True,
        text=True,
        cwd=folder,
        env=checkout_first(environ),
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


def exported_variables(shell: str) -> dict[str, str]:
    """The ``export NAME=VALUE`` lines of a shell block, as the shell would set them."""
    variables = {}
    for line in shell.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"] and "=" in words[1]:
            name, value = words[1].split("=", 1)
            variables[name] = value
    return variables


def console_blocks(document: str) -> list[str]:
    """The bodies of ``document``'s ```console blocks, in order, a list item's indentation taken off."""
    found = []
    for indent, body in _CONSOLE.findall(_text(document)):
        found.append("".join(line.removeprefix(indent) for line in body.splitlines(keepends=True)))
    return found


@dataclass(frozen=True)
class Command:
    """One ``$`` line of a console block (``line``, without the ``$ ``) and the lines shown under it."""

    line: str
    shown: tuple[str, ...]


def commands(block: str) -> list[Command]:
    """A console block's commands, each with the output lines the block shows for it (none: not shown)."""
    found: list[Command] = []
    for line in block.splitlines():
        if line.startswith(_PROMPT):
            found.append(Command(line.removeprefix(_PROMPT), ()))
        elif found:
            found[-1] = Command(found[-1].line, (*found[-1].shown, line))
        else:
            raise ValueError(f"output before any command: {line!r}")
    return found


def _pattern(shown: Sequence[str]) -> re.Pattern[str]:
    parts = []
    for line in shown:
        if line.strip() == ELIDED:
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            pieces = (re.escape(piece) for piece in line.rstrip().split(ELIDED))
            parts.append("[^\n]*".join(pieces) + r"\n")
    return re.compile("".join(parts))


def shows(shown: Sequence[str], printed: str) -> bool:
    """Whether ``printed`` is what the lines ``shown`` show, line for line, trailing spaces aside.

    A line ``...`` stands for any number of lines (none too); ``...`` inside a line for any part of that
    line, a part the page leaves out (a folder, a time) or one the command itself cut short (``quote="Then
    Tom wil...)``). A command line has no such gap: a reader pastes it as it is.
    """
    text = "".join(line.rstrip() + "\n" for line in printed.splitlines())
    return _pattern(shown).fullmatch(text) is not None
