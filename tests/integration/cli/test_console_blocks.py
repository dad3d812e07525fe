"""Every ```console block of README.md, examples/README.md and docs/*.md runs as written, or is listed in
:data:`NOT_RUNNABLE` with the reason it cannot run here.

A page's blocks run in order in one folder of their own (a later block reads what an earlier one wrote,
as a reader following the page would), which holds what the commands name of the checkout (`.venv`,
`examples`, `tests`). Each block is one bash session with the environment of `tests/support/doc_blocks.py`
and this checkout first on the path: no AGENT_* variable, so the CLI answers from its offline stand-in on
127.0.0.1. What each command printed (stdout and stderr, as a terminal shows them) is checked against the
lines the block shows under it (`shows`); a command shown with no output is checked for exit code 0 only,
and one followed by `echo $?` is not held to 0 (the `echo` shows its code). A block that answers a question
(`[y/N] y`) runs on a pseudo-terminal, where the command asks it, and the answer is typed there.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.integration.cli.support import SCRIPT, screen_lines
from tests.support.doc_blocks import (
    ELIDED,
    ROOT,
    TIMEOUT_SECONDS,
    Command,
    commands,
    console_blocks,
    documents,
    environment,
    shows,
)
from tests.support.processes import checkout_first

# The blocks of a page that start with a command, with why they cannot run offline as written.
NOT_RUNNABLE: Final = {
    ("docs/batches.md", "meeting-agents batch-status --db sqlite:///summaries/.runs.sqlite"): (
        "its output is a batch whose gateway answered 503, which the offline stand-in never does"
    ),
    ("docs/cli.md", ".venv/bin/meeting-agents --stream summarize examples/standup-transcript.txt"): (
        "its lines carry notes (`<- stderr`) and a live line a terminal erases, shown as it runs"
    ),
    (
        "docs/performance.md",
        ".venv/bin/python -m benchmarks.profile WORKLOAD VARIANT            # cProfile, own time by owner",
    ): "WORKLOAD and VARIANT are placeholders for a reader to fill in",
    ("docs/prompt-caching.md", ".venv/bin/meeting-agents summarize examples/standup-transcript.txt -v"): (
        "its usage line is a real gateway's: cached tokens and a cost the offline stand-in does not report"
    ),
    ("docs/sdk-seams.md", "make canary"): "it installs the newest openai and dbos from the package index",
}

# A question the command asks and the answer typed after it: `Remove step ...? [y/N] y`.
_QUESTION: Final = re.compile(r"^(?P<question>.*\[y/N\] )(?P<answer>\S+)$")
# Written by the session after each command: the command's exit code, on a line of its own.
_MARK: Final = "\x1e"
_END: Final = re.compile(_MARK + r"(\d+)\n")
_LINKED: Final = ("examples", "tests")


def _blocks() -> Iterator[tuple[str, str]]:
    for document in documents():
        for block in console_blocks(document):
            yield document, block


def _key(document: str, block: str) -> tuple[str, str]:
    return document, commands(block)[0].line


RUNNABLE: Final = {
    document: [
        block for page, block in _blocks() if page == document and _key(page, block) not in NOT_RUNNABLE
    ]
    for document in documents()
}
PAGES: Final = [document for document, runnable in RUNNABLE.items() if runnable]


def _session(block: str) -> str:
    """The block's commands as written, each followed by a line with its exit code; ``$?`` stays its code."""
    lines = []
    for command in commands(block):
        lines.append(command.line)
        lines.append(f'status=$?; printf \'\\n{_MARK}%d\\n\' "$status"; (exit "$status")')
    return "\n".join(lines) + "\n"


def _questions(block: str) -> list[tuple[str, str]]:
    return [
        (found["question"], found["answer"])
        for command in commands(block)
        for line in command.shown
        if (found := _QUESTION.match(line))
    ]


def _on_pipes(session: str, folder: Path) -> str:
    ran = subprocess.run(  # noqa: S603  # bash with the page's own commands
        ["/bin/bash", "-c", session],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=folder,
        env=checkout_first(environment()),
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    return ran.stdout


def _on_terminal(session: str, folder: Path, questions: list[tuple[str, str]]) -> str:
    """``session`` with stdin, stdout and stderr on one pseudo-terminal, typing each answer once its
    question shows; the lines the terminal shows at the end."""
    master, slave = pty.openpty()
    process = subprocess.Popen(  # noqa: S603  # bash with the page's own commands
        ["/bin/bash", "-c", session],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=folder,
        env=checkout_first(environment()),
        start_new_session=True,
    )
    os.close(slave)
    written = b""
    waiting = list(questions)
    answered = 0
    deadline = time.monotonic() + TIMEOUT_SECONDS
    try:
        while True:
            assert time.monotonic() < deadline, f"the session never ended: {written!r}"
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # Linux reports a terminal whose other end is closed as EIO
                    data = b""
                if not data:
                    break
                written += data
            # A question is answered once, when it shows past what the terminal showed at the last answer.
            asked = written.find(waiting[0][0].encode(), answered) if waiting else -1
            if asked >= 0:
                answered = asked + len(waiting[0][0].encode())
                os.write(master, f"{waiting.pop(0)[1]}\n".encode())
        process.wait(timeout=TIMEOUT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=TIMEOUT_SECONDS)
        os.close(master)
    assert not waiting, f"never asked {waiting}: {written!r}"
    return "".join(line + "\n" for line in screen_lines(written.decode("utf-8")))


def _check(document: str, block: str, printed: str) -> None:
    ran = commands(block)
    parts = _END.split(printed)
    outputs, codes = parts[0:-1:2], [int(code) for code in parts[1::2]]
    assert len(codes) == len(ran), f"{document}: {len(codes)} of {len(ran)} commands ran:\n{printed}"
    for index, (command, output, code) in enumerate(zip(ran, outputs, codes, strict=True)):
        output = output.removesuffix("\n")  # the newline the session writes before each code
        shown_code = index + 1 < len(ran) and ran[index + 1].line == "echo $?"
        assert shown_code or code == 0, f"{document}: `{command.line}` exited {code}:\n{output}"
        assert not command.shown or shows(command.shown, output), (
            f"{document}: `{command.line}` printed\n{output}\nwhere the page shows\n"
            + "\n".join(command.shown)
        )


def test_every_console_block_runs_or_is_listed_with_its_reason() -> None:
    found = [_key(document, block) for document, block in _blocks()]
    assert set(NOT_RUNNABLE) <= set(found), "a block listed as not runnable is gone from its page"
    listed = [key for key in found if key in NOT_RUNNABLE]
    assert sum(len(runnable) for runnable in RUNNABLE.values()) + len(listed) == len(found)
    assert {"docs/approval.md", "docs/record-replay-evals.md", "docs/grounding.md"} <= set(PAGES)


def test_a_runnable_block_is_pasted_as_written() -> None:
    for document, runnable in RUNNABLE.items():
        for block in runnable:
            for command in commands(block):
                assert ELIDED not in command.line, f"{document}: `{command.line}` leaves a part out"


def test_the_reader_of_console_blocks() -> None:
    block = "$ make it\nfirst\n...\nlast ... line\n$ echo $?\n0\n$ true\n"
    assert commands(block) == [
        Command("make it", ("first", "...", "last ... line")),
        Command("echo $?", ("0",)),
        Command("true", ()),
    ]
    shown = commands(block)[0].shown
    assert shows(shown, "first\nlast of the line\n")
    assert shows(shown, "first\n2\n3\nlast  line  \n")
    assert not shows(shown, "first\nlast line\nmore\n")
    assert not shows(shown, "zeroth\nfirst\nlast line\n")
    assert _QUESTION.match('Remove step step-4 "Manual QA sign-off"? [y/N] y')


@pytest.mark.slow
@pytest.mark.parametrize("document", PAGES)
def test_a_page_s_console_blocks_print_what_the_page_shows(document: str) -> None:
    with tempfile.TemporaryDirectory(prefix="meeting-agents-console-") as place:
        folder = Path(place)
        (folder / ".venv").symlink_to(
            SCRIPT.parent.parent
        )  # the virtualenv whose console script the CLI tests run
        for name in _LINKED:
            (folder / name).symlink_to(ROOT / name)
        for block in RUNNABLE[document]:
            questions = _questions(block)
            session = _session(block)
            printed = _on_terminal(session, folder, questions) if questions else _on_pipes(session, folder)
            _check(document, block, printed)
