"""The built-in offline stand-in for a LiteLLM gateway's Responses endpoint, for demos and tests."""

from adapters.offline.scenarios import OFFLINE_MODEL, SCENARIOS, UnknownScenarioError
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
