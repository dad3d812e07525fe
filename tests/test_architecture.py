"""The import contracts bite: a wrong-way import in a copy of the packages makes lint-imports fail."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
BY_CAPABILITY = (
    "The application by capability: documents over the two pipelines, over a run, over tool calls BROKEN"
)


def lint_copy(tmp_path: Path, module: str | None = None, line: str = "") -> subprocess.CompletedProcess[str]:
    for package in ("domain", "application", "adapters"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    if module is not None:
        path = tmp_path / (module.replace(".", "/") + ".py")
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    return subprocess.run(  # noqa: S603  # the project's own linter on a copy of its own packages
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_packages_as_they_are_keep_every_contract(tmp_path: Path) -> None:
    done = lint_copy(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in ANSI.sub("", done.stdout)


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("domain.ports", "import openai", "domain is not allowed to import openai"),
        ("domain.messages", "import httpx", "domain is not allowed to import httpx"),
        ("application.tools.registry", "import httpx2", "application is not allowed to import httpx2"),
        (
            "application.tools.guard",
            "import dependency_injector",
            "application is not allowed to import dependency_injector",
        ),
        ("domain.workflow", "import cattrs", "domain is not allowed to import cattrs"),
        (
            "application.runs.loop",
            "from opentelemetry import trace",
            "application is not allowed to import opentelemetry",
        ),
        (
            "domain.errors",
            "import application.tools.guard",
            "Layers: adapters -> application -> domain BROKEN",
        ),
        (
            "application.runs.loop",
            "import adapters.container",
            "Layers: adapters -> application -> domain BROKEN",
        ),
        (
            "adapters.container",
            "from adapters.offline import OfflineResponsesServer",
            "adapters.container is not allowed to import adapters.offline",
        ),
        (
            "adapters.responses.folding",
            "from adapters.offline.render import sse",
            "adapters.responses is not allowed to import adapters.offline",
        ),
        (
            "adapters.offline.rules",
            "from application.meetings.grounding import Grounding",
            "adapters.offline is not allowed to import application.meetings",
        ),
        (
            "adapters.offline.turns",
            "from application import ToolLoop",
            "adapters.offline is not allowed to import application.runs",
        ),
        (
            "application.runs.pipeline",
            "from application.meetings.chunking import Chunk",
            BY_CAPABILITY,
        ),
        (
            "application.tools.registry",
            "import application.runs.run",
            BY_CAPABILITY,
        ),
        (
            "application.meetings.grounding",
            "import application.workflows.editor",
            BY_CAPABILITY,
        ),
        ("application.meetings.summary", "import dbos", "application is not allowed to import dbos"),
        (
            "adapters.container",
            "from adapters.durable import DurableChat",
            "adapters.container is not allowed to import adapters.durable",
        ),
        (
            "adapters.durable.engine",
            "from adapters.cli.display.report import summary_json",
            "adapters.durable is not allowed to import adapters.cli",
        ),
        (
            "adapters.durable_composition",
            "import adapters.cli.meetings.batch",
            "adapters.durable_composition is not allowed to import adapters.cli",
        ),
        (
            "domain.ports",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import openai",
            "domain is not allowed to import openai",
        ),
    ],
)
def test_a_wrong_way_import_breaks_a_contract(tmp_path: Path, module: str, line: str, broken: str) -> None:
    done = lint_copy(tmp_path, module, line)
    assert done.returncode != 0
    assert broken in ANSI.sub("", done.stdout)
