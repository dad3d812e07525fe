"""Starting a command in a process of its own, as a user runs it: this machine's environment without any
``AGENT_*`` variable (the test says which it sets, :func:`gateway_environment` those naming a gateway),
stdout and stderr piped; :func:`checkout_first` puts this checkout first on a child interpreter's path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Final

__all__ = [
    "CHECKOUT",
    "checkout_first",
    "clean_environment",
    "gateway_environment",
    "python_module",
    "start",
]

CHECKOUT: Final = Path(__file__).resolve().parents[2]
"""The root of this checkout: its packages are what the tests run."""


def clean_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any AGENT_* variable, plus ``extra``."""
    environ = {name: value for name, value in os.environ.items() if not name.startswith("AGENT_")}
    return {**environ, **(extra or {})}


def checkout_first(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (this process's environment by default) with this checkout first on ``PYTHONPATH``, so
    a child interpreter imports this checkout's packages whatever else is installed."""
    source = os.environ if environ is None else environ
    return {**source, "PYTHONPATH": os.pathsep.join(filter(None, [str(CHECKOUT), source.get("PYTHONPATH")]))}


def gateway_environment(
    base_url: str, model: str = "offline", api_key: str = "sk-test", **extra: str
) -> dict[str, str]:
    """The ``AGENT_*`` variables that send a command's requests to the gateway at ``base_url`` with
    ``model`` and ``api_key``, and ``extra`` (more ``AGENT_*`` settings)."""
    return {"AGENT_BASE_URL": base_url, "AGENT_MODEL": model, "AGENT_API_KEY": api_key, **extra}


def python_module(module: str, *argv: str) -> list[str]:
    """``python -m module argv...`` with this interpreter."""
    return [sys.executable, "-m", module, *argv]


def start(
    argv: Sequence[str], *, environ: Mapping[str, str] | None = None, stdin: int | IO[bytes] | None = None
) -> subprocess.Popen[bytes]:
    """``argv`` in a new process (a pipe on stdout and stderr: not a terminal), its environment
    :func:`clean_environment` with ``environ``; stdin as given (``subprocess.PIPE`` to write to it)."""
    return subprocess.Popen(  # noqa: S603  # our own commands with the test's arguments
        list(argv),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_environment(environ),
    )
