"""One mapping from the SDK's Responses objects (items, usage, a whole Response) to domain values."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from domain import (
    ChatMessage,
    ChatResponse,
    Content,
    FinishReason,
    FunctionCallContent,
    ProviderItemContent,
    ReasoningContent,
    ResponseFailedError,
    TextContent,
    Usage,
)

__all__ = [
    "chat_response",
    "created_at",
    "finish_reason",
    "item_contents",
    "provider_failure",
    "raise_if_failed",
    "reasoning_content",
    "response_contents",
    "usage",
]

# Gateways omit optional fields; the SDK builds its models without validation, so a missing field
# is a missing attribute. Every read of a provider object therefore goes through getattr.
_INCOMPLETE_REASONS: Final[dict[str, FinishReason]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
_TEXT_PARTS: Final = frozenset({"output_text", "refusal"})
REASONING_SEPARATOR: Final = "\n\n"


def created_at(value: object) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC)
    return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage(value: Any) -> Usage | None:
    """Token counts as reported; details a gateway left out stay None."""
    if value is None:
        return None
    return Usage(
        input_tokens=_int(getattr(value, "input_tokens", None)),
        output_tokens=_int(getattr(value, "output_tokens", None)),
        total_tokens=_int(getattr(value, "total_tokens", None)),
        cached_input_tokens=_int(
            getattr(getattr(value, "input_tokens_details", None), "cached_tokens", None)
        ),
        reasoning_tokens=_int(
            getattr(getattr(value, "output_tokens_details", None), "reasoning_tokens", None)
        ),
    )


def _raw_json(item: Any) -> str:
    """The item as the provider sent it (fields it set, extras included), as compact JSON."""
    to_dict = getattr(item, "to_dict", None)
    data = to_dict(mode="json", warnings=False) if callable(to_dict) else item
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def reasoning_content(
    item_id: str | None,
    summary: Sequence[str],
    texts: Sequence[str],
    encrypted_content: str | None,
) -> ReasoningContent:
    return ReasoningContent(
        text=REASONING_SEPARATOR.join((*summary, *texts)),
        item_id=item_id,
        encrypted_content=encrypted_content,
        summary=tuple(summary),
    )


def _part_texts(parts: Iterable[Any] | None, kinds: frozenset[str]) -> list[str]:
    texts = []
    for part in parts or ():
        kind = getattr(part, "type", None)
        if kind in kinds:
            text = getattr(part, "refusal" if kind == "refusal" else "text", None)
            texts.append(text if isinstance(text, str) else "")
    return texts


def item_contents(item: Any) -> list[Content]:
    """The contents of one finished output item, in the order they appear in it."""
    kind = getattr(item, "type", None)
    item_id = getattr(item, "id", None)
    if kind == "message":
        return [TextContent(text) for text in _part_texts(getattr(item, "content", None), _TEXT_PARTS)]
    if kind == "function_call":
        arguments = getattr(item, "arguments", None)
        return [
            FunctionCallContent.parse(
                call_id=str(getattr(item, "call_id", None) or item_id or ""),
                name=str(getattr(item, "name", None) or ""),
                raw_arguments=arguments if isinstance(arguments, str) else "",
                item_id=item_id,
            )
        ]
    if kind == "reasoning":
        summary = _part_texts(getattr(item, "summary", None), frozenset({"summary_text"}))
        texts = _part_texts(getattr(item, "content", None), frozenset({"reasoning_text"}))
        return [reasoning_content(item_id, summary, texts, getattr(item, "encrypted_content", None))]
    return [ProviderItemContent(type=str(kind), raw_json=_raw_json(item), item_id=item_id)]


def finish_reason(status: str | None, incomplete_reason: str | None, has_calls: bool) -> FinishReason | None:
    """Why the model stopped; None while it has not (queued, in progress, a partial answer)."""
    if status == "incomplete":
        return _INCOMPLETE_REASONS.get(incomplete_reason or "")
    if status != "completed":
        return None
    return "tool_calls" if has_calls else "stop"


def chat_response(response: Any, contents: Sequence[Content], *, status: str | None = None) -> ChatResponse:
    """The ChatResponse for ``contents`` with the metadata of ``response`` (a Response or a snapshot)."""
    status = status if status is not None else getattr(response, "status", None)
    reason = getattr(getattr(response, "incomplete_details", None), "reason", None)
    has_calls = any(isinstance(c, FunctionCallContent) for c in contents)
    return ChatResponse(
        messages=(ChatMessage("assistant", contents),) if contents else (),
        response_id=getattr(response, "id", None),
        model_id=getattr(response, "model", None),
        created_at=created_at(getattr(response, "created_at", None)),
        status=status,
        finish_reason=finish_reason(status, reason, has_calls),
        usage=usage(getattr(response, "usage", None)),
    )


def response_contents(response: Any) -> list[Content]:
    return [content for item in getattr(response, "output", None) or () for content in item_contents(item)]


def provider_failure(
    error: Any,
    fallback: str,
    *,
    response_id: str | None = None,
    model_id: str | None = None,
    partial: ChatResponse | None = None,
) -> ResponseFailedError:
    """The provider's own ``code`` and ``message`` from an error object, event or JSON mapping.

    Anything that is not a non-empty string is dropped, so a provider's odd shapes cannot reach
    the error; ``fallback`` then says what happened.
    """
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
    else:
        code, message = getattr(error, "code", None), getattr(error, "message", None)
    return ResponseFailedError(
        message if isinstance(message, str) and message else fallback,
        code=code if isinstance(code, str) else None,
        response_id=response_id,
        model_id=model_id,
        partial=partial,
    )


def raise_if_failed(result: ChatResponse, response: Any) -> ChatResponse:
    """``result`` unless the provider marked the response failed, which raises with it as partial."""
    if result.status != "failed":
        return result
    raise provider_failure(
        getattr(response, "error", None),
        "the provider reported the response failed",
        response_id=result.response_id,
        model_id=result.model_id,
        partial=result,
    )
