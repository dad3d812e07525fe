"""The built-in offline stand-in for a LiteLLM gateway's Responses endpoint, for demos and tests."""

from adapters.offline.scenarios import OFFLINE_MODEL, SCENARIOS, UnknownScenarioError
from adapters.offline.server import OfflineResponsesServer, RecordedRequest

__all__ = ["OFFLINE_MODEL", "SCENARIOS", "OfflineResponsesServer", "RecordedRequest", "UnknownScenarioError"]
