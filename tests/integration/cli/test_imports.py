"""What the command imports, in a fresh process as a user runs it: only what its command line needs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest

from adapters.offline import OfflineResponsesServer
from tests.integration.cli.support import TRANSCRIPT, run_probe

# The run's machinery: the SDK and its HTTP clients, the container, telemetry, the durable engine and the
# stand-in's server. Reading the command line needs none of it.
RUNTIME = (
    "openai",
    "httpx",
    "httpx2",
    "pydantic",
    "dependency_injector",
    "opentelemetry",
    "dbos",
    "sqlalchemy",
    "uvicorn",
    "adapters.container",
    "adapters.responses",
    "adapters.telemetry",
    "adapters.durable",
    "adapters.offline.server",
)
# The use cases and their values, which a run needs and the command line only to check --input-format
# and --language.
USE_CASES = ("application", "domain", "cattrs")
# Of the command's own modules, what reading its command line needs: the package, the entry point, the
# grammar and the exit codes; never the run (app), nor what the commands show or add (display, meetings,
# workflows).
READING = ["adapters.cli", "adapters.cli.entry", "adapters.cli.exit_codes", "adapters.cli.parser"]

_PROBE = """
import contextlib, io, json, sys
from adapters.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
    code = main(json.loads(sys.argv[1]), environ=json.loads(sys.argv[2]))
print(json.dumps({"code": code, "modules": sorted(sys.modules), "stderr": err.getvalue()}))
"""


def _imported(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[int, set[str], str]:
    """``main(argv)`` in a new interpreter: its exit code, every module it imported, and its stderr."""
    done = run_probe(_PROBE, json.dumps(list(argv)), json.dumps(dict(environ or {})))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    return report["code"], set(report["modules"]), report["stderr"]


def _of(modules: set[str], packages: Sequence[str]) -> list[str]:
    """The ``modules`` that are one of ``packages`` or inside one."""
    return sorted(name for name in modules if any(name == p or name.startswith(p + ".") for p in packages))


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["summarize", "--no-such-option"], ["frobnicate"]],
    ids=["help", "version", "unknown-option", "unknown-command"],
)
def test_reading_the_command_line_imports_neither_the_runtime_nor_the_use_cases(argv: list[str]) -> None:
    code, modules, _ = _imported(argv)

    assert code in (0, 2)
    assert _of(modules, ("adapters.cli",)) == READING
    assert _of(modules, RUNTIME + USE_CASES) == []


@pytest.mark.parametrize("command", ["summarize", "edit-workflow", "resume", "batch", "eval"])
def test_a_subcommand_s_help_imports_no_runtime(command: str) -> None:
    code, modules, _ = _imported([command, "--help"])

    assert code == 0
    assert _of(modules, RUNTIME) == []


def test_a_summary_from_a_gateway_imports_no_stand_in_server_no_dbos_and_no_tracing_sdk() -> None:
    with OfflineResponsesServer() as server:
        environ = {"AGENT_BASE_URL": server.base_url, "AGENT_API_KEY": "sk-imports", "AGENT_MODEL": "offline"}
        code, modules, stderr = _imported(["summarize", str(TRANSCRIPT)], environ)
        asked = len(server.requests)

    assert (code, asked > 0) == (0, True), stderr
    assert {"openai", "adapters.container"} <= modules
    unneeded = (
        "adapters.offline.server",
        "uvicorn",
        "dbos",
        "sqlalchemy",
        "adapters.durable",
        "opentelemetry.sdk",
    )
    assert _of(modules, unneeded) == []


def test_a_summary_imports_no_run_documents() -> None:
    # Run documents are read and written only by --save-run, resume and an edit that waits.
    with OfflineResponsesServer() as server:
        environ = {"AGENT_BASE_URL": server.base_url, "AGENT_API_KEY": "sk-imports", "AGENT_MODEL": "offline"}
        code, modules, stderr = _imported(["summarize", str(TRANSCRIPT)], environ)

    assert code == 0, stderr
    assert "application" in modules
    assert _of(modules, ("application.documents",)) == []


_NAMES_PROBE = """
import json, sys
import adapters.container
import adapters.responses.event_types as event_types
from application import Transcript
print(json.dumps({"modules": sorted(sys.modules), "validator": event_types._by_tag_validator is not None}))
"""


def test_the_application_s_names_import_their_own_modules_and_the_event_validator_waits_for_an_event() -> (
    None
):
    done = run_probe(_NAMES_PROBE)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])

    assert not report["validator"]
    assert _of(set(report["modules"]), ("application.documents",)) == []


# Only what the settings import counts: a tool that starts with the interpreter (coverage, under CI) may have
# read a TOML file of its own before.
_SETTINGS_PROBE = """
import json, sys
before = set(sys.modules)
from adapters.settings import load_config_file, resolve_settings
resolve_settings(config={}, environ={})
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_settings_without_a_config_file_import_no_config_file_parser() -> None:
    done = run_probe(_SETTINGS_PROBE)
    assert done.returncode == 0, done.stderr

    assert _of(set(json.loads(done.stdout.splitlines()[-1])), ("yaml", "tomllib")) == []


_COLLECTOR_PROBE = """
import gc, json, sys
from adapters.cli import main
argv, environ = json.loads(sys.argv[1]), json.loads(sys.argv[2])
if argv[0] == "own":
    sys.argv = ["meeting-agents", *argv[1:]]
    code = main(environ=environ)
else:
    code = main(argv[1:], environ=environ)
print(json.dumps({"code": code, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}))
"""


@pytest.mark.parametrize(("how", "frozen"), [("own", True), ("host", False)])
def test_a_command_in_a_process_of_its_own_freezes_its_imports_and_a_host_s_collector_is_left_alone(
    how: str, frozen: bool
) -> None:
    with OfflineResponsesServer() as server:
        environ = {"AGENT_BASE_URL": server.base_url, "AGENT_API_KEY": "sk-imports", "AGENT_MODEL": "offline"}
        done = run_probe(
            _COLLECTOR_PROBE, json.dumps([how, "summarize", str(TRANSCRIPT)]), json.dumps(environ)
        )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])

    assert report["code"] == 0
    assert report["enabled"]
    assert (report["frozen"] > 0) == frozen
