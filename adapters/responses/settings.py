"""Settings of the Responses adapters: the model and how requests are shaped."""

from __future__ import annotations

import math
import types
from collections.abc import Mapping

import attrs

from adapters.settings import MalformedArgumentsPolicy
from domain.options import ReasoningEffort, ReasoningSummary

__all__ = ["MalformedArgumentsPolicy", "ResponsesSettings"]


def _headers(value: Mapping[str, str]) -> Mapping[str, str]:
    return types.MappingProxyType(dict(value))


def _positive_or_none(instance: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{attribute.name} must be a positive integer or None")


def _finite(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{attribute.name} must be a finite number")


@attrs.frozen
class ResponsesSettings:
    """How the adapters talk to a Responses endpoint.

    ``malformed_arguments_in_history`` decides how a function call whose arguments are not a JSON
    object goes back to the model: ``verbatim`` (byte for byte, the default) or ``wrap`` (as
    ``{"INVALID_JSON": "<raw>"}``, for gateways that front providers which require an object).
    ``reasoning_effort`` and ``reasoning_summary`` apply when a request's options leave reasoning unset.
    ``extra_headers`` go on every request (the ``X-Initiator`` header is set per request).
    ``deadline_seconds`` bounds one request end to end (connecting, every retry and Retry-After wait,
    reading the whole body); ``max_response_bytes`` caps a body, counted after decompression;
    ``max_output_items`` caps the output items of one response and the input items of one request.
    """

    model: str = attrs.field(validator=attrs.validators.min_len(1))
    malformed_arguments_in_history: MalformedArgumentsPolicy = attrs.field(
        default="verbatim", validator=attrs.validators.in_(("verbatim", "wrap"))
    )
    store: bool = False
    reasoning_effort: ReasoningEffort | None = None
    reasoning_summary: ReasoningSummary | None = None
    max_output_tokens: int | None = attrs.field(default=None, validator=_positive_or_none)
    deadline_seconds: float = attrs.field(default=600.0, validator=[attrs.validators.gt(0), _finite])
    max_response_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=attrs.validators.ge(1))
    max_output_items: int = attrs.field(default=10_000, validator=attrs.validators.ge(1))
    # Header values can be credentials (a gateway key), so the repr names the headers only.
    extra_headers: Mapping[str, str] = attrs.field(
        factory=dict, converter=_headers, hash=False, repr=lambda headers: repr(sorted(headers))
    )
