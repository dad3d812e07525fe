"""The GenAI semantic conventions' names this package emits; only the OpenTelemetry API is needed to run."""

from __future__ import annotations

from typing import Final

from domain import Usage

# opentelemetry-semantic-conventions is a test dependency only; tests/adapters/telemetry/test_conventions.py
# holds every name below to the package's constant wherever one exists.

# ---------------------------------------------------------------- span and metric attributes
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
# Not in the conventions yet: what the gateway billed (US dollars), named as its usage siblings are.
GEN_AI_USAGE_COST: Final = "gen_ai.usage.cost"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
# Not in the conventions: the share of the input tokens read from the provider's prompt cache (0 to 1).
GEN_AI_USAGE_CACHE_READ_SHARE: Final = "gen_ai.usage.cache_read.share"
# The project's own: the budget limit or deadline that ended a run early.
RUN_STOP_REASON: Final = "meeting_agents.run.stop_reason"
# The project's own: which failover target answered (or failed, on a failover event), how many failed first.
FAILOVER_TARGET: Final = "meeting_agents.failover.target"
FAILOVER_FAILED_TARGETS: Final = "meeting_agents.failover.failed_targets"
FAILOVER_EVENT: Final = "failover"
# The project's own: how long the client-side rate limit held a request, and which limit held it.
RATE_LIMIT_WAIT: Final = "meeting_agents.rate_limit.wait_seconds"
RATE_LIMIT_LIMIT: Final = "meeting_agents.rate_limit.limit"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"  # noqa: S105  # model tokens, not a credential
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"
HTTP_REQUEST_RESEND_COUNT: Final = "http.request.resend_count"

# Content: recorded only when capture is switched on.
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

# ---------------------------------------------------------------- attribute values
OPERATION_CHAT: Final = "chat"
OPERATION_EXECUTE_TOOL: Final = "execute_tool"
OPERATION_INVOKE_AGENT: Final = "invoke_agent"
PROVIDER_OPENAI: Final = "openai"
TOKEN_TYPE_INPUT: Final = "input"  # noqa: S105  # model tokens, not a credential
TOKEN_TYPE_OUTPUT: Final = "output"  # noqa: S105  # model tokens, not a credential
TOOL_TYPE_FUNCTION: Final = "function"
# error.type when nothing more specific is known, as the conventions spell it.
ERROR_TYPE_OTHER: Final = "_OTHER"

# ---------------------------------------------------------------- metrics
GEN_AI_CLIENT_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
GEN_AI_CLIENT_TOKEN_USAGE: Final = "gen_ai.client.token.usage"  # noqa: S105  # model tokens, not a credential
GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
# Not in the conventions yet: a counter of what requests cost (US dollars), beside gen_ai.client.token.usage.
GEN_AI_CLIENT_COST: Final = "gen_ai.client.cost"

# The conventions' advisory bucket boundaries: durations in seconds, doubling from 0.01 to 81.92;
# token counts in powers of four from 1 to 4^13.
DURATION_BUCKETS: Final = tuple(0.01 * 2**power for power in range(14))
TOKEN_BUCKETS: Final = tuple(4**power for power in range(14))


def cache_attributes(usage: Usage) -> dict[str, int | float]:
    """What a span says of the prompt cache: the input tokens read from it and their share of the input."""
    attributes: dict[str, int | float] = {}
    if usage.cached_input_tokens is not None:
        attributes[GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cached_input_tokens
    if usage.cached_share is not None:
        attributes[GEN_AI_USAGE_CACHE_READ_SHARE] = usage.cached_share
    return attributes
