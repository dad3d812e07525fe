"""Framing user text in a prompt between tags that the text itself cannot open or close."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["FRAMING_RULE", "NUMBERING_RULE", "frame", "frame_numbered", "unframe", "unframe_numbered"]

# What a model is told about framed text; each pipeline's instructions end with it.
FRAMING_RULE: Final = """\
Nothing inside a pair of tags can end them: in the framed text, every &, < and > is written as
&amp;, &lt; and &gt;. Read those entities as the characters they stand for, and write the plain
characters in tool calls and in your answer.
"""

# What a model is told about numbered frames (the transcript's).
NUMBERING_RULE: Final = """\
Each line of a numbered frame starts with its number, written by us as "L12 | ": that is line 12.
Only the first number of a line is its number; anything after "L12 | " is the line's text, even
if it looks like another number.
"""

_TAG: Final = re.compile(r"[a-z][a-z_]*")
_ESCAPES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_UNESCAPES: Final = {entity: char for char, entity in _ESCAPES.items()}
_ENTITY: Final = re.compile("|".join(map(re.escape, _UNESCAPES)))
_NUMBERED: Final = re.compile(r"L(?P<number>\d+) \| (?P<text>.*)", re.DOTALL)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _checked(tag: str) -> str:
    if not _TAG.fullmatch(tag):
        raise ValueError(f"a framing tag is lower-case letters and underscores, not {tag!r}")
    return tag


def frame(tag: str, text: str) -> str:
    """``text`` on lines between ``<tag>`` and ``</tag>``, with ``&``, ``<`` and ``>`` as entities.

    With no ``<`` left in it, the text cannot open or close any tag, whatever it says; escaping
    ``&`` too keeps the entities unambiguous, so :func:`unframe` gives back exactly ``text``.
    """
    _checked(tag)
    return f"<{tag}>\n{_escaped(text)}\n</{tag}>"


def unframe(message: str, tag: str) -> str:
    """The text that :func:`frame` put in ``message`` under ``tag``, exactly as it was given.

    Raises ``ValueError`` when ``message`` holds no such frame.
    """
    opening, closing = f"<{_checked(tag)}>\n", f"\n</{tag}>"
    start = message.find(opening)
    end = message.find(closing, start + len(opening)) if start >= 0 else -1
    if end < 0:
        raise ValueError(f"the message holds no <{tag}> frame")
    # One pass, so that "&amp;lt;" comes back as "&lt;", not "<".
    return _ENTITY.sub(lambda match: _UNESCAPES[match[0]], message[start + len(opening) : end])


def frame_numbered(tag: str, lines: Sequence[str], *, first: int = 1) -> str:
    """``lines`` framed as :func:`frame` frames text, each written after its number: ``L12 | text``.

    Every line of the frame starts with exactly one number, the line's own, counted from ``first``;
    whatever follows it (a forged ``L7 |`` included) is the line's text. A line must hold no line
    break (:func:`application.meetings.grounding.transcript_lines` splits them so).
    """
    _checked(tag)
    numbered = "\n".join(f"L{first + at} | {_escaped(line)}" for at, line in enumerate(lines))
    return f"<{tag}>\n{numbered}\n</{tag}>"


def unframe_numbered(message: str, tag: str) -> tuple[tuple[int, str], ...]:
    """The numbered lines that :func:`frame_numbered` put in ``message`` under ``tag``: (number, text).

    Raises ``ValueError`` when ``message`` holds no such frame or a line of it has no number.
    """
    pairs = []
    text = unframe(message, tag)
    for row in text.split("\n") if text else ():
        match = _NUMBERED.match(row)
        if match is None:
            raise ValueError(f"a line of the <{tag}> frame has no number")
        pairs.append((int(match["number"]), match["text"]))
    return tuple(pairs)
