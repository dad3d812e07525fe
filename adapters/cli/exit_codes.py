"""The command's exit codes: one table for every subcommand (``meeting-agents --help`` lists them)."""

from typing import Final

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_MODEL_FAILED",
    "EXIT_NOT_CARRIED_OUT",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WAITING",
]

EXIT_OK: Final = 0
EXIT_MODEL_FAILED: Final = 1
"""The model or the gateway failed (a batch: any transcript failed)."""
EXIT_USAGE: Final = 2
"""Bad input or configuration, found before any request."""
EXIT_INCOMPLETE: Final = 3
"""The model's answer was incomplete (a batch: any transcript incomplete or not started; eval: a
``--min-precision`` or ``--min-recall`` missed)."""
EXIT_NOT_CARRIED_OUT: Final = 4
EXIT_WAITING: Final = 5
"""The run waits for approval."""
EXIT_INTERRUPTED: Final = 130
