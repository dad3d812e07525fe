"""Tampering with a stored paused run as an attacker who can write the file would."""

from __future__ import annotations

from typing import Any

__all__ = ["held_calls"]


def held_calls(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every stored copy of a ``run_state`` document's held calls (in its last response and at the end
    of ``produced``), as the dicts to edit in place."""
    value = document["value"]
    answer = value["responses"][-1]["messages"]
    copies = [answer, value["produced"][-len(answer) :]]
    return [
        content
        for messages in copies
        for message in messages
        for content in message["contents"]
        if content["kind"] == "function_call"
    ]
