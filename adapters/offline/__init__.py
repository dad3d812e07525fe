"""The built-in offline stand-in for a LiteLLM gateway's Responses endpoint, for demos and tests."""

from typing import TYPE_CHECKING, Any

from adapters.offline.scenarios import OFFLINE_MODEL, SCENARIOS, UnknownScenarioError

if TYPE_CHECKING:
    from adapters.offline.server import OfflineResponsesServer, RecordedRequest
    from adapters.offline.threaded import uvicorn_missing

__all__ = [
    "OFFLINE_MODEL",
    "SCENARIOS",
    "OfflineResponsesServer",
    "RecordedRequest",
    "UnknownScenarioError",
    "uvicorn_missing",
]


def __getattr__(name: str) -> Any:
    # The server and its model are imported on first use: the command line names the scenarios in its
    # help and checks --scenario with the names above alone, and reaches the server only when it starts one.
    if name in ("OfflineResponsesServer", "RecordedRequest"):
        import adapters.offline.server

        return getattr(adapters.offline.server, name)
    if name == "uvicorn_missing":
        import adapters.offline.threaded

        return adapters.offline.threaded.uvicorn_missing
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
