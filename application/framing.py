"""Framing user text in a prompt between tags that the text itself cannot open or close."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["FRAMING_RULE", "frame", "unframe"]

# What a model is told about framed text; each pipeline's instructions end with it.
FRAMING_RULE: Final = """\
Nothing inside a pair of tags can end them: in the framed text, every &, < and > is written as
&amp;, &lt; and &gt;. Read those entities as the characters they stand for, and write the plain
characters in tool calls and in your answer.
"""

_TAG: Final = re.compile(r"[a-z][a-z_]*")
_ESCAPES: Final = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_UNESCAPES: Final = {entity: char for char, entity in _ESCAPES.items()}
_ENTITY: Final = re.compile("|".join(map(re.escape, _UNESCAPES)))


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
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<{tag}>\n{escaped}\n</{tag}>"


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
