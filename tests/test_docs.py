"""The README, architecture.md and every page of docs/ point only at files that exist, so that a reader
who follows a pointer (a module, its test, a benchmark, another page) finds it after any move or rename."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = (
    "README.md",
    "architecture.md",
    "examples/README.md",
    "benchmarks/README.md",
    *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")),
)
TOP = ("adapters", "application", "benchmarks", "docs", "domain", "examples", "tests")

# A path in backticks, `adapters/responses/folding.py` or `tests/conformance/`, or a bare file name
# in backticks, `test_payload.py` (a table cell naming a second file beside a qualified first one).
_QUALIFIED = re.compile(r"`((?:" + "|".join(TOP) + r")/[\w./-]*)`")
_BARE = re.compile(r"`(\w+\.(?:py|json|txt))`")
# A Markdown link to a file of this checkout, [the page](docs/batches.md#a-heading): not a URL.
_LINK = re.compile(r"\]\((?![a-z]+:)((?:[\w.-]+/)*[\w.-]+\.\w+|(?:[\w.-]+/)+)(?:#[\w-]*)?\)")
# What a command writes when it runs: named by a document, never committed.
GENERATED = frozenset({"benchmarks/results/latest.json", "benchmarks/results/grounding.json"})


def _files() -> set[Path]:
    return {path.relative_to(ROOT) for top in TOP for path in (ROOT / top).rglob("*") if path.is_file()}


def pointers(text: str) -> tuple[set[str], set[str]]:
    """The qualified paths and the bare file names a document names in backticks."""
    return set(_QUALIFIED.findall(text)), set(_BARE.findall(text))


def links(text: str) -> set[str]:
    """The targets of a document's Markdown links to files, without their anchors."""
    return set(_LINK.findall(text))


def test_pointers_are_read_from_backticks_only() -> None:
    qualified, bare = pointers("see `tests/domain/` and `adapters/x.py`, `y.py` but not tests/z.py or `z.md`")
    assert qualified == {"tests/domain/", "adapters/x.py"}
    assert bare == {"y.py"}


def test_links_are_read_to_files_only() -> None:
    text = (
        "[a](docs/a.md) [b](../architecture.md#grounding) [c](https://x.dev/y.md) [d](#here) [e](docs/)"
        " `f[g](tools)` [h](mailto:x@y.dev)"
    )
    assert links(text) == {"docs/a.md", "../architecture.md", "docs/"}


def test_every_page_of_docs_is_checked() -> None:
    assert "docs/README.md" in DOCUMENTS
    assert "docs/configuration.md" in DOCUMENTS


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_file_a_document_names_exists(document: str) -> None:
    text = (ROOT / document).read_text(encoding="utf-8")
    qualified, bare = pointers(text)
    missing = sorted(path for path in qualified - GENERATED if not (ROOT / path.rstrip("/")).exists())
    names = {path.name for path in _files()}
    missing += sorted(f"{name} (anywhere)" for name in bare - names)
    folder = (ROOT / document).parent
    missing += sorted(f"{link} (link)" for link in links(text) if not (folder / link).exists())
    assert not missing, f"{document} names files that do not exist: {missing}"


def test_every_configuration_key_has_its_row_in_the_configuration_page() -> None:
    from adapters.settings import environment_variables

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = [
        f"{'.'.join(path)} ({name})"
        for name, path in environment_variables().items()
        if f"| `{'.'.join(path)}` | `{name}` |" not in page
    ]
    assert not missing, f"docs/configuration.md has no row (key, environment variable, ...) for {missing}"


def test_the_readme_stays_a_page_a_newcomer_reads_through() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 300, f"README.md has {lines} lines: move the detail to a page of docs/"


def test_the_docs_index_links_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {path.name for path in (ROOT / "docs").glob("*.md")} - {"README.md"}
    unlinked = sorted(name for name in pages if f"]({name})" not in index)
    assert not unlinked, f"docs/README.md has no row linking {unlinked}: add one to its table"
