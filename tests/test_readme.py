"""Every Python block of README.md, examples/README.md and docs/*.md runs as written, and the collector
recipes send the run's spans to an OTLP/HTTP receiver started here on 127.0.0.1.

Each block runs in a fresh interpreter, as a reader pasting it into a file would run it, from a folder of
its own and with no AGENT_* or OTEL_* variable of this process leaking in (`tests/support/doc_blocks.py`).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.support.doc_blocks import (
    ROOT,
    TIMEOUT_SECONDS,
    blocks,
    documents,
    environment,
    exported_variables,
    run_python,
)
from tests.support.otlp import OtlpReceiver

BIN: Final = Path(sys.executable).parent
PYTHON_BLOCKS: Final = [(document, body) for document in documents() for body in blocks(document, "python")]


def _first_line(body: str) -> str:
    return next(
        line for line in body.splitlines() if line.strip() and not line.startswith(("import", "from"))
    )


def shell_block(needle: str) -> str:
    """The one shell block of all the documents that holds ``needle``."""
    [shell] = [block for page in documents() for block in blocks(page, "sh") if needle in block]
    return shell


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def collector_environment(receiver: OtlpReceiver) -> dict[str, str]:
    """The documented OTEL_* exports, pointed at ``receiver`` instead of a collector."""
    variables = exported_variables(shell_block("OTEL_EXPORTER_OTLP_ENDPOINT"))
    assert variables["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/protobuf"  # what a 4318 port speaks
    assert variables["OTEL_EXPORTER_OTLP_ENDPOINT"].endswith(":4318")
    variables["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    variables.pop("OTEL_EXPORTER_OTLP_HEADERS")  # a placeholder ("Bearer ..."); the receiver wants none
    return environment(variables)


def test_the_documents_have_the_blocks_this_test_runs() -> None:
    pages = documents()
    assert {"README.md", "examples/README.md", "docs/host-integration.md", "docs/telemetry.md"} <= set(pages)
    assert blocks("README.md", "python")
    assert blocks("examples/README.md", "python")
    assert len(PYTHON_BLOCKS) >= 8
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
    shell = shell_block("opentelemetry-instrument")
    assert "pip install opentelemetry-distro opentelemetry-exporter-otlp-proto-http" in shell
    command = shlex.split(shell[shell.index("OTEL_TRACES_EXPORTER") :].replace("\\\n", " "))
    settings = dict(word.split("=", 1) for word in command if "=" in word)
    words = [word for word in command if "=" not in word]
    assert words[:2] == ["opentelemetry-instrument", ".venv/bin/meeting-agents"]
    argv = [str(BIN / "opentelemetry-instrument"), str(BIN / "meeting-agents"), *words[2:]]
    done = subprocess.run(  # noqa: S603  # the documented command, with this checkout's scripts
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
