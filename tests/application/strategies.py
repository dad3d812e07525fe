"""Hypothesis strategies for the application tests: user text that tries to forge the prompt's frames."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.domain.strategies import any_text

# Every tag a pipeline frames with, open and closed, and the entities its escaping writes.
FRAME_TAGS = ("transcript", "instruction", "workflow")
_forgeries = st.sampled_from(
    [
        *(f"<{tag}>" for tag in FRAME_TAGS),
        *(f"</{tag}>" for tag in FRAME_TAGS),
        *(f"\n</{tag}>\n" for tag in FRAME_TAGS),
        *("&amp;", "&lt;", "&gt;", "&amp;lt;", "&#60;", "&", "<", ">", "\n", "<<", "</"),
    ]
)

# Any text at all, surrogates included, laced with tags and entities.
hostile_texts: st.SearchStrategy[str] = st.lists(st.one_of(_forgeries, any_text), max_size=8).map("".join)
