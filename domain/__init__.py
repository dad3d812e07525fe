"""The domain: chat values, tool calls, workflows, the ports and the errors. No I/O here."""

from domain.arguments import ArgumentsParseError, ParseErrorKind, parse_arguments
from domain.errors import (
    ChatError,
    ChatTransportError,
    ErrorContext,
    MalformedResponseError,
    RateLimitedError,
    ResponseFailedError,
)
from domain.messages import (
    ChatMessage,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    JsonValue,
    ProviderItemContent,
    ReasoningContent,
    Role,
    TextContent,
)
from domain.options import ChatOptions, Initiator, ReasoningOptions, ToolChoice, ToolSpec
from domain.ports import ChatPort, ToolInvokerPort, WholeAnswers
from domain.responses import ChatResponse, ChatResponseUpdate, FinishReason, Usage, updates_of
from domain.workflow import UnknownStepError, Workflow, WorkflowStep

__all__ = [
    "ArgumentsParseError",
    "ChatError",
    "ChatMessage",
    "ChatOptions",
    "ChatPort",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatTransportError",
    "Content",
    "ErrorContext",
    "FinishReason",
    "FunctionCallContent",
    "FunctionResultContent",
    "Initiator",
    "JsonValue",
    "MalformedResponseError",
    "ParseErrorKind",
    "ProviderItemContent",
    "RateLimitedError",
    "ReasoningContent",
    "ReasoningOptions",
    "ResponseFailedError",
    "Role",
    "TextContent",
    "ToolChoice",
    "ToolInvokerPort",
    "ToolSpec",
    "UnknownStepError",
    "Usage",
    "WholeAnswers",
    "Workflow",
    "WorkflowStep",
    "parse_arguments",
    "updates_of",
]
