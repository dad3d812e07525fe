"""The attribute and metric names typed in adapters.telemetry are the semantic-conventions package's own."""

from __future__ import annotations

import warnings

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes, http_attributes, server_attributes

from adapters.telemetry import conventions

# Every name the package emits, by the module of opentelemetry-semantic-conventions that defines it:
# each constant there has the name of ours.
DEFINED = {
    gen_ai_attributes: (
        "GEN_AI_OPERATION_NAME",
        "GEN_AI_PROVIDER_NAME",
        "GEN_AI_REQUEST_MODEL",
        "GEN_AI_REQUEST_MAX_TOKENS",
        "GEN_AI_REQUEST_TEMPERATURE",
        "GEN_AI_RESPONSE_MODEL",
        "GEN_AI_RESPONSE_ID",
        "GEN_AI_RESPONSE_FINISH_REASONS",
        "GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK",
        "GEN_AI_USAGE_INPUT_TOKENS",
        "GEN_AI_USAGE_OUTPUT_TOKENS",
        "GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS",
        "GEN_AI_TOKEN_TYPE",
        "GEN_AI_AGENT_NAME",
        "GEN_AI_TOOL_NAME",
        "GEN_AI_TOOL_CALL_ID",
        "GEN_AI_TOOL_TYPE",
        "GEN_AI_INPUT_MESSAGES",
        "GEN_AI_OUTPUT_MESSAGES",
        "GEN_AI_SYSTEM_INSTRUCTIONS",
        "GEN_AI_TOOL_CALL_ARGUMENTS",
        "GEN_AI_TOOL_CALL_RESULT",
    ),
    server_attributes: ("SERVER_ADDRESS", "SERVER_PORT"),
    error_attributes: ("ERROR_TYPE",),
    http_attributes: ("HTTP_RESPONSE_STATUS_CODE", "HTTP_REQUEST_RESEND_COUNT"),
    gen_ai_metrics: (
        "GEN_AI_CLIENT_OPERATION_DURATION",
        "GEN_AI_CLIENT_TOKEN_USAGE",
        "GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK",
    ),
}
NAMES = [
    (getattr(conventions, name), getattr(module, name)) for module, names in DEFINED.items() for name in names
]


# Names the conventions do not define (yet), each in their style; docs/telemetry.md lists them.
OWN = [
    conventions.GEN_AI_USAGE_COST,
    conventions.GEN_AI_USAGE_CACHE_READ_SHARE,
    conventions.GEN_AI_CLIENT_COST,
    conventions.RUN_STOP_REASON,
    conventions.FAILOVER_TARGET,
    conventions.FAILOVER_FAILED_TARGETS,
    conventions.RATE_LIMIT_WAIT,
    conventions.RATE_LIMIT_LIMIT,
]


@pytest.mark.parametrize(("ours", "theirs"), NAMES, ids=[theirs for _, theirs in NAMES])
def test_each_name_is_the_conventions_constant(ours: str, theirs: str) -> None:
    assert ours == theirs


def test_every_name_the_module_types_is_checked_against_the_conventions() -> None:
    typed = {
        value
        for name, value in vars(conventions).items()
        if name.isupper() and isinstance(value, str) and "." in value
    }
    assert typed == {ours for ours, _ in NAMES} | set(OWN)


@pytest.mark.parametrize("ours", OWN)
def test_a_name_of_our_own_is_not_one_the_conventions_define(ours: str) -> None:
    defined = {
        value
        for module in (gen_ai_attributes, gen_ai_metrics)
        for value in vars(module).values()
        if isinstance(value, str)
    }
    # When the conventions define a cost, this fails: then use their name instead.
    assert ours not in defined


def test_the_values_are_the_conventions_well_known_values() -> None:
    # The value enums are marked deprecated (moved to the GenAI conventions repository); reading them warns.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        operations = gen_ai_attributes.GenAiOperationNameValues
        theirs = (
            operations.CHAT.value,
            operations.EXECUTE_TOOL.value,
            operations.INVOKE_AGENT.value,
            gen_ai_attributes.GenAiProviderNameValues.OPENAI.value,
            gen_ai_attributes.GenAiTokenTypeValues.INPUT.value,
            gen_ai_attributes.GenAiTokenTypeValues.OUTPUT.value,
        )
    ours = (
        conventions.OPERATION_CHAT,
        conventions.OPERATION_EXECUTE_TOOL,
        conventions.OPERATION_INVOKE_AGENT,
        conventions.PROVIDER_OPENAI,
        conventions.TOKEN_TYPE_INPUT,
        conventions.TOKEN_TYPE_OUTPUT,
    )
    assert ours == theirs


def test_bucket_boundaries_are_the_conventions_advisory_ones() -> None:
    assert conventions.DURATION_BUCKETS == (
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    )  # fmt: skip
    assert conventions.TOKEN_BUCKETS == (
        1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
    )  # fmt: skip
