"""Adapters: the OpenAI Responses clients, the offline endpoint, the container and the CLI."""

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.cassettes import Recorder, ReplayChat, ReplayMismatchError

__all__ = ["Recorder", "ReplayChat", "ReplayMismatchError"]

# A library's loggers stay silent until the host configures logging: without a handler anywhere,
# logging's last resort would print this package's warnings on the host's stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())


def __getattr__(name: str) -> Any:
    # Imported on first use: ``import adapters`` (the CLI's start) stays free of the SDK and httpx.
    if name in __all__:
        import adapters.cassettes

        return getattr(adapters.cassettes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
