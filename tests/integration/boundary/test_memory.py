"""Peak memory over real sockets, each measured in a process of its own (``memory_probe``)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Final

import pytest

from tests.support.processes import CHECKOUT, checkout_first

MIB: Final = 1 << 20
# Starting Python, importing the SDK and building the bomb take a while on a busy shared machine.
PROBE_SECONDS: Final = 300


def _probe(case: str, adapter: str) -> dict[str, object]:
    done = subprocess.run(  # noqa: S603  # our own interpreter running our own probe module
        [sys.executable, "-m", "tests.integration.boundary.memory_probe", case, adapter],
        cwd=CHECKOUT,
        env=checkout_first(),
        capture_output=True,
        text=True,
        timeout=PROBE_SECONDS,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("adapter", ["sse", "json"])
def test_a_gzip_gzip_bomb_under_an_8_mib_cap_raises_peak_rss_by_less_than_64_mib(adapter: str) -> None:
    result = _probe("gzip-gzip-bomb", adapter)

    assert result["outcome"] == (
        "MalformedResponseError: the response body exceeded agent.max_response_bytes (8388608 bytes)"
    )
    rise = result["peak_rise"]
    assert isinstance(rise, int)
    assert rise < 64 * MIB, f"peak RSS rose by {rise / MIB:.1f} MiB"


@pytest.mark.parametrize("adapter", ["sse", "json"])
def test_a_document_of_empty_items_under_the_cap_is_refused_unparsed_within_three_times_the_cap(
    adapter: str,
) -> None:
    # Just under the 8 MiB cap, 2.8 million empty objects: parsed, they once took more than 200 MiB.
    result = _probe("many-small-items", adapter)

    outcome = result["outcome"]
    assert isinstance(outcome, str)
    assert outcome.startswith("MalformedResponseError: the response would take about "), outcome
    assert outcome.endswith("once parsed, more than three times agent.max_response_bytes (8388608 bytes): "
                            "too many small values")  # fmt: skip
    rise = result["peak_rise"]
    assert isinstance(rise, int)
    assert rise < 3 * 8 * MIB, f"peak RSS rose by {rise / MIB:.1f} MiB"
