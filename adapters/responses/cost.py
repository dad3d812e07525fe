"""What a request cost, as the gateway says in a response header (LiteLLM's ``x-litellm-response-cost``)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Final

from domain import Usage

__all__ = ["COST_HEADER", "MAX_REQUEST_COST_USD", "response_cost", "with_cost"]

COST_HEADER: Final = "x-litellm-response-cost"
# Far above what any one request can cost (a million-token request to the dearest model is a few
# hundred dollars): a larger value is a gateway's mistake, not a price.
MAX_REQUEST_COST_USD: Final = 10_000.0
_SHOWN: Final = 40

_LOGGER: Final = logging.getLogger("adapters.responses")


def response_cost(headers: Mapping[str, str], logger: logging.Logger | None = None) -> float | None:
    """The request's cost in US dollars from ``headers``, or None when the gateway did not say.

    A value that is not a finite number from 0 to :data:`MAX_REQUEST_COST_USD` (``abc``, ``-1``,
    ``nan``, ``1e400``, LiteLLM's ``None`` for a cost it could not work out) is not a cost: it is
    ignored with a debug log record, never an error, since the answer itself is good.
    """
    value = headers.get(COST_HEADER)
    if value is None:
        return None
    try:
        cost = float(value)
    except ValueError:
        cost = math.nan
    if math.isfinite(cost) and 0 <= cost <= MAX_REQUEST_COST_USD:
        return cost
    (logger or _LOGGER).debug(
        "ignoring the %s header: not a cost in US dollars (%r)",
        COST_HEADER,
        value[:_SHOWN],
        extra={"cost_header": value[:_SHOWN]},
    )
    return None


def with_cost(usage: Usage | None, cost_usd: float | None) -> Usage | None:
    """``usage`` with the request's cost in it; a cost without token counts is a usage of its own."""
    if cost_usd is None:
        return usage
    return Usage(cost_usd=cost_usd) if usage is None else usage.with_cost(cost_usd)
