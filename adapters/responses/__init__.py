"""The Responses adapters: ChatPorts over the OpenAI SDK's Responses API, streamed or JSON."""

from adapters.responses.chat_adapters import ResponsesJsonAdapter, ResponsesSseAdapter
from adapters.responses.error_mapping import map_error
from adapters.responses.folding import EventFolder
from adapters.responses.payload import RequestDigest, ResponsesPayloadBuilder, ResponsesRequest
from adapters.responses.settings import MalformedArgumentsPolicy, ResponsesSettings

__all__ = [
    "EventFolder",
    "MalformedArgumentsPolicy",
    "RequestDigest",
    "ResponsesJsonAdapter",
    "ResponsesPayloadBuilder",
    "ResponsesRequest",
    "ResponsesSettings",
    "ResponsesSseAdapter",
    "map_error",
]
