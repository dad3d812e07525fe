"""Fault scenarios of the offline endpoint, chosen per request through the model name."""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Final, NamedTuple

__all__ = ["OFFLINE_MODEL", "SCENARIOS", "Scenario", "UnknownScenarioError", "parse_model"]

OFFLINE_MODEL: Final = "offline"

SCENARIOS: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        "malformed-arguments": "the first tool-calling turn sends one call with truncated JSON arguments; "
        "the model re-issues it after an invalid_tool_arguments result",
        "ungrounded-citation": "the first tool-calling turn cites the wrong line for one summary item; "
        "the model cites again after an ungrounded result",
        "sse-for-json": "answer with an event stream even when stream is false (LiteLLM's chatgpt/ route)",
        "json-for-sse": "answer with a JSON Response even when stream is true",
        "litellm": "LiteLLM's event-stream dialect: data lines only, [DONE], extra keys, a very long id",
        "incomplete": "end with response.incomplete (max_output_tokens) and partial output",
        "response-failed": "end with response.failed (server_error) after some output",
        "error-event": 'a flat {"type": "error", "code", "message"} event mid-stream',
        "error-event-nested": 'a {"type": "error", "error": {"code", "message"}} data line mid-stream',
        "truncated-stream": "the body stops cleanly after some output, with no terminal event",
        "connection-reset": "the connection is reset mid-body",
        "stall": "send part of the body, then nothing until the client gives up or the server stops",
        "garbage-data": "an undecodable data line mid-stream (an undecodable body for JSON)",
        "http-400": "HTTP 400 with an OpenAI-shaped error body",
        "http-401": "HTTP 401 with an OpenAI-shaped error body",
        "http-429": "HTTP 429 with Retry-After: 0 and an OpenAI-shaped error body",
        "http-500": "HTTP 500 with an OpenAI-shaped error body",
        "huge-arguments": "one function call carries a ~5 MB (valid JSON) argument string",
        "unknown-events": "5,000 x-offline.heartbeat events interleaved with the real ones",
    }
)
"""Scenario name -> one-line description. Any scenario may be written ``name*N``: it then applies
only to the first N requests that carry it on one server, after which the server answers normally.

Where the answer is a JSON document rather than an event stream, the stream scenarios take their
JSON form: ``incomplete`` and ``response-failed`` (and both ``error-event`` kinds) give a Response
whose status is incomplete or failed; ``truncated-stream`` sends the first half of the document
with a matching Content-Length; ``connection-reset`` and ``stall`` send the first half of it under
the full Content-Length; ``garbage-data`` spoils it; ``unknown-events`` changes nothing."""

_TOKEN: Final = re.compile(r"(?P<name>[a-z0-9-]+)(?:\*(?P<times>[1-9][0-9]{0,5}))?")


class UnknownScenarioError(ValueError):
    """The model name asked for a scenario this endpoint does not know."""

    def __init__(self, token: str) -> None:
        super().__init__(
            f"unknown offline scenario {token!r}; known scenarios: {', '.join(sorted(SCENARIOS))} "
            "(optionally name*N to apply to the first N requests only)"
        )
        self.token = token


class Scenario(NamedTuple):
    """One scenario as the model name wrote it (``http-429*2``), its name, and its N (None: always)."""

    token: str
    name: str
    times: int | None


def parse_model(model: object) -> tuple[Scenario, ...]:
    """The scenarios named by ``offline:<a>[+<b>...]``; any other model name selects none.

    Raises :class:`UnknownScenarioError` for a name that is not in :data:`SCENARIOS`.
    """
    if not isinstance(model, str) or not model.startswith(OFFLINE_MODEL + ":"):
        return ()
    scenarios = []
    for token in model.removeprefix(OFFLINE_MODEL + ":").split("+"):
        match = _TOKEN.fullmatch(token.strip())
        if match is None or match["name"] not in SCENARIOS:
            raise UnknownScenarioError(token)
        times = None if match["times"] is None else int(match["times"])
        scenarios.append(Scenario(match[0], match["name"], times))
    return tuple(scenarios)
