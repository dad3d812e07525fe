"""Shared test configuration: the Hypothesis profiles; the tiers sharing a server kept on one xdist worker.

Profiles (``HYPOTHESIS_PROFILE``; ``make test`` and ``make check`` choose ``fixed``, ``ci`` when CI is set):

- ``fixed``: every run tries the same examples (``derandomize``) and reads or writes no example
  database, so a fresh ``make test`` passes or fails the same way every time and one run's failure
  is never replayed into the next. The failing example is printed; pin it with ``@example``.
- ``quick``: ``make check``'s, the same with a quarter of the examples (a property that sets its own
  count through ``tests.support.examples.examples`` gets a quarter of it too), so the inner loop stays
  under a minute; ``make test`` runs them all.
- ``ci``: the same, with three times the examples (and 2,000 hostile bodies per adapter).
- ``default`` (plain ``pytest``): random examples and the ``.hypothesis/`` database, the explorer's
  setting: a failure found once is tried first on the next run until it is fixed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from adapters.offline import OfflineResponsesServer

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("fixed", max_examples=100, deadline=None, derandomize=True, database=None)
settings.register_profile("quick", max_examples=25, deadline=None, derandomize=True, database=None)
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Under xdist (`-n auto --dist loadgroup`) the tests that share an expensive server run on one
    # worker, so it is started once rather than once per worker: the gateway tier's session-scoped
    # LiteLLM proxy (seconds to start, hundreds of MB) and the durable tier's module-scoped Postgres.
    # First of this hook's implementations (tryfirst): pytest-xdist's own reads the marks to group by, and
    # ran before this one added them, so every worker started a proxy and a cluster of its own.
    grouped = []
    for item in items:
        if item.get_closest_marker("gateway") is not None:
            item.add_marker(pytest.mark.xdist_group("gateway"))
            grouped.append(item)
        elif "postgres" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("postgres"))
            grouped.append(item)
    # Longest first: each group runs on one worker, one test after another (minutes), and the tests marked
    # slow start processes; collected late, they were the last minutes of the run with the other workers
    # idle. xdist hands work out in collection order, so they go first (the order is stable otherwise).
    in_group = set(grouped)
    slow = [item for item in items if item not in in_group and item.get_closest_marker("slow") is not None]
    early = in_group.union(slow)
    items[:] = [*grouped, *slow, *(item for item in items if item not in early)]


@pytest.fixture
def offline_server() -> Iterator[OfflineResponsesServer]:
    """The offline stand-in (``adapters/offline``) serving on 127.0.0.1 for one test, stopped after it."""
    # Imported when a test asks for it: the unit tiers run without the stand-in's server (uvicorn).
    from adapters.offline import OfflineResponsesServer

    with OfflineResponsesServer() as running:
        yield running
