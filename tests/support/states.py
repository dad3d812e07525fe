"""Tampering with a stored paused run as an attacker who can write the file would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Tampering", "held_calls", "pending_emptied", "pending_renamed", "raw_arguments_edited"]

Tampering = Callable[[dict[str, Any]], None]
"""A change made in place to a ``run_state`` document (as ``json.loads`` reads it)."""


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


def raw_arguments_edited(raw_arguments: str) -> Tampering:
    """Every stored copy of the held calls given ``raw_arguments``, ``pending`` left as it was."""

    def raw_arguments_edited(document: dict[str, Any]) -> None:
        for call in held_calls(document):
            call["raw_arguments"] = raw_arguments

    return raw_arguments_edited


def pending_emptied(document: dict[str, Any]) -> None:
    """No call left waiting for a decision, the held answer left as it was."""
    document["value"]["pending"] = []


def pending_renamed(name: str) -> Tampering:
    """The first call waiting for a decision made to name the tool ``name``, the held answer as it was."""

    def pending_renamed(document: dict[str, Any]) -> None:
        document["value"]["pending"][0]["name"] = name

    return pending_renamed
