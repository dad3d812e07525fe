"""Configuration: layering (defaults, file, environment, flags), validation and secret hygiene."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import attrs
import pytest

from adapters.settings import (
    AgentSettings,
    ConfigurationError,
    Secret,
    environment_variables,
    load_config_file,
    parse_bool,
    resolve_settings,
)

API_KEY = "sk-PLANTED-secret-4242"


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        (True, True), (False, False), (1, True), (0, False),
        ("true", True), ("false", False), ("1", True), ("0", False), ("yes", True), ("no", False),
        ("TRUE", True), (" No ", False), ("on", True), ("off", False),
    ],
)  # fmt: skip
def test_parse_bool_accepts_every_documented_spelling(spelling: object, expected: bool) -> None:
    assert parse_bool(spelling) is expected


@pytest.mark.parametrize("spelling", ["maybe", "", "2", 2, None, 1.5, "truee"])
def test_parse_bool_rejects_anything_else_with_the_accepted_values(spelling: object) -> None:
    with pytest.raises(ConfigurationError, match=r"expected one of true/false/1/0/yes/no"):
        parse_bool(spelling, "agent.use_streaming")


def test_defaults() -> None:
    agent = resolve_settings(environ={}).agent
    assert agent == AgentSettings()
    assert agent.use_streaming is True
    assert agent.base_url is None
    assert agent.malformed_arguments_in_history == "verbatim"
    assert (agent.max_tool_iterations, agent.max_consecutive_tool_errors) == (40, 3)


def test_environment_beats_config_and_flags_beat_environment() -> None:
    config = {"agent": {"model": "from-file", "use_streaming": True, "max_retries": 5}}
    environ = {"AGENT_MODEL": "from-env", "AGENT_USE_STREAMING": "no", "UNRELATED": "x"}
    agent = resolve_settings(config, environ).agent
    assert (agent.model, agent.use_streaming, agent.max_retries) == ("from-env", False, 5)
    flagged = resolve_settings(config, environ, {"agent": {"use_streaming": True}}).agent
    assert (flagged.model, flagged.use_streaming) == ("from-env", True)


def test_environment_values_are_typed() -> None:
    environ = {
        "AGENT_BASE_URL": "http://127.0.0.1:4000/v1",
        "AGENT_API_KEY": API_KEY,
        "AGENT_TIMEOUT_SECONDS": "2.5",
        "AGENT_MAX_RETRIES": "0",
        "AGENT_REASONING_EFFORT": "low",
        "AGENT_DETAILED_TOOL_ERRORS": "yes",
    }
    agent = resolve_settings(environ=environ).agent
    assert agent.base_url == "http://127.0.0.1:4000/v1"
    assert agent.api_key.reveal() == API_KEY
    assert (agent.timeout_seconds, agent.max_retries, agent.reasoning_effort) == (2.5, 0, "low")
    assert agent.detailed_tool_errors is True


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"agent": {"use_streaming": "maybe"}}, "agent.use_streaming: expected one of true/false/1/0/yes/no"),
        ({"agent": {"max_retries": "many"}}, "agent.max_retries: expected a whole number, got 'many'"),
        ({"agent": {"timeout_seconds": "soon"}}, "agent.timeout_seconds: expected a finite number"),
        ({"agent": {"timeout_seconds": 0}}, "agent.timeout_seconds: expected a finite positive number"),
        ({"agent": {"max_retries": -1}}, "agent.max_retries: expected 0 or more"),
        ({"agent": {"max_output_retries": -1}}, "agent.max_output_retries: expected 0 or more"),
        (
            {"agent": {"conversation_state": "cloud"}},
            "agent.conversation_state: expected one of client/server",
        ),
        (
            {"agent": {"reasoning_effort": "ultra"}},
            "agent.reasoning_effort: expected one of none/minimal/low",
        ),
        ({"agent": {"malformed_arguments_in_history": "fix"}}, "expected one of verbatim/wrap"),
        ({"agent": {"modle": "x"}}, "agent.modle: unknown key; did you mean model?"),
        ({"agent": {"zzz": "x"}}, "agent.zzz: unknown key; the known keys are api_key, "),
        ({"agnet": {}}, "agnet: unknown section"),
        ({"agent": "x"}, "agent: expected a mapping"),
        (
            {"agent": {"approval_required_tools": 3}},
            "agent.approval_required_tools: expected a list of names",
        ),
        (
            {"agent": {"approval_required_tools": ["remove_step", "drop_table"]}},
            "agent.approval_required_tools: no workflow tool named 'drop_table'; the tools are list_steps,",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_settings(config, environ={})
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_misspelt_environment_variable_is_an_error_that_names_the_right_one() -> None:
    environ = {"AGENT_API_KEY": API_KEY, "AGENT_MODEL": "gpt-test", "AGENT_BASEURL": "http://127.0.0.1:4000"}
    with pytest.raises(ConfigurationError) as info:
        resolve_settings(environ=environ)
    message = str(info.value)
    assert message.startswith("AGENT_BASEURL: unknown environment variable; did you mean AGENT_BASE_URL? ")
    assert "\n" not in message
    assert API_KEY not in message
    with pytest.raises(ConfigurationError, match=r"^AGENT_ZZZ: unknown environment variable; the known"):
        resolve_settings(environ={"AGENT_ZZZ": "1"})


def test_every_key_has_its_variable_and_every_variable_its_key() -> None:
    variables = environment_variables()
    assert set(variables.values()) >= {("base_url",), ("api_key",), ("model",), ("use_streaming",)}
    assert variables["AGENT_RUN_BUDGET__COST_USD"] == ("run_budget", "cost_usd")
    assert "AGENT_RUN_BUDGET" not in variables  # a section, not a value
    assert {path[0] for path in variables.values()} == set(attrs.fields_dict(AgentSettings))
    assert all(name == "AGENT_" + "__".join(path).upper() for name, path in variables.items())
    budget = resolve_settings(environ={"AGENT_RUN_BUDGET__COST_USD": "0.5"}).agent.run_budget
    assert budget.cost_usd == 0.5
    # Each one is read: set to a value the key accepts, it arrives in that key.
    agent = resolve_settings(environ={"AGENT_TRANSCRIPT_WARNING_CHARS": "17"}).agent
    assert agent.transcript_warning_chars == 17


@attrs.frozen
class _Budget:
    cost_usd: float | None = None
    tool_calls: int | None = None


@attrs.frozen
class _Nested:
    model: str = "m"
    run_budget: _Budget | None = None
    api_key: Secret = attrs.field(factory=lambda: Secret(""))


def test_a_nested_section_has_a_variable_per_key_joined_by_a_double_underscore() -> None:
    assert environment_variables(_Nested) == {
        "AGENT_MODEL": ("model",),
        "AGENT_RUN_BUDGET__COST_USD": ("run_budget", "cost_usd"),
        "AGENT_RUN_BUDGET__TOOL_CALLS": ("run_budget", "tool_calls"),
        "AGENT_API_KEY": ("api_key",),  # a Secret is a value, not a section
    }


def test_api_key_never_shows_in_reprs_or_errors() -> None:
    settings = resolve_settings({"agent": {"api_key": API_KEY}}, environ={})
    assert API_KEY not in repr(settings)
    assert API_KEY not in str(settings.agent.api_key)
    assert settings.agent.api_key
    assert not Secret("")
    with pytest.raises(ConfigurationError) as info:
        resolve_settings({"agent": {"api_key": {"nested": API_KEY}}}, environ={})
    assert API_KEY not in str(info.value)


def test_yaml_and_toml_files(tmp_path: Path) -> None:
    yaml_file = tmp_path / "agents.yaml"
    yaml_file.write_text("agent:\n  use_streaming: false\n  model: gpt-5.5\n", encoding="utf-8")
    toml_file = tmp_path / "agents.toml"
    toml_file.write_text('[agent]\nuse_streaming = "no"\nmax_tool_iterations = 7\n', encoding="utf-8")
    assert resolve_settings(load_config_file(yaml_file), environ={}).agent.model == "gpt-5.5"
    agent = resolve_settings(load_config_file(toml_file), environ={}).agent
    assert (agent.use_streaming, agent.max_tool_iterations) == (False, 7)
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    assert load_config_file(empty) == {}


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.yaml", f"agent: [\n  api_key: {API_KEY}\n", "not valid YAML at line"),
        ("bad.toml", f'[agent\napi_key = "{API_KEY}"\n', "not valid TOML"),
        ("list.yaml", "- a\n- b\n", "expected a mapping at the top level"),
        ("conf.ini", "[agent]\n", "expected a .yaml, .yml or .toml file"),
    ],
)
def test_bad_config_files_fail_clearly_without_quoting_them(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as info:
        load_config_file(path)
    assert message in str(info.value)
    assert API_KEY not in str(info.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot be read"):
        load_config_file(tmp_path / "absent.yaml")


def test_the_run_budget_reads_from_a_file_and_the_environment_and_reaches_the_loop(tmp_path: Path) -> None:
    from adapters.container import _loop_settings
    from application import RunBudget

    toml_file = tmp_path / "agents.toml"
    toml_file.write_text(
        "[agent]\nrun_deadline_seconds = 120\nmax_output_tokens = 900\n"
        '[agent.run_budget]\nrequests = 8\ncost_usd = "0.25"\n',
        encoding="utf-8",
    )
    environ = {"AGENT_RUN_BUDGET__TOOL_CALLS": "30", "AGENT_RUN_BUDGET__COST_USD": "0.5"}
    settings = resolve_settings(load_config_file(toml_file), environ=environ)

    assert settings.agent.run_budget == RunBudget(requests=8, tool_calls=30, cost_usd=0.5)
    loop = _loop_settings(settings)
    assert (loop.run_budget, loop.run_deadline_seconds, loop.max_output_tokens) == (
        settings.agent.run_budget,
        120.0,
        900,
    )
    assert not resolve_settings({}, environ={}).agent.run_budget


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"run_budget": {"request": 3}},
            "agent.run_budget.request: unknown key; did you mean requests? "
            "the known keys are allow_unmetered, cost_usd, input_tokens, output_tokens, requests, tool_calls",
        ),
        (
            {"run_budget": {"zzz": 3}},
            "agent.run_budget.zzz: unknown key; the known keys are allow_unmetered, cost_usd, input_tokens, ",
        ),
        (
            {"run_budget": {"requests": 0}},
            "agent.run_budget.requests: expected a positive whole number, got 0",
        ),
        (
            {"run_budget": {"tool_calls": "many"}},
            "agent.run_budget.tool_calls: expected a positive whole number",
        ),
        (
            {"run_budget": {"cost_usd": "nan"}},
            "agent.run_budget.cost_usd: expected a positive number, got 'nan'",
        ),
        ({"run_budget": 5}, "agent.run_budget: expected a mapping of limits"),
        ({"run_deadline_seconds": 0}, "agent.run_deadline_seconds: expected a finite positive number, got 0"),
    ],
)
def test_a_bad_budget_is_one_line_naming_its_key(section: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_settings({"agent": section}, environ={})
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_the_documented_budget_example_is_a_configuration_that_resolves() -> None:
    import yaml

    from application import RunBudget
    from tests.support.doc_blocks import section_block

    block = section_block("docs/configuration.md", "## Budgets and cost", "yaml")
    agent = resolve_settings(yaml.safe_load(block), environ={}).agent
    assert agent.run_budget == RunBudget(requests=12, output_tokens=8000, cost_usd=0.5)
    assert agent.run_deadline_seconds == 120.0


HINTS = typing.get_type_hints(AgentSettings)
# The counts of retries may be 0; each has its own case above.
NUMERIC_KEYS = [
    name
    for name, hint in HINTS.items()
    if hint in (int, float) and name not in ("max_retries", "max_output_retries")
]


@pytest.mark.parametrize("key", NUMERIC_KEYS)
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity", "-1", "0"])
def test_every_numeric_setting_must_be_finite_and_positive(key: str, value: str) -> None:
    if value in ("nan", "NaN", "inf", "-inf", "Infinity"):
        # Refused as it is read: a whole number cannot be spelled so, and a float must be finite.
        kind = "a whole number" if HINTS[key] is int else "a finite number"
        expected = f"agent.{key}: expected {kind}, got {value!r}"
    else:
        expected = f"agent.{key}: expected a finite positive number, got "
    with pytest.raises(ConfigurationError) as info:
        resolve_settings(environ={"AGENT_" + key.upper(): value})
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"run_deadline_seconds": "inf"}, "agent.run_deadline_seconds: expected a finite number"),
        ({"run_budget": {"cost_usd": "nan"}}, "agent.run_budget.cost_usd: expected a positive number"),
        ({"timeout_seconds": float("nan")}, "agent.timeout_seconds: expected a finite number"),
    ],
)
def test_optional_and_nested_numbers_must_be_finite_too(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_settings({"agent": config}, environ={})
    assert message in str(info.value)


def test_a_directly_built_setting_is_held_to_the_same_rule() -> None:
    with pytest.raises(
        ConfigurationError, match=r"agent\.deadline_seconds: expected a finite positive number"
    ):
        AgentSettings(deadline_seconds=float("inf"))


def test_the_numeric_keys_include_the_new_limits() -> None:
    assert {"deadline_seconds", "timeout_seconds", "max_output_items", "max_transcript_bytes"} <= set(
        NUMERIC_KEYS
    )


@pytest.mark.parametrize(
    ("environ", "config", "expected"),
    [
        ({}, {}, ("remove_step",)),
        ({"AGENT_APPROVAL_REQUIRED_TOOLS": ""}, {}, ()),
        ({"AGENT_APPROVAL_REQUIRED_TOOLS": "[]"}, {}, ()),
        ({"AGENT_APPROVAL_REQUIRED_TOOLS": "remove_step, move_step"}, {}, ("remove_step", "move_step")),
        ({}, {"agent": {"approval_required_tools": []}}, ()),
        ({}, {"agent": {"approval_required_tools": ["rename_step"]}}, ("rename_step",)),
    ],
)
def test_the_tools_that_need_approval(
    environ: dict[str, str], config: dict[str, object], expected: tuple[str, ...]
) -> None:
    assert resolve_settings(config, environ).agent.approval_required_tools == expected


def test_the_answer_limits_are_read_from_their_keys_and_checked() -> None:
    agent = resolve_settings(
        environ={"AGENT_RUN_BUDGET__ALLOW_UNMETERED": "yes", "AGENT_MAX_CALLS_PER_RESPONSE": "7"}
    ).agent
    assert agent.run_budget.allow_unmetered is True
    assert agent.max_calls_per_response == 7
    assert resolve_settings(environ={}).agent.max_calls_per_response == 128
    assert resolve_settings(environ={}).agent.run_budget.allow_unmetered is False
    with pytest.raises(ConfigurationError, match=r"^agent\.run_budget\.allow_unmetered: expected one of"):
        resolve_settings({"agent": {"run_budget": {"allow_unmetered": "maybe"}}}, environ={})
    with pytest.raises(ConfigurationError, match=r"^agent\.max_calls_per_response: expected a finite"):
        resolve_settings(environ={"AGENT_MAX_CALLS_PER_RESPONSE": "0"})


# ---------------------------------------------------------------- agent.fallbacks and the rate limits

_TARGET = {"base_url": "http://127.0.0.1:4001/v1", "model": "gpt-backup", "api_key": "sk-backup-1234"}


def test_fallbacks_come_from_a_list_of_mappings_with_their_keys_among_the_secrets() -> None:
    second = {"base_url": "https://gw.example/v1", "model": "m2", "api_key_env": "BACKUP_KEY", "name": "eu"}
    settings = resolve_settings(
        {"agent": {"api_key": "sk-main-1234", "fallbacks": [_TARGET, second]}}, {"BACKUP_KEY": "sk-env-5678"}
    )
    first, other = settings.agent.fallbacks
    assert (first.base_url, first.model, first.api_key.reveal(), first.name) == (
        "http://127.0.0.1:4001/v1",
        "gpt-backup",
        "sk-backup-1234",
        None,
    )
    assert (other.api_key.reveal(), other.name) == ("sk-env-5678", "eu")
    assert settings.agent.secrets() == ("sk-main-1234", "sk-backup-1234", "sk-env-5678")
    assert "sk-backup-1234" not in repr(settings)


def test_fallbacks_come_from_the_environment_as_a_json_list() -> None:
    settings = resolve_settings(
        None, {"AGENT_FALLBACKS": json.dumps([_TARGET]), "AGENT_REQUESTS_PER_MINUTE": "90"}
    )
    assert [target.model for target in settings.agent.fallbacks] == ["gpt-backup"]
    assert settings.agent.requests_per_minute == 90
    assert environment_variables()["AGENT_FALLBACKS"] == ("fallbacks",)


@pytest.mark.parametrize(
    ("fallbacks", "message"),
    [
        ("not json", "agent.fallbacks: expected a JSON list of targets"),
        ({"model": "m"}, "agent.fallbacks: expected a list of targets"),
        (["m"], "agent.fallbacks[0]: expected a mapping"),
        (
            [{**_TARGET, "colour": "red"}],
            "agent.fallbacks[0].colour: unknown key; the known keys are api_key, api_key_env, base_url, ",
        ),
        (
            [{**_TARGET, "modle": "m"}],
            "agent.fallbacks[0].modle: unknown key; did you mean model? the known keys",
        ),
        ([{"model": "m", "api_key": "k"}], "agent.fallbacks[0].base_url: not set"),
        ([{**_TARGET, "model": ""}], "agent.fallbacks[0].model: expected a model name"),
        ([{**_TARGET, "max_retries": -1}], "agent.fallbacks[0].max_retries: expected 0 or more"),
        ([{**_TARGET, "base_url": "ftp://x"}], "agent.fallbacks[0].base_url: expected an http(s) URL"),
        ([{**_TARGET, "api_key": None}], "agent.fallbacks[0].api_key: not set; give api_key or api_key_env"),
        (
            [{**_TARGET, "api_key_env": "BACKUP_KEY"}],
            "agent.fallbacks[0]: set api_key or api_key_env, not both",
        ),
        (
            [{**_TARGET, "api_key": None, "api_key_env": "NOT_SET"}],
            "the environment variable NOT_SET is not set",
        ),
        (
            [{**_TARGET, "timeout_seconds": -1}],
            "agent.fallbacks[0].timeout_seconds: expected a finite positive",
        ),
        ([{**_TARGET, "max_retries": "many"}], "agent.fallbacks[0].max_retries: expected a whole number"),
        (
            [{**_TARGET, "use_streaming": "maybe"}],
            "agent.fallbacks[0].use_streaming: expected one of true/false",
        ),
        ([_TARGET, {**_TARGET, "name": "fallback-1"}], "agent.fallbacks[1].name: 'fallback-1' names another"),
        ([{**_TARGET, "name": "primary"}], "agent.fallbacks[0].name: 'primary' names another"),
    ],
)
def test_a_bad_fallback_is_refused_in_one_line_naming_it(fallbacks: object, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        resolve_settings({"agent": {"fallbacks": fallbacks}}, {})
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_fallback_key_of_the_wrong_type_is_not_shown() -> None:
    with pytest.raises(ConfigurationError) as raised:
        resolve_settings({"agent": {"fallbacks": [{**_TARGET, "api_key": ["sk-in-a-list-9999"]}]}}, {})
    assert "sk-in-a-list-9999" not in str(raised.value)
    assert "agent.fallbacks[0].api_key: expected a string, got ********" in str(raised.value)


@pytest.mark.parametrize("key", ["requests_per_minute", "tokens_per_minute"])
@pytest.mark.parametrize("value", [0, -5, "ten"])
def test_a_rate_limit_is_a_positive_whole_number(key: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=f"agent.{key}: expected a "):
        resolve_settings({"agent": {key: value}}, {})


def test_the_state_secret_is_read_from_the_environment_and_never_shown() -> None:
    secret = "state-SECRET-41ab"
    settings = resolve_settings({}, environ={"AGENT_STATE_SECRET": secret})
    assert settings.agent.state_secret.reveal() == secret
    assert secret in settings.agent.secrets()  # cut from whatever the container and the CLI show
    assert secret not in repr(settings)
    assert not resolve_settings({}, environ={}).agent.state_secret
    with pytest.raises(ConfigurationError) as info:
        resolve_settings({"agent": {"state_secret": [secret]}}, environ={})
    assert "agent.state_secret: expected" in str(info.value)
    assert secret not in str(info.value)
