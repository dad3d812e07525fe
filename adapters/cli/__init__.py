"""The ``meeting-agents`` command line: summarize a transcript or edit a workflow through the container."""

from adapters.cli import app, exit_codes
from adapters.cli.app import *  # noqa: F403  # the package's names: app's and the exit codes, each listed once
from adapters.cli.exit_codes import *  # noqa: F403

__all__ = app.__all__ + exit_codes.__all__
