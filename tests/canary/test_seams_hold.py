"""The product reaches the SDKs' private parts only through their seams: a private name, header or
module of openai or DBOS anywhere else in ``adapters/`` fails here, naming the file and the line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEAMS = {
    "openai": ROOT / "adapters" / "responses" / "sdk_seam.py",
    "dbos": ROOT / "adapters" / "durable" / "dbos_seam.py",
}
# What only a seam may name: the libraries' private modules, and the private parts the seams wrap.
PRIVATE = {
    "openai": re.compile(
        r"(from|import)\s+openai\._|_make_sse_decoder|_process_response_data|\._iterator\b"
        r"|x-stainless|[\"']security[\"']|[\"']_client[\"']|openai\._",
        re.IGNORECASE,
    ),
    "dbos": re.compile(r"(from|import)\s+dbos\._|_recover_pending_workflows|__dbos_console|dbos\._"),
}


def _lines(library: str) -> list[str]:
    found = []
    for path in sorted((ROOT / "adapters").rglob("*.py")):
        if path == SEAMS[library]:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if PRIVATE[library].search(code):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


@pytest.mark.parametrize("library", sorted(SEAMS))
def test_private_parts_are_reached_only_through_the_seam(library: str) -> None:
    assert _lines(library) == [], f"move these into {SEAMS[library].relative_to(ROOT)}"


def test_the_patterns_see_a_private_use() -> None:
    assert PRIVATE["openai"].search("from openai._streaming import ServerSentEvent")
    assert PRIVATE["openai"].search("stream._iterator.aclose()")
    assert PRIVATE["dbos"].search("DBOS._recover_pending_workflows([executor])")
    assert PRIVATE["openai"].search('getattr(client, "_client", None)')
    assert not PRIVATE["openai"].search("self._client = client")
