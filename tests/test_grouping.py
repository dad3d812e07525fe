"""The tiers that share one expensive server really run on one pytest-xdist worker.

``tests/conftest.py`` marks the gateway tier (one LiteLLM proxy) and the tests on the ``postgres``
fixture (one Postgres cluster) with an ``xdist_group``, and ``make test`` runs ``--dist loadgroup``.
Nothing fails when the grouping is lost: each worker starts its own proxy and its own cluster, and
the suite takes minutes longer. It was lost twice without a sound: the hook added the marks after
pytest-xdist had read them (hook order), and pytest 9.2's structured node ids ignore the group suffix
pytest-xdist 3.8 writes (pytest-dev/pytest-xdist#1386, hence ``pytest<9.2`` in the dev extra).
So this runs the project's own hook in a small pytest session of its own, on two workers.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support.processes import checkout_first

LINE = re.compile(r"^\[(gw\d+)\] .*?PASSED (\S+)", re.MULTILINE)

CONFTEST = """
import pytest

from tests.conftest import pytest_collection_modifyitems  # noqa: F401  # the project's own hook


@pytest.fixture
def postgres() -> str:
    return "a stand-in for the cluster"
"""

GATEWAY = """
import pytest

pytestmark = pytest.mark.gateway

@pytest.mark.parametrize("n", range(6))
def test_through_the_proxy(n: int) -> None:
    assert n >= 0
"""

DATABASE = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_on_the_cluster(postgres: str, n: int) -> None:
    assert postgres and n >= 0
"""

PLAIN = """
import pytest

@pytest.mark.parametrize("n", range(12))
def test_alone(n: int) -> None:
    assert n >= 0
"""


@pytest.mark.slow
def test_each_shared_server_tier_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gateway: a stand-in\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_gateway.py").write_text(GATEWAY, encoding="utf-8")
    (tmp_path / "test_database.py").write_text(DATABASE, encoding="utf-8")
    (tmp_path / "test_plain.py").write_text(PLAIN, encoding="utf-8")
    done = subprocess.run(  # this interpreter's pytest on a few files of our own
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=checkout_first(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in LINE.findall(done.stdout):
        workers[nodeid.partition("::")[0]].add(worker)
    assert set(workers) == {"test_gateway.py", "test_database.py", "test_plain.py"}, done.stdout
    assert len(workers["test_gateway.py"]) == 1, done.stdout
    assert len(workers["test_database.py"]) == 1, done.stdout
    assert "test_through_the_proxy[0]@gateway" in done.stdout
    assert "test_on_the_cluster[0]@postgres" in done.stdout
