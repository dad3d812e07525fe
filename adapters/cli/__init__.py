"""The ``meeting-agents`` command line: summarize a transcript or edit a workflow through the container."""

from adapters.cli import app
from adapters.cli.app import *  # noqa: F403  # the package's names are app's, listed once in app.__all__

__all__ = app.__all__
