"""Fault scenarios of the offline endpoint, chosen per request through the model name."""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Final

import attrs

__all__ = ["OFFLINE_MODEL", "SCENARIOS", "ScenarioSelection", "UnknownScenarioError", "parse_model"]

OFFLINE_MODEL: Final = "offline"

SCENARIOS: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        "malformed-arguments": "the first tool-calling turn sends one call with truncated JSON arguments; "
        "the model re-issues it after an invalid_tool_arguments result",
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


@attrs.frozen
class ScenarioSelection:
    """The scenarios one request asked for.

    ``tokens`` keeps each one as written (``http-429*2``): the server counts requests per token to
    decide whether a transient scenario still applies. ``transient`` maps such tokens to their N.
    """

    tokens: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    transient: Mapping[str, int] = attrs.field(factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    @property
    def text(self) -> str:
        return "+".join(self.tokens)

    def without_tokens(self, dropped: frozenset[str]) -> ScenarioSelection:
        """The selection minus ``dropped`` tokens (transient scenarios that are used up)."""
        kept = [
            (token, name) for token, name in zip(self.tokens, self.names, strict=True) if token not in dropped
        ]
        return ScenarioSelection(
            tokens=tuple(token for token, _ in kept),
            names=tuple(name for _, name in kept),
            transient={token: n for token, n in self.transient.items() if token not in dropped},
        )


def parse_model(model: object) -> ScenarioSelection:
    """The scenarios named by ``offline:<a>[+<b>...]``; any other model name selects none.

    Raises :class:`UnknownScenarioError` for a name that is not in :data:`SCENARIOS`.
    """
    if not isinstance(model, str) or not model.startswith(OFFLINE_MODEL + ":"):
        return ScenarioSelection()
    tokens: list[str] = []
    names: list[str] = []
    transient: dict[str, int] = {}
    for token in model[len(OFFLINE_MODEL) + 1 :].split("+"):
        match = _TOKEN.fullmatch(token.strip())
        if match is None or match["name"] not in SCENARIOS:
            raise UnknownScenarioError(token)
        tokens.append(match[0])
        names.append(match["name"])
        if match["times"] is not None:
            transient[match[0]] = int(match["times"])
    return ScenarioSelection(tokens=tuple(tokens), names=tuple(names), transient=transient)
