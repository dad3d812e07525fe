"""The ``meeting-agents`` command line: summarize a transcript or edit a workflow through the container."""

from adapters.cli.app import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_MODEL_FAILED,
    EXIT_NOT_CARRIED_OUT,
    EXIT_OK,
    EXIT_USAGE,
    main,
)

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_MODEL_FAILED",
    "EXIT_NOT_CARRIED_OUT",
    "EXIT_OK",
    "EXIT_USAGE",
    "main",
]
