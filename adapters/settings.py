"""Typed configuration: defaults, then a config file or mapping, then environment variables, then flags."""

from __future__ import annotations

import difflib
import json
import math
import os
import typing
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import cattrs

from application.meetings.language import summary_language
from application.runs.budget import RunBudget
from application.workflows.editor import WORKFLOW_TOOLS
from domain.options import ReasoningEffort, ReasoningSummary

__all__ = [
    "ENV_NESTING",
    "ENV_PREFIX",
    "AgentSettings",
    "ConfigurationError",
    "FallbackTarget",
    "MalformedArgumentsPolicy",
    "Secret",
    "Settings",
    "environment_variables",
    "load_config_file",
    "parse_bool",
    "resolve_settings",
]

ENV_PREFIX: Final = "AGENT_"
# A key inside a nested section (agent.run_budget.cost_usd) is AGENT_RUN_BUDGET__COST_USD: a double
# underscore cannot occur inside one key's name, so every variable names exactly one key path.
ENV_NESTING: Final = "__"
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})
_BOOL_SPELLINGS: Final = "true/false/1/0/yes/no"
_SHOWN_VALUE: Final = 80
# What a key of agent.run_budget takes, said in its one-line error (the limits not named take whole numbers).
_BUDGET_EXPECTED: Final = {"cost_usd": "a positive number", "allow_unmetered": f"one of {_BOOL_SPELLINGS}"}


# How a call whose arguments are not a JSON object goes back to the model (see ResponsesSettings).
MalformedArgumentsPolicy = Literal["verbatim", "wrap"]


class ConfigurationError(ValueError):
    """A configuration value is missing or invalid; the message is one line naming the key."""


class _SectionError(ConfigurationError):
    """A bad key or value found while structuring a section (``agent``, ``agent.run_budget``, a target of
    ``agent.fallbacks``): its message already names the key, so a section around it passes it on as is."""


@attrs.frozen(repr=False)
class Secret:
    """A secret string that never shows itself in a repr, a str or a log line."""

    _value: str = attrs.field(alias="value")

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('********')" if self._value else "Secret('')"

    __str__ = __repr__


def parse_bool(value: object, key: str = "value") -> bool:
    """A real bool, or one of true/false/1/0/yes/no (any case); anything else is a ConfigurationError."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise ConfigurationError(f"{key}: expected one of {_BOOL_SPELLINGS}, got {value!r}")


@attrs.frozen
class FallbackTarget:
    """One entry of ``agent.fallbacks``: another gateway or model a failed request is sent to.

    ``api_key`` or ``api_key_env`` (the name of an environment variable holding the key, read when
    the settings are resolved; not an ``AGENT_*`` one, which the settings refuse). ``name`` says which
    target gave an answer (``ChatResponse.served_by``; ``fallback-<n>`` from 1 when left out). The
    others default to the ``agent`` section's own: ``use_streaming``, ``timeout_seconds``,
    ``deadline_seconds`` (this target's share, never more than what the request has left) and
    ``max_retries``.
    """

    base_url: str
    model: str
    api_key: Secret = Secret("")
    api_key_env: str | None = None
    name: str | None = None
    use_streaming: bool | None = None
    timeout_seconds: float | None = None
    deadline_seconds: float | None = None
    max_retries: int | None = None


@attrs.frozen
class AgentSettings:
    """The ``agent`` section. Every key can be set as ``AGENT_<KEY>`` in the environment."""

    base_url: str | None = None
    api_key: Secret = Secret("")
    model: str = "offline"
    use_streaming: bool = True
    timeout_seconds: float = 60.0
    deadline_seconds: float = 600.0
    max_response_bytes: int = 64 * 1024 * 1024
    max_output_items: int = 10_000
    """More output items than this in one response (or input items in one request) is refused."""
    max_calls_per_response: int = 128
    """An answer with more tool calls than this runs none of them: the run stops (``too_many_calls``)."""
    max_transcript_bytes: int = 50 * 1024 * 1024
    """The CLI refuses a larger input file (exit 2) before reading more of it than this."""
    max_retries: int = 2
    reasoning_effort: ReasoningEffort | None = None
    reasoning_summary: ReasoningSummary | None = None
    max_output_tokens: int | None = None
    store: bool = False
    malformed_arguments_in_history: MalformedArgumentsPolicy = "verbatim"
    max_tool_iterations: int = 40
    max_consecutive_tool_errors: int = 3
    concurrent_tool_calls: bool = True
    detailed_tool_errors: bool = False
    telemetry: bool = True
    telemetry_capture_content: bool = False
    offline_dialect: Literal["openai", "litellm"] = "openai"
    offline_scenario: str | None = None
    transcript_warning_chars: int = 200_000
    """A transcript longer than this gets a one-line warning (size, estimated tokens) before it is sent."""
    batch_concurrency: int = 4
    """``meeting-agents batch`` and ``worker``: transcripts one process summarizes at once."""
    batch_requests_per_minute: int | None = None
    """``batch`` and ``worker``: model requests per minute across every process sharing the database."""
    batch_recovery_seconds: float = 10.0
    """``batch`` and ``worker`` on Postgres: how often each process looks for processes that died holding
    transcripts, and recovers those transcripts."""
    run_budget: RunBudget = attrs.Factory(RunBudget)
    """What one run may spend (``requests``, ``input_tokens``, ``output_tokens``, ``tool_calls``,
    ``cost_usd``); env ``AGENT_RUN_BUDGET__<KEY>``, e.g. ``AGENT_RUN_BUDGET__COST_USD``.
    ``allow_unmetered`` (default false) lets a run with a token limit go on past answers that report
    no token counts; otherwise such an answer ends it (``budget.unmetered``)."""
    run_deadline_seconds: float | None = None
    """One whole run's wall time; each request's own deadline is then at most the time left."""
    chunk_chars: int = 60_000
    """A transcript longer than this is summarized in overlapping chunks split at speaker turns."""
    chunk_concurrency: int = 4
    """How many chunks of a long meeting are summarized at once."""
    approval_required_tools: tuple[str, ...] = ("remove_step",)
    """The workflow editor's tools whose calls wait for approval; ``[]`` (env: empty) for none."""
    summary_language: str = "auto"
    """The language summaries and their items are written in: ``auto`` (the transcript's) or a BCP 47
    tag (``fr``, ``pt-BR``); items in another language than the transcript's carry quotes of their lines."""
    state_secret: Secret = Secret("")
    """Signs the paused runs the CLI keeps (``--state``) and is required of those ``resume`` reads
    (HMAC-SHA256, see ``application.dumps``); unset, they are written and read unsigned."""
    max_output_retries: int = 1
    """How many more turns a run's typed final answer gets when it does not fit its type."""
    record_to: str | None = None
    """A directory: every HTTP exchange of the container's runs goes to a cassette there (secrets cut)."""
    replay_from: str | None = None
    """A cassette file or directory: the chat answers from it, with no gateway (``adapters.ReplayChat``)."""
    fallbacks: tuple[FallbackTarget, ...] = ()
    """Targets a request goes to, in order, when the gateway fails it (docs/failover-and-rate-limits.md);
    env ``AGENT_FALLBACKS`` as a JSON list."""
    requests_per_minute: int | None = None
    """Requests this process sends per minute at most, across every run (a client-side limit)."""
    tokens_per_minute: int | None = None
    """Tokens (input estimated before a request goes, corrected from its usage) per minute at most."""

    def secrets(self) -> tuple[str, ...]:
        """Every secret these settings hold (the gateway's key, each fallback's, the state secret), for
        redaction."""
        keys = (self.api_key, *(t.api_key for t in self.fallbacks), self.state_secret)
        return tuple(key.reveal() for key in keys if key)

    def _check_fallbacks(self) -> None:
        names: set[str] = set()
        for number, target in enumerate(self.fallbacks):
            key = f"agent.fallbacks[{number}]"
            _check_base_url(target.base_url, key=f"{key}.base_url")
            if not target.model:
                raise ConfigurationError(f"{key}.model: expected a model name, got ''")
            if not target.api_key:
                raise ConfigurationError(f"{key}.api_key: not set; give api_key or api_key_env")
            for field in ("timeout_seconds", "deadline_seconds"):
                value = getattr(target, field)
                if value is not None and not (math.isfinite(value) and value > 0):
                    raise ConfigurationError(
                        f"{key}.{field}: expected a finite positive number, got {value!r}"
                    )
            if target.max_retries is not None and target.max_retries < 0:
                raise ConfigurationError(f"{key}.max_retries: expected 0 or more, got {target.max_retries!r}")
            name = target.name or fallback_name(number)
            if name in names or name == PRIMARY_TARGET:
                raise ConfigurationError(f"{key}.name: {name!r} names another target already")
            names.add(name)

    conversation_state: Literal["client", "server"] = "client"
    """``server``: the provider stores each response and a run's later requests send
    ``previous_response_id`` with only the new items; ``client`` sends the whole history every time."""
    prompt_cache_retention: str | None = None
    """Sent as ``prompt_cache_retention`` with every request of a run (OpenAI: ``in_memory`` or ``24h``)."""

    def __attrs_post_init__(self) -> None:
        for key in (
            "timeout_seconds",
            "deadline_seconds",
            "max_response_bytes",
            "max_output_items",
            "max_calls_per_response",
            "max_transcript_bytes",
            "max_tool_iterations",
            "max_consecutive_tool_errors",
            "transcript_warning_chars",
            "batch_concurrency",
            "batch_recovery_seconds",
            "chunk_chars",
            "chunk_concurrency",
        ):
            value = getattr(self, key)
            # NaN passes every comparison and inf means "no limit": neither is a usable limit.
            if not (math.isfinite(value) and value > 0):
                raise ConfigurationError(f"agent.{key}: expected a finite positive number, got {value!r}")
        if self.max_retries < 0:
            raise ConfigurationError(f"agent.max_retries: expected 0 or more, got {self.max_retries!r}")
        if self.max_output_retries < 0:
            raise ConfigurationError(
                f"agent.max_output_retries: expected 0 or more, got {self.max_output_retries!r}"
            )
        deadline = self.run_deadline_seconds
        if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
            raise ConfigurationError(
                f"agent.run_deadline_seconds: expected a finite positive number, got {deadline!r}"
            )
        if self.max_output_tokens is not None and self.max_output_tokens <= 0:
            raise ConfigurationError(
                f"agent.max_output_tokens: expected a finite positive number, got {self.max_output_tokens!r}"
            )
        if self.batch_requests_per_minute is not None and self.batch_requests_per_minute <= 0:
            raise ConfigurationError(
                "agent.batch_requests_per_minute: expected a positive number, "
                f"got {self.batch_requests_per_minute!r}"
            )
        for key in ("requests_per_minute", "tokens_per_minute"):
            limit = getattr(self, key)
            if limit is not None and limit <= 0:
                raise ConfigurationError(f"agent.{key}: expected a positive whole number, got {limit!r}")
        if self.base_url is not None:
            _check_base_url(self.base_url)
        if self.record_to is not None and self.replay_from is not None:
            raise ConfigurationError(
                "agent.record_to: set together with agent.replay_from; a replayed run sends nothing to record"
            )
        self._check_fallbacks()
        try:
            summary_language(self.summary_language)
        except ValueError as exc:
            raise ConfigurationError(f"agent.summary_language: {exc}") from None
        unknown = [name for name in self.approval_required_tools if name not in WORKFLOW_TOOLS]
        if unknown:
            raise ConfigurationError(
                f"agent.approval_required_tools: no workflow tool named {unknown[0]!r}; "
                f"the tools are {', '.join(WORKFLOW_TOOLS)}"
            )


PRIMARY_TARGET: Final = "primary"
"""The name of the ``agent`` section's own gateway and model among the failover targets."""


def fallback_name(number: int) -> str:
    """The name of ``agent.fallbacks[number]`` when it gives none: ``fallback-1`` for the first."""
    return f"fallback-{number + 1}"


def _check_base_url(url: str, *, key: str = "agent.base_url") -> None:
    """An http(s) URL with a host, or a ConfigurationError saying what arrived."""
    try:
        parts = urllib.parse.urlsplit(url)
        usable = parts.scheme in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018  # reading the port is what rejects a bad one
    except ValueError:
        usable = False
    if not usable:
        shown = url if len(url) <= _SHOWN_VALUE else url[:_SHOWN_VALUE] + "..."
        raise ConfigurationError(
            f"{key}: expected an http(s) URL with a host, e.g. http://127.0.0.1:4000/v1, got {shown!r}"
        )


@attrs.frozen
class Settings:
    """Everything the container needs, typed and validated."""

    agent: AgentSettings = AgentSettings()


def _build_converter() -> cattrs.Converter:
    converter = cattrs.Converter()
    converter.register_structure_hook(bool, lambda value, _: parse_bool(value))

    def structure_str(value: object, _: type) -> str:
        if not isinstance(value, str):
            raise TypeError("expected a string")
        return value

    def structure_secret(value: object, _: type) -> Secret:
        return value if isinstance(value, Secret) else Secret(structure_str(value, str))

    converter.register_structure_hook(str, structure_str)
    converter.register_structure_hook(Secret, structure_secret)

    def structure_int(value: object, _: type) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(f"expected a whole number, got {value!r}")
        return int(value)

    def structure_float(value: object, _: type) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"expected a number, got {value!r}")
        number = float(value)
        if not math.isfinite(number):
            # nan passes every comparison and inf reads as "no limit": no setting means either.
            raise ValueError(f"expected a finite number, got {value!r}")
        return number

    def structure_names(value: object, _: type) -> tuple[str, ...]:
        # From the environment a comma-separated string (empty for none); from a file a list.
        if isinstance(value, str):
            names = value.strip().removeprefix("[").removesuffix("]")
            return tuple(name.strip() for name in names.split(",") if name.strip())
        if not isinstance(value, list | tuple):
            raise TypeError("expected a list of names")
        return tuple(structure_str(name, str) for name in value)

    converter.register_structure_hook(int, structure_int)
    converter.register_structure_hook(float, structure_float)

    def structure_budget(value: object, _: type) -> RunBudget:
        if isinstance(value, RunBudget):
            return value
        if not isinstance(value, Mapping):
            raise _SectionError("agent.run_budget: expected a mapping of limits")
        limits = _structure_fields(
            "agent.run_budget",
            value,
            RunBudget,
            converter,
            lambda name, _: _BUDGET_EXPECTED.get(name, "a positive whole number"),
        )
        try:
            return RunBudget(**limits)
        except ValueError as exc:
            raise _SectionError(f"agent.{exc}") from None

    converter.register_structure_hook(RunBudget, structure_budget)
    converter.register_structure_hook_func(lambda tp: tp == tuple[str, ...], structure_names)
    return converter


_CONVERTER: Final = _build_converter()


def _field_type(name: str) -> Any:
    return typing.get_type_hints(AgentSettings)[name]


def _expected(name: str, exc: BaseException) -> str:
    """What a field accepts, as a short phrase for the one-line error."""
    field_type = _field_type(name)
    if exc.__class__ is ConfigurationError:
        return f"one of {_BOOL_SPELLINGS}"
    return _expected_of(field_type)


def _expected_of(field_type: Any) -> str:
    """What a field of ``field_type`` accepts, as a short phrase for the one-line error."""
    if field_type is bool or bool in typing.get_args(field_type):
        return f"one of {_BOOL_SPELLINGS}"
    literals = [
        value
        for arg in (field_type, *typing.get_args(field_type))
        if typing.get_origin(arg) is Literal
        for value in typing.get_args(arg)
    ]
    if literals:
        return "one of " + "/".join(str(value) for value in literals)
    if int in (field_type, *typing.get_args(field_type)):
        return "a whole number"
    if float in (field_type, *typing.get_args(field_type)):
        return "a finite number"
    if typing.get_origin(field_type) is tuple:
        return "a list of names"
    return "a string"


def _structure_fields(
    key: str,
    section: Mapping[Any, Any],
    cls: type[Any],
    converter: cattrs.Converter,
    expected: Callable[[str, BaseException], str],
    *,
    special: Mapping[str, Callable[[object], Any]] | None = None,
) -> dict[str, Any]:
    """The fields of ``cls`` that the mapping ``section`` (the settings at ``key``) gives, each structured
    (by ``special``'s function for its name, else by ``converter``); a None value leaves the default.

    Raises :class:`ConfigurationError` in one line naming ``key.name``: an unknown key with the closest
    known one and the list of them, or a value that does not structure with what the field accepts
    (``expected(name, error)``) and what was given (a secret as ``********``).
    """
    known = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for name, value in section.items():
        if name not in known:
            raise _SectionError(
                f"{key}.{name}: unknown key; {_did_you_mean(str(name), known)}"
                f"the known keys are {', '.join(sorted(known))}"
            )
        if value is None:
            continue
        structure = (special or {}).get(name)
        try:
            fields[name] = structure(value) if structure else converter.structure(value, known[name])
        except _SectionError:
            raise
        except Exception as exc:  # any structuring failure becomes the same one-line error
            shown = "********" if known[name] is Secret else repr(value)
            raise _SectionError(f"{key}.{name}: expected {expected(name, exc)}, got {shown}") from None
    return fields


def _did_you_mean(name: str, known: typing.Iterable[str], prefix: str = "") -> str:
    """``did you mean <the closest known name>? `` when one is close, compared without ``prefix``."""
    names = {candidate.removeprefix(prefix): candidate for candidate in known}
    close = difflib.get_close_matches(name.removeprefix(prefix), list(names), n=1, cutoff=0.6)
    return f"did you mean {names[close[0]]}? " if close else ""


def _fallback(number: int, value: object, environ: Mapping[str, str]) -> FallbackTarget:
    """``agent.fallbacks[number]`` from a mapping, its ``api_key_env`` read from ``environ``."""
    if isinstance(value, FallbackTarget):
        return value
    key = f"agent.fallbacks[{number}]"
    if not isinstance(value, Mapping):
        raise _SectionError(f"{key}: expected a mapping with base_url, model and api_key or api_key_env")
    hints = typing.get_type_hints(FallbackTarget)
    fields = _structure_fields(
        key, value, FallbackTarget, _CONVERTER, lambda name, _: _expected_of(hints[name])
    )
    for required in ("base_url", "model"):
        if required not in fields:
            raise _SectionError(f"{key}.{required}: not set")
    variable = fields.get("api_key_env")
    if variable is not None:
        if fields.get("api_key"):
            raise _SectionError(f"{key}: set api_key or api_key_env, not both")
        if not environ.get(variable):
            raise _SectionError(f"{key}.api_key_env: the environment variable {variable} is not set")
        fields["api_key"] = Secret(environ[variable])
    return FallbackTarget(**fields)


def _fallbacks(value: object, environ: Mapping[str, str]) -> tuple[FallbackTarget, ...]:
    """``agent.fallbacks``: a list of targets (from the environment, that list as JSON)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError:
            raise _SectionError("agent.fallbacks: expected a JSON list of targets") from None
    if not isinstance(value, list | tuple):
        raise _SectionError("agent.fallbacks: expected a list of targets")
    return tuple(_fallback(number, target, environ) for number, target in enumerate(value))


def _structure_agent(section: Mapping[str, Any], environ: Mapping[str, str]) -> AgentSettings:
    values = _structure_fields(
        "agent",
        section,
        AgentSettings,
        _CONVERTER,
        _expected,
        special={"fallbacks": lambda value: _fallbacks(value, environ)},
    )
    return AgentSettings(**values)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def _section_class(field_type: Any) -> type[Any] | None:
    """The attrs class a field holds (``RunBudget`` for ``RunBudget | None``), if it holds one; a
    tuple of them (``agent.fallbacks``) is a list, not a section."""
    if typing.get_origin(field_type) is tuple:
        return None
    for candidate in (field_type, *typing.get_args(field_type)):
        if isinstance(candidate, type) and attrs.has(candidate):
            return candidate
    return None


def _variables(cls: type[Any], prefix: str, path: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    names: dict[str, tuple[str, ...]] = {}
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        key = field.alias or field.name
        nested = _section_class(hints[field.name])
        if nested is not None and nested is not Secret:
            names |= _variables(nested, f"{prefix}{key.upper()}{ENV_NESTING}", (*path, key))
        else:
            names[prefix + key.upper()] = (*path, key)
    return names


def environment_variables(section: type[Any] = AgentSettings) -> dict[str, tuple[str, ...]]:
    """Every ``AGENT_*`` variable the settings read, with the key path it sets (``("base_url",)``).

    Derived from the ``agent`` section's class itself: a new field is a new variable, and a field
    holding an attrs class is a section whose keys are ``AGENT_<FIELD>__<KEY>`` (so
    ``agent.run_budget.cost_usd`` is ``AGENT_RUN_BUDGET__COST_USD``).
    """
    return _variables(section, ENV_PREFIX, ())


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    known = environment_variables()
    section: dict[str, Any] = {}
    for variable in sorted(name for name in environ if name.startswith(ENV_PREFIX)):
        path = known.get(variable)
        if path is None:
            # AGENT_ belongs to this package: a misspelt variable would otherwise be silently ignored.
            raise ConfigurationError(
                f"{variable}: unknown environment variable; {_did_you_mean(variable, known, ENV_PREFIX)}"
                f"the known ones are {', '.join(sorted(known))}"
            )
        *sections, key = path
        place = section
        for name in sections:
            place = place.setdefault(name, {})
        place[key] = environ[variable]
    return {"agent": section} if section else {}


def resolve_settings(
    config: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Defaults, then ``config`` (file or ``from_dict``), then ``AGENT_*`` variables, then ``overrides``.

    Raises :class:`ConfigurationError` with one line naming the first bad key.
    """
    layers: dict[str, Any] = {}
    for layer in (
        config or {},
        _from_environment(environ if environ is not None else os.environ),
        overrides or {},
    ):
        layers = _merge(layers, layer)
    unknown = sorted(set(layers) - {"agent"})
    if unknown:
        raise ConfigurationError(f"{unknown[0]}: unknown section; the known section is agent")
    section = layers.get("agent") or {}
    if not isinstance(section, Mapping):
        raise ConfigurationError("agent: expected a mapping of settings")
    return Settings(agent=_structure_agent(section, environ if environ is not None else os.environ))


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML (.yaml, .yml) or TOML (.toml) config file into a mapping."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"config file {str(path)!r}: cannot be read ({exc.strerror})") from None
    # Each parser is imported only for a file that needs it: most runs read no config file.
    parse: Callable[[str], object]
    refused: type[Exception]
    if path.suffix == ".toml":
        import tomllib

        parse, refused = tomllib.loads, tomllib.TOMLDecodeError
    elif path.suffix in (".yaml", ".yml"):
        import yaml

        parse, refused = yaml.safe_load, yaml.YAMLError
    else:
        raise ConfigurationError(f"config file {str(path)!r}: expected a .yaml, .yml or .toml file")
    try:
        data = parse(text)
    except refused as exc:
        # The parser's own message may quote the offending line (an API key, say): say only where it is.
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else getattr(exc, "lineno", None)
        where = f" at line {line}" if line else ""
        raise ConfigurationError(
            f"config file {str(path)!r}: not valid {path.suffix[1:].upper()}{where}"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigurationError(f"config file {str(path)!r}: expected a mapping at the top level")
    return data
