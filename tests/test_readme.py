"""Every Python block of README.md and examples/README.md runs as written, and the collector recipes
send the run's spans to an OTLP/HTTP receiver started here on 127.0.0.1.

Each block runs in a fresh interpreter, as a reader pasting it into a file would run it, from the
checkout's root and with no AGENT_* or OTEL_* variable of this process leaking in.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

from tests.support.otlp import OtlpReceiver

ROOT: Final = Path(__file__).resolve().parents[1]
DOCUMENTS: Final = ("README.md", "examples/README.md")
BIN: Final = Path(sys.executable).parent
# Bounds a hung block only: each takes a few seconds, most of it importing the SDK.
TIMEOUT_SECONDS: Final = 180.0
_BLOCK: Final = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(document: str, language: str) -> list[str]:
    text = (ROOT / document).read_text(encoding="utf-8")
    return [body for lang, body in _BLOCK.findall(text) if lang == language]


PYTHON_BLOCKS: Final = [(document, body) for document in DOCUMENTS for body in blocks(document, "python")]


def _first_line(body: str) -> str:
    return next(
        line for line in body.splitlines() if line.strip() and not line.startswith(("import", "from"))
    )


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without AGENT_* or OTEL_* variables, plus ``extra``."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "OTEL_"))}
    return {**kept, **(extra or {})}


def run_python(body: str, environ: Mapping[str, str], folder: Path) -> subprocess.CompletedProcess[str]:
    """``body`` in a fresh interpreter working in ``folder`` (a block may write files), this checkout's
    packages first on its path."""
    path = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    return subprocess.run(  # noqa: S603  # this interpreter running the document's own code
        [sys.executable, "-c", body],
        capture_output=True,
        text=True,
        cwd=folder,
        env={**environ, "PYTHONPATH": path},
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


def exported_variables(shell: str) -> dict[str, str]:
    """The ``export NAME=VALUE`` lines of a shell block, as the shell would set them."""
    variables = {}
    for line in shell.splitlines():
        words = shlex.split(line, comments=True)
        if words[:1] == ["export"] and "=" in words[1]:
            name, value = words[1].split("=", 1)
            variables[name] = value
    return variables


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def collector_environment(receiver: OtlpReceiver) -> dict[str, str]:
    """The README's OTEL_* exports, pointed at ``receiver`` instead of a collector."""
    [shell] = [block for block in blocks("README.md", "sh") if "OTEL_EXPORTER_OTLP_ENDPOINT" in block]
    variables = exported_variables(shell)
    assert variables["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"  # what a 4318 port speaks
    assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"].endswith(":4318")
    variables["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    variables.pop("OTEL_EXPORTER_OTLP_HEADERS")  # a placeholder ("Bearer ..."); the receiver wants none
    return environment(variables)


def test_the_documents_have_the_blocks_this_test_runs() -> None:
    assert len(blocks("README.md", "python")) >= 5
    assert blocks("examples/README.md", "python")
    assert exported_variables("export A=1  # one\nexport B='two words'\necho C=3\n") == {
        "A": "1",
        "B": "two words",
    }


@pytest.mark.parametrize(
    ("document", "body"),
    [
        pytest.param(document, body, id=f"{document}:{_first_line(body)[:40]}")
        for document, body in PYTHON_BLOCKS
    ],
)
def test_a_python_block_runs_as_written(
    document: str, body: str, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    exports = "OTLPSpanExporter" in body
    ran = run_python(body, collector_environment(receiver) if exports else environment(), tmp_path)
    assert ran.returncode == 0, f"{document}:\n{body}\n--- stderr:\n{ran.stderr}"
    assert "Traceback" not in ran.stderr
    if exports:
        # The run's spans reached the collector, over OTLP/HTTP.
        names = receiver.span_names()
        assert "invoke_agent meeting_summary" in names
        assert "chat offline" in names
        assert receiver.received("/v1/metrics")
        assert receiver.content_types() == {"application/x-protobuf"}


def test_the_tool_loop_example_makes_its_tool_calls(tmp_path: Path) -> None:
    [body] = [body for _, body in PYTHON_BLOCKS if "room_capacity" in body]
    ran = run_python(body, environment(), tmp_path)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines.count("tool call: room_capacity") == 2  # the audit sees the refused call too
    assert "room_capacity ran {'room': 'Fjord', 'capacity': 12}" in lines
    assert any(line.startswith("room_capacity refused {'error': 'invalid_tool_arguments'") for line in lines)


def test_the_no_code_recipe_sends_the_command_s_spans(receiver: OtlpReceiver) -> None:
    [shell] = [block for block in blocks("README.md", "sh") if "opentelemetry-instrument" in block]
    assert "pip install opentelemetry-distro opentelemetry-exporter-otlp-proto-http" in shell
    command = shlex.split(shell[shell.index("OTEL_TRACES_EXPORTER") :].replace("\\\n", " "))
    settings = dict(word.split("=", 1) for word in command if "=" in word)
    words = [word for word in command if "=" not in word]
    assert words[:2] == ["opentelemetry-instrument", ".venv/bin/meeting-agents"]
    argv = [str(BIN / "opentelemetry-instrument"), str(BIN / "meeting-agents"), *words[2:]]
    done = subprocess.run(  # noqa: S603  # the README's command, with this checkout's scripts
        argv,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**collector_environment(receiver), **settings},
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "Action items (" in done.stdout
    names = receiver.span_names()
    assert "invoke_agent meeting_summary" in names
    assert names.count("chat offline") >= 2
    assert receiver.received("/v1/metrics")
