"""How the command imports what it runs: with the garbage collector out of the way."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["importing"]


@contextlib.contextmanager
def importing(owns_process: bool) -> Iterator[None]:
    """Run the imports inside without garbage collections, then freeze every object alive out of later
    ones (``gc.freeze``). Modules, classes and functions live as long as the process, and each
    collection during the imports would scan everything imported before it again.

    Only in a process the command owns (``meeting-agents``, ``python -m adapters.cli``): a host calling
    ``main`` with its own arguments keeps its collector as it is, as does one that turned it off.
    """
    if not owns_process or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
