"""The ``meeting-agents`` command line: summarize a transcript or edit a workflow through the container."""

from adapters.cli import exit_codes
from adapters.cli.entry import main
from adapters.cli.exit_codes import *  # noqa: F403  # the package's names: main and the exit codes, each listed once

__all__ = ["main", *exit_codes.__all__]
