"""The README and architecture.md point only at files that exist, so that a reader who follows a
pointer (a module, its test, a benchmark) finds it after any move or rename."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "architecture.md", "examples/README.md")
TOP = ("adapters", "application", "benchmarks", "domain", "examples", "tests")

# A path in backticks, `adapters/responses/folding.py` or `tests/conformance/`, or a bare file name
# in backticks, `test_payload.py` (a table cell naming a second file beside a qualified first one).
_QUALIFIED = re.compile(r"`((?:" + "|".join(TOP) + r")/[\w./-]*)`")
_BARE = re.compile(r"`(\w+\.(?:py|json|txt))`")
# What a command writes when it runs: named by the README, never committed.
GENERATED = frozenset({"benchmarks/results/latest.json"})


def _files() -> set[Path]:
    return {path.relative_to(ROOT) for top in TOP for path in (ROOT / top).rglob("*") if path.is_file()}


def pointers(text: str) -> tuple[set[str], set[str]]:
    """The qualified paths and the bare file names a document names in backticks."""
    return set(_QUALIFIED.findall(text)), set(_BARE.findall(text))


def test_pointers_are_read_from_backticks_only() -> None:
    qualified, bare = pointers("see `tests/domain/` and `adapters/x.py`, `y.py` but not tests/z.py or `z.md`")
    assert qualified == {"tests/domain/", "adapters/x.py"}
    assert bare == {"y.py"}


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_file_a_document_names_exists(document: str) -> None:
    qualified, bare = pointers((ROOT / document).read_text(encoding="utf-8"))
    assert qualified, f"{document} names no file at all: the pattern no longer matches its pointers"
    missing = sorted(path for path in qualified - GENERATED if not (ROOT / path.rstrip("/")).exists())
    names = {path.name for path in _files()}
    missing += sorted(f"{name} (anywhere)" for name in bare - names)
    assert not missing, f"{document} names files that do not exist: {missing}"
