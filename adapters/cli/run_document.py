"""--save-run: the run's document (``application.dumps``), scrubbed of secrets and written atomically."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.cli.files import AtomicOutput
from adapters.redaction import Redactor

if TYPE_CHECKING:
    from application import MeetingSummary, ToolRun, WorkflowEdit

__all__ = ["save_run"]


def save_run(
    output: AtomicOutput, run: MeetingSummary | WorkflowEdit | ToolRun, redactor: Redactor
) -> str | None:
    """Write ``run``'s document to ``output``: None when written, else why it could not be.

    A secret the gateway echoed into the conversation is cut out first, as from everything else the
    command shows: a stored document is shared further than the terminal.
    """
    # Imported only for a run that is saved: run documents are no part of a run itself.
    from application.documents import DocumentError, dumps

    try:
        output.commit(redactor.redact(dumps(run)) + "\n")
    except OSError as exc:
        return f"--save-run {str(output.target)!r}: cannot be written ({exc.strerror})"
    except DocumentError as exc:
        # A value nested deeper than any document holds (a tool's result thousands of levels deep).
        output.discard()
        return f"--save-run {str(output.target)!r}: cannot be written ({exc.problem})"
    return None
