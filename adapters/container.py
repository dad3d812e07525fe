"""The composition root: one container wires configuration, transport, adapters and pipelines."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias, TypeVar

import attrs
import httpx
import openai
from dependency_injector import containers, providers

from adapters.closing import ClosedOnExit
from adapters.failover import FailoverChat, Target
from adapters.rate_limits import PacingHook, RateLimitedChat, RateLimiter
from adapters.redaction import Redactor
from adapters.responses import ResponsesJsonAdapter, ResponsesSettings, ResponsesSseAdapter
from adapters.settings import (
    PRIMARY_TARGET,
    ConfigurationError,
    FallbackTarget,
    Settings,
    fallback_name,
    resolve_settings,
)
from adapters.telemetry import (
    AgentTracing,
    InstrumentedToolInvoker,
    Telemetry,
    instrument_chat,
    instrument_http_client,
)
from application import (
    Approver,
    ChunkSettings,
    LoopSettings,
    SummaryAgent,
    ToolInvokerDecorator,
    ToolLoop,
    WorkflowEditorAgent,
)
from domain import ChatOptions, ChatPort

__all__ = ["ChatDecorator", "Container", "chat_key", "telemetry_key"]

ChatDecorator: TypeAlias = Callable[[ChatPort], ChatPort]
"""Wraps a ``ChatPort`` in another (telemetry, caching, rate limits): see ``Container.chat_decorators``."""


@attrs.define
class _Closables:
    """What the container itself created and must therefore close; overriding objects belong to the caller."""

    closers: list[Callable[[], Any]] = attrs.field(factory=list)

    def add(self, closer: Callable[[], Any]) -> None:
        self.closers.append(closer)

    async def close_all(self) -> None:
        while self.closers:
            result = self.closers.pop()()
            if hasattr(result, "__await__"):
                await result


def chat_key(settings: Settings) -> str:
    """The ``chat`` selector's key: ``replay`` with ``agent.replay_from``, else ``streaming`` or ``json``
    from ``agent.use_streaming``."""
    if settings.agent.replay_from is not None:
        return "replay"
    return "streaming" if settings.agent.use_streaming else "json"


# The pool the container's client keeps. A gateway served by uvicorn (LiteLLM's proxy among them) closes
# a connection after 5 s idle, httpx's own keep-alive expiry: with equal limits a request can take a
# pooled connection in the instant the server closes it ("Server disconnected" before any answer). The
# client lets go after 4 s, so the server never closes first.
HTTP_LIMITS: Final = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=4.0)


def _recording_transport(settings: Settings) -> httpx.AsyncBaseTransport | None:
    """With ``agent.record_to``, the transport that writes each exchange to a cassette there."""
    agent = settings.agent
    if agent.record_to is None:
        return None
    from adapters.cassettes import Recorder

    headers = _responses_settings(settings).extra_headers.values()
    return Recorder(
        agent.record_to,
        httpx.AsyncHTTPTransport(limits=HTTP_LIMITS),
        secrets=[*agent.secrets(), *headers],
    )


def _build_http_client(
    settings: Settings, closables: _Closables, *, timeout_seconds: float | None = None
) -> httpx.AsyncClient:
    timeout = settings.agent.timeout_seconds if timeout_seconds is None else timeout_seconds
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
        limits=HTTP_LIMITS,
        transport=_recording_transport(settings),
        # A redirect would re-send the whole conversation to whatever origin the gateway names.
        follow_redirects=False,
    )
    closables.add(client.aclose)
    return client


def _build_openai_client(
    settings: Settings, http_client: httpx.AsyncClient, closables: _Closables
) -> openai.AsyncOpenAI:
    agent = settings.agent
    if not agent.base_url:
        raise ConfigurationError(
            "agent.base_url: not set; point it (env AGENT_BASE_URL) at a LiteLLM proxy, "
            "e.g. http://127.0.0.1:4000/v1, or use the CLI, which starts the offline endpoint"
        )
    if not agent.api_key:
        raise ConfigurationError("agent.api_key: not set (env AGENT_API_KEY); the gateway's key goes here")
    client = openai.AsyncOpenAI(
        api_key=agent.api_key.reveal(),
        base_url=agent.base_url,
        http_client=http_client,  # type: ignore[arg-type]  # the SDK accepts a legacy httpx client
        max_retries=agent.max_retries,
        timeout=agent.timeout_seconds,
    )
    closables.add(client.close)
    return client


_Section = TypeVar("_Section", ResponsesSettings, LoopSettings, ChunkSettings)


def _section(settings: Settings, section: type[_Section]) -> _Section:
    """The part of the ``agent`` settings that ``section`` holds, field for field by name.

    Each section declares only fields that ``AgentSettings`` has under the same name (or that are
    not configuration at all, which keep their defaults), so nothing is copied by hand.
    """
    agent = settings.agent
    names = attrs.fields_dict(type(agent)).keys() & attrs.fields_dict(section).keys()
    return section(**{name: getattr(agent, name) for name in names})


def _responses_settings(settings: Settings) -> ResponsesSettings:
    return _section(settings, ResponsesSettings)


def _replay_chat(
    settings: Settings, responses_settings: ResponsesSettings, closables: _Closables
) -> ChatPort:
    from adapters.cassettes import ReplayChat

    assert settings.agent.replay_from is not None  # chat_key names "replay" only then
    chat = ReplayChat(
        settings.agent.replay_from, settings=responses_settings, streaming=settings.agent.use_streaming
    )
    closables.add(chat.aclose)
    return chat


def _chat_chain(adapter: ChatPort, decorators: Sequence[ChatDecorator]) -> ChatPort:
    chat = adapter
    for decorate in decorators:
        chat = decorate(chat)
    return chat


def telemetry_key(settings: Settings) -> str:
    """The telemetry selectors' key: ``on`` or ``off``, from ``agent.telemetry``."""
    return "on" if settings.agent.telemetry else "off"


def _model(settings: Settings) -> str:
    return settings.agent.model


def _telemetry(
    settings: Settings,
    responses_settings: ResponsesSettings,
    tracer_provider: Any,
    meter_provider: Any,
) -> Telemetry:
    agent = settings.agent
    return Telemetry(
        capture_content=agent.telemetry_capture_content,
        redactor=Redactor([*agent.secrets(), *responses_settings.extra_headers.values()]),
        base_url=agent.base_url,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )


def _sdk_http_client(
    http_client: httpx.AsyncClient, settings: Settings, limiter: RateLimiter | None = None
) -> httpx.AsyncClient:
    # Each HTTP attempt of a traced request becomes an event on its span.
    client = instrument_http_client(http_client) if settings.agent.telemetry else http_client
    return client if limiter is None else _paced(client, limiter)


def _paced(client: httpx.AsyncClient, limiter: RateLimiter) -> httpx.AsyncClient:
    """``client`` whose answers' ``x-ratelimit-*`` headers pace ``limiter`` (the hook added once)."""
    hooks = client.event_hooks
    if not any(isinstance(hook, PacingHook) and hook.limiter is limiter for hook in hooks["response"]):
        client.event_hooks = {**hooks, "response": [*hooks["response"], PacingHook(limiter)]}
    return client


def _rate_limiter(settings: Settings) -> RateLimiter | None:
    """The container's one limiter, shared by every request of every run; None without limits."""
    agent = settings.agent
    if agent.requests_per_minute is None and agent.tokens_per_minute is None:
        return None
    return RateLimiter(agent.requests_per_minute, agent.tokens_per_minute)


def _fallback_target(
    number: int,
    fallback: FallbackTarget,
    settings: Settings,
    responses_settings: ResponsesSettings,
    limiter: RateLimiter | None,
    closables: _Closables,
) -> Target:
    """An adapter of its own for ``agent.fallbacks[number]``: its own HTTP and SDK clients (closed with
    the container), its model and key, and none of the primary's extra headers (a gateway's headers can
    be its credentials)."""
    agent = settings.agent
    http_client = _sdk_http_client(
        _build_http_client(settings, closables, timeout_seconds=fallback.timeout_seconds), settings, limiter
    )
    timeout = agent.timeout_seconds if fallback.timeout_seconds is None else fallback.timeout_seconds
    client = openai.AsyncOpenAI(
        api_key=fallback.api_key.reveal(),
        base_url=fallback.base_url,
        http_client=http_client,  # type: ignore[arg-type]  # the SDK accepts a legacy httpx client (see README)
        max_retries=agent.max_retries if fallback.max_retries is None else fallback.max_retries,
        timeout=timeout,
    )
    closables.add(client.close)
    target_settings = attrs.evolve(
        responses_settings,
        model=fallback.model,
        deadline_seconds=fallback.deadline_seconds or responses_settings.deadline_seconds,
        extra_headers={},
    )
    streaming = agent.use_streaming if fallback.use_streaming is None else fallback.use_streaming
    adapter = (ResponsesSseAdapter if streaming else ResponsesJsonAdapter)(client, target_settings)
    return Target(
        fallback.name or fallback_name(number),
        adapter,
        fallback.model,
        base_url=fallback.base_url,
        deadline_seconds=fallback.deadline_seconds,
    )


def _fallback_targets(
    settings: Settings,
    responses_settings: ResponsesSettings,
    limiter: RateLimiter | None,
    closables: _Closables,
) -> tuple[Target, ...]:
    return tuple(
        _fallback_target(number, fallback, settings, responses_settings, limiter, closables)
        for number, fallback in enumerate(settings.agent.fallbacks)
    )


def _resilient_chat(
    adapter: ChatPort, settings: Settings, fallbacks: Sequence[Target], limiter: RateLimiter | None
) -> ChatPort:
    """``adapter`` with failover to ``agent.fallbacks`` and, outside it, the shared rate limit: a
    request waits for its turn once, whichever target then answers it."""
    agent = settings.agent
    chat = adapter
    if fallbacks:
        primary = Target(PRIMARY_TARGET, adapter, agent.model, base_url=agent.base_url)
        chat = FailoverChat(
            (primary, *fallbacks), deadline_seconds=agent.deadline_seconds, redactor=Redactor(agent.secrets())
        )
    if limiter is not None:
        chat = RateLimitedChat(
            chat, limiter, deadline_seconds=agent.deadline_seconds, max_output_tokens=agent.max_output_tokens
        )
    return chat


def _traced_chat(chat: ChatPort, telemetry: Telemetry | None, model: str) -> ChatPort:
    return chat if telemetry is None else instrument_chat(chat, telemetry, model=model)


def _traced_tool_decorators(
    decorators: Sequence[ToolInvokerDecorator], telemetry: Telemetry | None
) -> list[ToolInvokerDecorator]:
    if telemetry is None:
        return list(decorators)
    # Outermost, so that its spans see every answer, the host decorators' own refusals included.
    return [*decorators, InstrumentedToolInvoker.decorator(telemetry)]


_Pipeline = TypeVar("_Pipeline", SummaryAgent, WorkflowEditorAgent)


def _pipeline(
    pipeline_type: type[_Pipeline],
    *,
    chat: ChatPort,
    settings: LoopSettings,
    decorators: Sequence[ToolInvokerDecorator],
    telemetry: Telemetry | None,
    model: str,
    options: ChatOptions | None = None,
    **pipeline: Any,
) -> _Pipeline:
    """A pipeline of ``pipeline_type``, its runs traced when there is ``telemetry``; ``pipeline`` holds
    the pipeline's own arguments."""
    # A run's model is the one its options ask for, when they name one.
    run_model = options.model if options is not None and options.model else model
    hooks = AgentTracing(telemetry, run_model) if telemetry is not None else None
    return pipeline_type(chat, settings, options=options, decorators=decorators, hooks=hooks, **pipeline)


def _loop_settings(settings: Settings, responses_settings: ResponsesSettings | None = None) -> LoopSettings:
    # The secrets the adapters cut from errors, cut from a failed run's ToolRunError.run too.
    headers = responses_settings.extra_headers.values() if responses_settings is not None else ()
    redactor = Redactor([*settings.agent.secrets(), *headers])
    return attrs.evolve(_section(settings, LoopSettings), redact=redactor.redact)


def _chunk_settings(settings: Settings) -> ChunkSettings:
    return _section(settings, ChunkSettings)


def _summary_language(settings: Settings) -> str:
    return settings.agent.summary_language


def _approval_required_tools(settings: Settings) -> tuple[str, ...]:
    return settings.agent.approval_required_tools


class _Lifecycle(ClosedOnExit):
    """``aclose()`` and ``async with`` for a container: closes the clients it created, then forgets them."""

    closables: providers.Provider[_Closables]

    async def aclose(self) -> None:
        await self.closables().close_all()
        self.reset_singletons()  # type: ignore[attr-defined]  # provided by the container base class


class _ContainerInstance(_Lifecycle, containers.DynamicContainer):
    """The runtime type of ``Container()``: a dynamic container with the lifecycle methods."""


class Container(_Lifecycle, containers.DeclarativeContainer):
    """Builds everything the host application uses from configuration.

    ``config`` takes ``from_dict``/``from_yaml``; ``AGENT_*`` environment variables are applied over it
    (``environ`` can be overridden in tests) and ``overrides`` over those (the CLI's flags). Close with
    ``await container.aclose()`` or ``async with Container() as container``.

    Two chains, each a list of decorators a host extends; in both the first decorator is innermost
    and the last outermost:

    - ``chat`` is ``chat_adapter`` (the Responses adapter ``agent.use_streaming`` selects) wrapped by
      each callable of ``chat_decorators`` (``ChatPort -> ChatPort``), and by the telemetry decorator
      outermost when telemetry is on. Every pipeline, ``tool_loop`` and a host's own calls talk to
      the model through it. A decorator's ``get_streaming_response`` should
      delegate to the inner chat's, or run events (``summarize_events``, ``run_events``) get each
      answer whole (``domain.updates_of(lambda: self.get_response(...))`` streams it so).
    - ``tool_invoker_decorators`` (``ToolInvokerPort -> ToolInvokerPort``) wrap the tools of every
      run of ``tool_loop`` and of both pipelines, outside the guard, which the loop applies itself
      around the tools it is handed: no decorator can remove it, and each sees every call the guard
      sees, refused ones included.

    Extend a chain with ``container.chat_decorators.add_args(decorator)`` (for the container's
    lifetime) or, in tests, ``with container.tool_invoker_decorators.override(providers.List(...))``
    (this replaces the list). Overriding ``chat_adapter`` swaps the model and keeps the decorators
    and the telemetry; overriding ``chat`` swaps the whole chain, telemetry included. ``await
    container.tool_loop().run(messages, options, tools)`` runs a host's own tools (an
    :class:`application.ToolRegistry`, say) through the same chains and guard as the pipelines and
    returns an :class:`application.ToolRun`.

    Approval: ``approver`` (default none) is an async callable ``ApprovalRequest -> Approve | Deny``
    that ``tool_loop`` and ``workflow_editor_agent`` ask about each call needing approval, instead of
    stopping the run (``status == "awaiting_approval"``, then ``resume``). The workflow editor's
    tools that need it are ``agent.approval_required_tools`` (default ``["remove_step"]``).

    Telemetry (``agent.telemetry``, on by default): ``chat`` and ``traced_tool_invoker_decorators``
    (what ``summary_agent``, ``workflow_editor_agent`` and ``tool_loop`` run their tools with) have
    the OpenTelemetry decorators outermost, and the pipelines are built with ``AgentTracing`` as their hooks
    (one ``invoke_agent`` span per run). Spans and metrics go to the global providers unless
    ``tracer_provider``/``meter_provider`` are overridden; content is captured only with
    ``agent.telemetry_capture_content``. With telemetry off, nothing is added anywhere.
    """

    instance_type = _ContainerInstance

    # Configuration
    config = providers.Configuration(name="config")
    environ = providers.Object(os.environ)
    overrides: providers.Object[dict[str, Any]] = providers.Object({})
    settings = providers.Singleton(resolve_settings, config=config, environ=environ, overrides=overrides)

    # Transport
    closables = providers.Singleton(_Closables)
    http_client = providers.Singleton(_build_http_client, settings=settings, closables=closables)
    # Telemetry (agent.telemetry): the global OpenTelemetry providers unless these are overridden.
    tracer_provider: providers.Object[Any] = providers.Object(None)
    meter_provider: providers.Object[Any] = providers.Object(None)
    # Failover and rate limits (agent.fallbacks, agent.requests_per_minute, agent.tokens_per_minute):
    # one limiter for every run of the container, paced by the gateways' x-ratelimit-* headers.
    rate_limiter = providers.Singleton(_rate_limiter, settings)
    sdk_http_client = providers.Callable(_sdk_http_client, http_client, settings, rate_limiter)
    openai_client = providers.Singleton(
        _build_openai_client, settings=settings, http_client=sdk_http_client, closables=closables
    )

    # Adapters
    responses_settings = providers.Callable(_responses_settings, settings)
    # None when agent.telemetry is off: then nothing below adds any instrumentation.
    telemetry = providers.Selector(
        providers.Callable(telemetry_key, settings),
        on=providers.Singleton(_telemetry, settings, responses_settings, tracer_provider, meter_provider),
        off=providers.Object(None),
    )
    chat_adapter = providers.Selector(
        providers.Callable(chat_key, settings),
        streaming=providers.Singleton(ResponsesSseAdapter, openai_client, responses_settings),
        json=providers.Singleton(ResponsesJsonAdapter, openai_client, responses_settings),
        # agent.replay_from: answers from a cassette through the same adapters, with no gateway.
        replay=providers.Singleton(_replay_chat, settings, responses_settings, closables),
    )

    fallback_targets = providers.Singleton(
        _fallback_targets, settings, responses_settings, rate_limiter, closables
    )

    # Chains
    chat_decorators = providers.List()
    tool_invoker_decorators = providers.List()
    # The chat: the adapter, the host's decorators, and telemetry outermost when it is on. Everything
    # talks through it (the pipelines, tool_loop, a host's direct calls), so every request is traced.
    model = providers.Callable(_model, settings)
    resilient_chat = providers.Callable(
        _resilient_chat, chat_adapter, settings, fallback_targets, rate_limiter
    )
    chat = providers.Callable(
        _traced_chat, providers.Callable(_chat_chain, resilient_chat, chat_decorators), telemetry, model
    )
    traced_tool_invoker_decorators = providers.Callable(
        _traced_tool_decorators, tool_invoker_decorators, telemetry
    )

    # Approval: None, or an async callable ApprovalRequest -> Approve | Deny asked instead of pausing.
    approver: providers.Object[Approver | None] = providers.Object(None)

    # Pipelines
    loop_settings = providers.Callable(_loop_settings, settings, responses_settings)
    tool_loop = providers.Factory(
        ToolLoop,
        chat=chat,
        settings=loop_settings,
        decorators=traced_tool_invoker_decorators,
        approver=approver,
    )
    chunk_settings = providers.Callable(_chunk_settings, settings)
    # Both pipelines run over the same chat, loop settings, tool decorators and telemetry.
    pipeline = providers.Factory(
        _pipeline,
        chat=chat,
        settings=loop_settings,
        decorators=traced_tool_invoker_decorators,
        telemetry=telemetry,
        model=model,
    )
    summary_agent: providers.Factory[SummaryAgent] = providers.Factory(
        pipeline,
        SummaryAgent,
        chunking=chunk_settings,
        language=providers.Callable(_summary_language, settings),
    )
    workflow_editor_agent: providers.Factory[WorkflowEditorAgent] = providers.Factory(
        pipeline,
        WorkflowEditorAgent,
        approver=approver,
        approval_required_tools=providers.Callable(_approval_required_tools, settings),
    )
