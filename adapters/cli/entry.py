"""The ``meeting-agents`` entry point: the command line read first, then the modules its command needs."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from adapters.cli.exit_codes import EXIT_OK, EXIT_USAGE
from adapters.cli.parser import PROG, CommandLineError, parse_arguments

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None) -> int:
    """Run the command and return its exit code (see ``meeting-agents --help``).

    ``argv`` None reads ``sys.argv``: the command then owns the process, and imports what it runs with
    the garbage collector out of the way (``startup.importing``). ``environ`` replaces ``os.environ``
    (tests); stdin, stdout and stderr are the ``sys`` streams.
    """
    owns_process = argv is None
    environ = os.environ if environ is None else environ
    try:
        args = parse_arguments(argv)
    except CommandLineError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return EXIT_USAGE
    except SystemExit as done:  # --help and --version print and stop
        return done.code if isinstance(done.code, int) else EXIT_OK
    # A wrong command line, --help and --version need none of what a run imports (the application, the SDK).
    from adapters.cli.startup import importing

    with importing(owns_process):
        from adapters.cli.app import run

    return run(args, environ, owns_process=owns_process)
