"""Turns a conversation and its options into a Responses request, plus a content-free digest of it."""

from __future__ import annotations

import json
import logging
import types
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from adapters.responses.sdk_seam import json_default
from adapters.responses.settings import ResponsesSettings
from adapters.responses.to_domain import text_key
from domain import (
    ChatMessage,
    ChatOptions,
    FunctionCallContent,
    FunctionResultContent,
    JsonValue,
    ProviderItemContent,
    ReasoningContent,
    TextContent,
    ToolSpec,
)
from domain.arguments import (
    escape_surrogates,
    has_surrogate,
    mend_surrogates,
    reject_constant,
    replace_surrogates,
)

__all__ = ["RequestDigest", "ResponsesPayloadBuilder", "ResponsesRequest"]

_ENCRYPTED_REASONING: Final = "reasoning.encrypted_content"
_LOGGER: Final = logging.getLogger("adapters.responses.payload")
_UNWRITABLE_RESULT: Final = '{"error":"unwritable_tool_result"}'
# The strings a provider matches against what it sent: they go back byte for byte (see _encodable).
_IDENTIFIERS: Final = frozenset({"id", "call_id"})


def _encodable(value: Any) -> Any:
    """``value`` (the request body, recursively) with every string UTF-8 can carry, identifiers apart.

    Split surrogate pairs are joined; an unpaired surrogate left in plain text becomes U+FFFD,
    the replacement character. An identifier (an ``id`` or ``call_id`` string) keeps its unpaired
    surrogates: the provider pairs a result with its call, and finds an item, by the very id it
    sent, so :meth:`ResponsesRequest.wire` writes them as their ``\\uXXXX`` escapes instead.
    Strings without surrogates, and containers holding none, are returned unchanged.
    """
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, dict):
        return {
            _encodable(key): mend_surrogates(item)
            if key in _IDENTIFIERS and isinstance(item, str)
            else _encodable(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_encodable(item) for item in value]
    return value


def _is_object(value: object) -> bool:
    return isinstance(value, dict)


def _provider_object(text: str | None) -> dict[str, Any] | None:
    """The provider's item a content kept (see ``to_domain.provider_item``), as a new dict; None when
    there is none or it is not a JSON object."""
    if text is None:
        return None
    try:
        item = json.loads(text, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        return None
    return item if isinstance(item, dict) else None


def _provider_message(provider: str, texts: list[TextContent]) -> dict[str, Any] | None:
    """The provider's message item with each text part's text the content's, in order: its id, status,
    phase, annotations and anything else it sent go back as they came. None when the item is not
    usable or its text parts are not the contents' (a host joined or dropped some)."""
    item = _provider_object(provider)
    parts = item.get("content") if item is not None else None
    if item is None or not isinstance(parts, list):
        return None
    slots = [(index, key) for index, part in enumerate(parts) if (key := text_key(part)) is not None]
    if len(slots) != len(texts):
        return None
    for (index, key), content in zip(slots, texts, strict=True):
        parts[index] = {**parts[index], key: content.text}
    return item


def _plain(value: object) -> Any:
    """A JSON-ready copy: read-only mappings become dicts, tuples become lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _read_only(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return types.MappingProxyType(dict(value))


def tool_output(result: JsonValue) -> str:
    """A tool result as it goes on the wire: strings as they are, anything else compact JSON.

    A value JSON has no form for (a date, a set) goes as its ``str``; one that cannot be written at
    all (it contains itself, or nests deeper than the interpreter recurses) goes as an error
    object, logged, so that the rest of the conversation still goes.
    """
    if isinstance(result, str):
        return result
    try:
        text = json.dumps(_plain(result), separators=(",", ":"), ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        _LOGGER.warning("A tool result that cannot be written as JSON was sent as an error object")
        return _UNWRITABLE_RESULT
    return escape_surrogates(text)


@attrs.frozen
class RequestDigest:
    """What a request looked like, without any of its content: safe to log.

    ``item_counts`` pairs each input item type with how many items of it were sent.
    ``byte_size`` is the size of the JSON body in UTF-8.
    """

    model: str
    item_counts: tuple[tuple[str, int], ...]
    tool_names: tuple[str, ...]
    byte_size: int
    initiator: str

    def as_log_extra(self) -> dict[str, object]:
        return {
            "model": self.model,
            "item_counts": dict(self.item_counts),
            "tool_names": list(self.tool_names),
            "byte_size": self.byte_size,
            "initiator": self.initiator,
        }


@attrs.frozen
class ResponsesRequest:
    """One request: the JSON body (without ``stream``), its headers and its digest.

    The repr shows the digest and the header names only: the body is the conversation itself.
    """

    body: Mapping[str, Any] = attrs.field(converter=_read_only, hash=False, repr=False)
    headers: Mapping[str, str] = attrs.field(
        converter=_read_only, hash=False, repr=lambda headers: repr(sorted(headers))
    )
    digest: RequestDigest

    def wire(self, *, stream: bool) -> bytes:
        """The body as it goes on the wire, with ``stream`` first: the bytes the SDK's ``create()``
        writes for the same keywords (compact, non-ASCII as it is, NaN refused), except that an
        unpaired surrogate an identifier kept is written as its escape, where the SDK's encoder
        would fail (UTF-8 cannot carry it; JSON can, escaped)."""
        text = json.dumps(
            {"stream": stream, **self.body},
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
            default=json_default,
        )
        return escape_surrogates(text).encode("utf-8")


class ResponsesPayloadBuilder:
    """Builds the Responses request for a conversation, following the contract's payload rules."""

    def __init__(self, settings: ResponsesSettings) -> None:
        self._settings = settings

    def build(self, messages: Sequence[ChatMessage], options: ChatOptions | None = None) -> ResponsesRequest:
        options = options or ChatOptions()
        settings = self._settings
        body: dict[str, Any] = {"model": options.model or settings.model, "input": self.input_items(messages)}
        if options.instructions is not None:
            body["instructions"] = options.instructions
        if options.tools:
            body["tools"] = [self.tool(spec) for spec in options.tools]
        if options.tool_choice is not None:
            body["tool_choice"] = self._tool_choice(options.tool_choice)
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
        reasoning = self._reasoning(options)
        if reasoning:
            body["reasoning"] = reasoning
        store = settings.store if options.store is None else options.store
        body["store"] = store
        if reasoning and reasoning.get("effort") != "none":
            # Without storage the reasoning state only survives as encrypted content sent back to us.
            body["include"] = [_ENCRYPTED_REASONING]
        max_output_tokens = options.max_output_tokens or settings.max_output_tokens
        if max_output_tokens is not None:
            body["max_output_tokens"] = max_output_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.metadata is not None:
            body["metadata"] = dict(options.metadata)
        if options.response_format is not None:
            body["text"] = {"format": _plain(options.response_format)}
        if options.previous_response_id is not None:
            body["previous_response_id"] = options.previous_response_id
        if options.prompt_cache_key is not None:
            body["prompt_cache_key"] = options.prompt_cache_key
        if options.prompt_cache_retention is not None:
            body["prompt_cache_retention"] = options.prompt_cache_retention
        if options.extra_body:
            if "stream" in options.extra_body:
                raise ValueError("extra_body cannot set stream: the adapter chosen decides it")
            body.update(_plain(options.extra_body))
        headers = {**settings.extra_headers, "X-Initiator": options.initiator}
        # One serialization tells both the size and whether any string holds a surrogate; the
        # recursive walk that makes every string UTF-8-encodable runs only when one does.
        wire = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        if has_surrogate(wire):
            body = _encodable(body)
            wire = escape_surrogates(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        size = len(wire.encode("utf-8", "surrogatepass"))
        return ResponsesRequest(body, headers, self.digest(body, options.initiator, size))

    @staticmethod
    def digest(body: Mapping[str, Any], initiator: str, size: int) -> RequestDigest:
        """The content-free description of ``body`` (``size`` bytes as JSON) that diagnostics may log."""
        items = body.get("input") or ()
        counts = Counter(str(item.get("type", "unknown")) for item in items if isinstance(item, Mapping))
        tools = tuple(
            str(t.get("name", t.get("type", ""))) for t in body.get("tools") or () if isinstance(t, Mapping)
        )
        return RequestDigest(
            model=str(body.get("model", "")),
            item_counts=tuple(sorted(counts.items())),
            tool_names=tools,
            byte_size=size,
            initiator=initiator,
        )

    def input_items(self, messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        """The ``input`` array: one item per message run of text, call, result, reasoning or provider item."""
        return [item for message in messages for item in self._message_items(message)]

    def _message_items(self, message: ChatMessage) -> Iterator[dict[str, Any]]:
        # Text parts side by side make one message item: those of one provider item, or those a host wrote.
        texts: list[TextContent] = []
        for content in message.contents:
            if isinstance(content, TextContent):
                if texts and texts[-1].provider_item != content.provider_item:
                    yield self._message(message, texts)
                    texts = []
                texts.append(content)
                continue
            if texts:
                yield self._message(message, texts)
                texts = []
            item = self._item(content)
            if item is not None:
                yield item
        if texts:
            yield self._message(message, texts)

    @staticmethod
    def _message(message: ChatMessage, texts: list[TextContent]) -> dict[str, Any]:
        if message.role == "tool":
            raise ValueError("a tool message carries function results only, not text")
        provider = texts[0].provider_item
        if provider is not None and message.role == "assistant":
            item = _provider_message(provider, texts)
            if item is not None:
                return item
        part_type = "output_text" if message.role == "assistant" else "input_text"
        parts: list[dict[str, Any]] = []
        for content in texts:
            part: dict[str, Any] = {"type": part_type, "text": content.text}
            if part_type == "output_text":
                part["annotations"] = []
            parts.append(part)
        # Without "type" some SDKs and gateways re-read the item as an unknown type and reject it.
        return {"type": "message", "role": message.role, "content": parts}

    def _item(
        self, content: FunctionCallContent | FunctionResultContent | ReasoningContent | ProviderItemContent
    ) -> dict[str, Any] | None:
        if isinstance(content, FunctionCallContent):
            return self.function_call(content)
        if isinstance(content, FunctionResultContent):
            return {
                "type": "function_call_output",
                "call_id": content.call_id,
                "output": tool_output(content.result),
            }
        if isinstance(content, ReasoningContent):
            return self.reasoning_item(content)
        return self.provider_item(content)

    @staticmethod
    def provider_item(content: ProviderItemContent) -> dict[str, Any] | None:
        """The provider's item as it sent it, or None (logged) when its JSON is not an object the
        provider could take back: the rest of the conversation still goes."""
        try:
            item = json.loads(content.raw_json, parse_constant=reject_constant)
        except (ValueError, RecursionError):
            item = None
        if not isinstance(item, dict):
            _LOGGER.warning("A provider item whose JSON is not an object was left out of the request")
            return None
        return item

    def function_call(self, call: FunctionCallContent) -> dict[str, Any]:
        """A call in history, as the provider sent it (its item id and status included); its arguments
        are the model's own string unless the wrap policy applies."""
        arguments = escape_surrogates(call.raw_arguments)
        if call.parse_error is not None and self._settings.malformed_arguments_in_history == "wrap":
            arguments = escape_surrogates(
                json.dumps({"INVALID_JSON": call.raw_arguments}, ensure_ascii=False)
            )
        item = _provider_object(call.provider_item) or {}
        item.update(type="function_call", call_id=call.call_id, name=call.name, arguments=arguments)
        if call.item_id is not None:
            item["id"] = call.item_id
        return item

    def reasoning_item(self, reasoning: ReasoningContent) -> dict[str, Any] | None:
        """The reasoning item to send back, or None when the provider could not use it.

        Without encrypted content the state only exists on the provider's side, so the item is
        sent (by id) only when responses are stored; otherwise the provider would reject it.
        """
        if reasoning.encrypted_content is None and (reasoning.item_id is None or not self._settings.store):
            return None
        item = _provider_object(reasoning.provider_item) or {}
        given = item.get("summary")
        if isinstance(given, list) and len(given) == len(reasoning.summary) and all(map(_is_object, given)):
            summary = [{**part, "text": text} for part, text in zip(given, reasoning.summary, strict=True)]
        else:
            summary = [{"type": "summary_text", "text": text} for text in reasoning.summary]
        item.update(type="reasoning", summary=summary)
        if reasoning.item_id is not None:
            item["id"] = reasoning.item_id
        if reasoning.encrypted_content is not None:
            item["encrypted_content"] = reasoning.encrypted_content
        return item

    @staticmethod
    def tool(spec: ToolSpec) -> dict[str, Any]:
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": _plain(spec.parameters),
            "strict": spec.strict,
        }

    @staticmethod
    def _tool_choice(choice: str) -> str | dict[str, str]:
        if choice in ("auto", "none", "required"):
            return choice
        return {"type": "function", "name": choice}

    def _reasoning(self, options: ChatOptions) -> dict[str, str]:
        effort: str | None
        summary: str | None
        if options.reasoning is not None:
            effort, summary = options.reasoning.effort, options.reasoning.summary
        else:
            effort, summary = self._settings.reasoning_effort, self._settings.reasoning_summary
        reasoning: dict[str, str] = {}
        if effort is not None:
            reasoning["effort"] = effort
        if summary is not None:
            reasoning["summary"] = summary
        return reasoning
