"""The function-invocation loop: ask the model, run its tool calls through the guard, repeat."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeAlias, runtime_checkable

import attrs

from application.runs.budget import Ledger, RunBudget, Spending, StopReason
from application.runs.conversation import CONVERSATION_STATES, Conversation, ConversationState, run_id_for
from application.runs.events import (
    ApprovalRequested,
    RoundFinished,
    RoundStarted,
    RunEvent,
    RunFinished,
    TextDelta,
    ToolCallFinished,
)
from application.runs.held import HeldAnswer, needs_approval, waiting
from application.runs.output import (
    Fitted,
    Misfit,
    OutputRefusedError,
    OutputValidationError,
    RunOutput,
    output_spec,
)
from application.runs.run import RunState, ToolCallRecord, ToolRun, ToolRunError
from application.scrubbing import scrubbed
from application.tools.approval import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRequest,
    Approve,
    Approver,
    DecidedCalls,
    Decisions,
    Deny,
    checked_decisions,
)
from application.tools.guard import GuardedToolInvoker, parsed
from application.tools.registry import BUDGET_EXCEEDED, DUPLICATE_CALL_ID, error_result
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatPort,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    RateLimitedError,
    ToolInvokerPort,
)

__all__ = ["AnsweredByLoop", "LoopSettings", "ToolInvokerDecorator", "ToolLoop"]

ToolInvokerDecorator: TypeAlias = Callable[[ToolInvokerPort], ToolInvokerPort]
"""Wraps a tool invoker in another (telemetry, approval, rate limits): see :class:`ToolLoop`."""


@runtime_checkable
class AnsweredByLoop(Protocol):
    """A link of the tool chain told of each call the loop answers without the chain.

    The loop answers two kinds of call itself, and they never reach the chain: a repeated call id
    (``duplicate_call_id``) and a call a budget or deadline stop leaves unrun (``budget_exceeded``).
    An invoker a decorator returns that has this method hears of each, as it is answered, in the
    run's context: a telemetry decorator gives it the tool span every answered call has, whether the
    loop runs inside a pipeline or on its own. What it raises ends the run.
    """

    def answered_by_loop(self, call: FunctionCallContent, result: FunctionResultContent) -> None: ...


@attrs.frozen
class LoopSettings:
    """Limits of one run, with the defaults of Microsoft.Extensions.AI's function invoker.

    After ``max_tool_iterations`` rounds of tool calls, one last request is sent without tools. After
    ``max_consecutive_tool_errors`` rounds in a row in which some call answered with an error (invalid
    arguments included), tools are no longer offered and the model answers as it can.
    ``concurrent_tool_calls`` runs the calls of one response concurrently; results keep call order.
    ``detailed_tool_errors`` adds exception type and text to ``tool_failed`` results (for debugging only).

    ``run_budget`` and ``run_deadline_seconds`` bound a whole run (see :mod:`application.runs.budget`): a
    limit the next request or tool call would pass ends the run with what it has and its
    ``stop_reason``. ``max_output_tokens`` is the output cap the chat applies to a request that sets
    none (``agent.max_output_tokens``): what a request can at most add to the run's output tokens.

    An answer with more than ``max_calls_per_response`` calls runs none of them: the run ends there
    (``too_many_calls``), the answer kept, each call answered ``budget_exceeded``. So a model that
    calls thousands of tools in one answer spends nothing on them, and the run never builds a
    follow-up request larger than the provider takes.
    """

    max_tool_iterations: int = attrs.field(default=40, validator=attrs.validators.ge(1))
    max_consecutive_tool_errors: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    concurrent_tool_calls: bool = True
    detailed_tool_errors: bool = False
    run_budget: RunBudget = attrs.Factory(RunBudget)
    run_deadline_seconds: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.gt(0))
    )
    max_output_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    max_calls_per_response: int = attrs.field(default=128, validator=attrs.validators.ge(1))
    redact: Callable[[str], str] | None = attrs.field(default=None, eq=False, repr=False)
    """Cuts secrets out of a text (the container's: the API key, header values): a failed run's
    :class:`ToolRunError` carries the run with every string in it passed through it."""
    max_output_retries: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    """How many more turns a final answer that does not fit the run's ``output_type`` gets (see
    :mod:`application.runs.output`)."""
    conversation_state: ConversationState = attrs.field(
        default="client", validator=attrs.validators.in_(CONVERSATION_STATES)
    )
    """``server``: the provider stores each response and a request sends only what is new since the
    last one (see :mod:`application.runs.conversation`); ``client`` sends the whole history each time."""
    prompt_cache_retention: str | None = None
    """Sent as ``prompt_cache_retention`` with every request (``"24h"`` keeps cached prefixes longer)."""


class ToolLoop:
    """Runs a conversation to a final answer, answering every tool call through the guard.

    Each round appends the model's output exactly as the ``ChatPort`` returned it (so function
    calls keep their raw argument strings) and one ``tool`` message with one result per call, in
    call order. A call id runs at most once per run: a call whose id was already answered (earlier
    in the same response or in an earlier round) gets a ``duplicate_call_id`` error result and
    never reaches the invoker chain (a link that is an :class:`AnsweredByLoop` hears of it, as of
    a call a budget stop leaves unrun). The first request of a run goes with initiator ``user``, every
    later one with ``agent``. When a request fails, the run raises a :class:`ToolRunError` of the
    adapter error's class, carrying the run so far and chained from the adapter's error.

    The invoker chain: hand :meth:`run` the raw tools (a :class:`ToolRegistry` or any
    ``ToolInvokerPort``); each run builds ``decorators[-1](... decorators[0](GuardedToolInvoker(tools)))``
    itself. The guard is therefore always there, exactly once, directly around the tools, and every
    decorator (the first innermost, the last outermost) sees every call the guard sees, refused ones
    included. A decorator is any ``Callable[[ToolInvokerPort], ToolInvokerPort]``; it is applied
    once per run, so it may keep per-run state. What a decorator raises ends the run.

    :meth:`run_events` is the same run reported as it goes (see :mod:`application.runs.events`); both
    share one core, so a run's :class:`ToolRun` is the same whichever way it was asked for.

    What each request sends is :class:`application.runs.conversation.Conversation`'s to say: the whole
    history, or (``conversation_state="server"``) what is new since the last stored answer, always with
    the run's own ``prompt_cache_key``. A typed final answer (``output_type``) is
    :class:`application.runs.output.RunOutput`'s to ask for and to read.

    Approval: when the tools handed in implement ``needs_approval(call)`` (an
    :class:`application.ApprovalPolicy`, as :class:`ToolRegistry` does) and an answer calls a tool
    that needs it, no call of that answer runs before every such call is decided. The guard still
    answers the answer's malformed calls first (they need no approval), and a repeated call id is
    still ``duplicate_call_id``. With an ``approver``, the loop asks it for each held call, in call
    order, then goes on. Without one, the run stops: its :class:`ToolRun` has ``status ==
    "awaiting_approval"``, ``pending`` and ``state``, and :meth:`resume` goes on from that state as
    if the run had never stopped. Approved calls run through the chain; a denied call goes through
    it too (so decorators see it) but is answered ``approval_denied`` under the guard, never
    reaching the tools. What an approver raises ends the run.
    """

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        decorators: Sequence[ToolInvokerDecorator] = (),
        *,
        approver: Approver | None = None,
    ) -> None:
        self._chat = chat
        self._settings = settings or LoopSettings()
        self._decorators = tuple(decorators)
        self._approver = approver

    @property
    def settings(self) -> LoopSettings:
        return self._settings

    async def run(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        invoker: ToolInvokerPort,
        *,
        ledger: Ledger | None = None,
        output_type: object = None,
    ) -> ToolRun:
        """Send ``messages`` with ``options`` and keep going while the model calls tools.

        ``invoker`` runs the tools; the loop puts the guard and its decorators around it. Each
        request asks for a whole answer (``get_response``). ``ledger`` shares one budget and
        deadline with other runs (a long meeting's chunks); by default the run has its own, from
        the settings.

        ``output_type`` (an attrs class, or any type :func:`application.output_schema` describes)
        asks for a typed final answer: each request carries the type's strict JSON schema as
        ``text.format``, and the run's ``output`` is the final answer structured into it. A final
        answer that does not fit gets ``max_output_retries`` more turns, told what was wrong, then
        raises :class:`OutputValidationError`; a refusal raises :class:`OutputRefusedError`. Where
        the route answers 400 to ``text.format``, the run asks again once with the schema in its
        instructions (``output_mode == "prompted"``).
        """
        return await self._whole(self._start(messages, options, invoker, ledger, output_type))

    async def run_events(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        invoker: ToolInvokerPort,
        *,
        ledger: Ledger | None = None,
        output_type: object = None,
    ) -> AsyncGenerator[RunEvent[ToolRun], None]:
        """The run of :meth:`run` as events, ending with ``RunFinished(result)``, ``result`` its ``ToolRun``.

        Each request streams its answer (``get_streaming_response``), so ``TextDelta`` pieces come as
        they arrive (a chat that only has whole answers gives each text part of an answer as one
        piece). Calls are reported as they are answered (under concurrent invocation, in the
        order they finish). Leaving the iteration early (``aclose()``, or cancelling the task) closes
        the model's stream, cancels the calls in flight and starts no other tool. With
        ``output_type``, ``RunFinished``'s run holds the typed ``output``.
        """
        async with contextlib.aclosing(
            self._events(self._start(messages, options, invoker, ledger, output_type))
        ) as events:
            async for event in events:
                yield event

    async def resume(
        self, state: RunState, decisions: Decisions, invoker: ToolInvokerPort, *, output_type: object = None
    ) -> ToolRun:
        """Go on with a run that stopped for approval, as if it had never stopped; a new ``ToolRun``.

        What waits is derived again from the held answer (the last of ``state.responses``): its own
        calls that ``invoker``'s approval policy holds back, asked again for each call; ``state.pending``
        is only checked against them (same call ids, tools and raw arguments). A state whose parts do
        not agree with its held answer raises ``ValueError`` before anything runs. ``decisions`` holds
        one :class:`Approve` or :class:`Deny` per such call id; a missing, unknown or repeated id
        raises ``ValueError`` before anything runs. ``invoker`` runs the tools,
        as in :meth:`run`, and ``output_type`` is the run's typed answer, as the run was started with.
        ``state`` is left as it was: a host keeps the state it resumed from as
        spent, since resuming it again would run the approved calls again.
        """
        return await self._whole(self._resumed(state, decisions, invoker, output_type))

    def resume_events(
        self, state: RunState, decisions: Decisions, invoker: ToolInvokerPort, *, output_type: object = None
    ) -> AsyncGenerator[RunEvent[ToolRun], None]:
        """:meth:`resume` as events, as :meth:`run_events` reports a run; the decisions are checked
        (``ValueError``) at once, before the first event is asked for."""
        return self._events(self._resumed(state, decisions, invoker, output_type))

    @staticmethod
    def waiting(state: RunState, invoker: ToolInvokerPort) -> tuple[ApprovalRequest, ...]:
        """The calls :meth:`resume` would ask a decision on, with ``invoker``'s approval policy: the held
        answer's own calls it holds back, each built from the call that runs once approved (show a
        person these). Raises ``ValueError`` for a state whose parts, ``pending`` included, do not
        agree with its held answer, as :meth:`resume` does."""
        return waiting(state, invoker if isinstance(invoker, ApprovalPolicy) else None)[1]

    @staticmethod
    async def _whole(run: _Run) -> ToolRun:
        try:
            async with contextlib.aclosing(run.rounds(stream=False)) as rounds:
                async for _ in rounds:
                    pass
        finally:
            run.spending.settle()
        return run.result()

    async def _events(self, run: _Run) -> AsyncGenerator[RunEvent[ToolRun], None]:
        try:
            async with contextlib.aclosing(run.rounds(stream=True)) as rounds:
                async for event in rounds:
                    yield event
        finally:
            run.spending.settle()
        yield RunFinished(run.result())

    def _start(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None,
        invoker: ToolInvokerPort,
        ledger: Ledger | None = None,
        output_type: object = None,
    ) -> _Run:
        decided = DecidedCalls(invoker)
        guard = GuardedToolInvoker(decided)
        chain: ToolInvokerPort = guard
        observers: list[AnsweredByLoop] = []
        for decorate in self._decorators:
            chain = decorate(chain)
            if isinstance(chain, AnsweredByLoop):
                observers.append(chain)
        policy = invoker if isinstance(invoker, ApprovalPolicy) else None
        run = _Run(
            self._chat,
            self._settings,
            _Chain(guard, decided, chain, policy, tuple(observers)),
            tuple(messages),
            options or ChatOptions(),
            self._approver,
            None
            if output_type is None
            else RunOutput(output_spec(output_type), self._settings.max_output_retries),
        )
        if ledger is not None:
            run.spending = Spending(ledger)
        return run

    def _resumed(
        self, state: RunState, decisions: Decisions, invoker: ToolInvokerPort, output_type: object = None
    ) -> _Run:
        run = self._start(state.messages, state.options, invoker, output_type=output_type)
        # What waits is the held answer's own calls that the policy holds back, asked again now;
        # the state's pending is only checked against them.
        held, requests = waiting(state, run.chain.policy)
        decided = checked_decisions((request.call_id for request in requests), decisions)
        run.restore(state, held, decided)
        return run


@attrs.frozen
class _Chain:
    """One run's tool chain: the guard, the denials under it, the whole chain, the approval policy,
    and the links that hear of the calls the loop answers itself (innermost first)."""

    guard: GuardedToolInvoker
    decided: DecidedCalls
    invoke: ToolInvokerPort
    policy: ApprovalPolicy | None
    observers: tuple[AnsweredByLoop, ...] = ()


@attrs.define
class _Round:
    """The model's answer being answered: per call position, the records made so far and the calls left."""

    response: ChatResponse
    calls: tuple[FunctionCallContent, ...]
    answered: dict[int, ToolCallRecord]
    left: dict[int, FunctionCallContent]


@attrs.define(eq=False)
class _Run:
    """The state of one run, and the rounds that advance it."""

    chat: ChatPort
    settings: LoopSettings
    chain: _Chain
    messages: tuple[ChatMessage, ...]
    options: ChatOptions
    approver: Approver | None
    output: RunOutput | None = None
    """The typed answer asked for; ``value`` is the final answer read into it."""
    value: object = attrs.field(init=False, default=None)
    produced: list[ChatMessage] = attrs.field(init=False, factory=list)
    responses: list[ChatResponse] = attrs.field(init=False, factory=list)
    records: list[ToolCallRecord] = attrs.field(init=False, factory=list)
    answered: set[str] = attrs.field(init=False, factory=set)
    iterations: int = attrs.field(init=False, default=0)
    consecutive_errors: int = attrs.field(init=False, default=0)
    stop_reason: StopReason | None = attrs.field(init=False, default=None)
    state: RunState | None = attrs.field(init=False, default=None)
    """Set when the run stops for approval; the run is then over."""
    resuming: _Round | None = attrs.field(init=False, default=None)
    """A resumed run's held answer, finished before the next request."""
    offer_tools: bool = attrs.field(init=False)
    spending: Spending = attrs.field(init=False)
    run_id: str = attrs.field(init=False)
    """The run's id: its requests' prompt cache key."""
    conversation: Conversation = attrs.field(init=False)
    """What each request sends."""

    def __attrs_post_init__(self) -> None:
        settings = self.settings
        self.offer_tools = bool(self.options.tools)
        self.spending = Spending.start(settings.run_budget, settings.run_deadline_seconds)
        self.run_id = run_id_for(self.messages, self.options)
        self.conversation = Conversation(
            settings.conversation_state, self.run_id, settings.prompt_cache_retention
        )

    def restore(self, state: RunState, held: HeldAnswer, decisions: Mapping[str, ApprovalDecision]) -> None:
        """Take up ``state``'s run where it stopped, its ``held`` answer decided by ``decisions``.

        The budget counts what the run spent before it stopped; its deadline counts the time the run
        worked, not the time it waited: what was left at the pause is left again now.
        """
        self.produced = list(state.produced)
        self.responses = list(state.responses)
        self.records = list(state.tool_calls)
        self.answered = set(state.answered)
        self.iterations = state.iterations
        self.consecutive_errors = state.consecutive_errors
        self.stop_reason = state.stop_reason
        self.spending = _spent(self.settings, state)
        if state.run_id is not None:
            self.run_id = self.conversation.cache_key = state.run_id
        # A server-side conversation goes on from the held answer, the last one the provider stored.
        self.conversation.answered(state.responses[-1], len(state.messages) + len(state.produced))
        if self.output is not None and state.output_mode is not None:
            self.output.mode = state.output_mode
            self.output.retries = state.output_retries
        # Only the calls the budget admitted are the held answer's; the rest were never answered.
        self.resuming = _Round(held.response, held.calls, dict(held.answered), dict(held.left))
        self._decide(decisions)

    def result(self) -> ToolRun:
        records = tuple(self.records)
        if self.state is not None:
            records += tuple(record for record in self.state.held if record is not None)
        return ToolRun(
            tuple(self.produced),
            tuple(self.responses),
            records,
            self.iterations,
            stop_reason=self.stop_reason,
            state=self.state,
            output=self.value,
            output_mode=None if self.output is None else self.output.mode,
        )

    def _within_budget(self, request: ChatOptions) -> ChatOptions | None:
        """``request`` as the run's budget and deadline let it go (its output cap and deadline lowered
        to what is left), or None when the run must stop (``stop_reason`` then says why)."""
        spending = self.spending
        if not spending.budget and spending.deadline is None:
            return request
        configured = request.max_output_tokens or self.settings.max_output_tokens
        cap = spending.output_cap(configured)
        self.stop_reason = spending.before_request((*self.messages, *self.produced), request, cap)
        if self.stop_reason is not None:
            return None
        if cap != configured:
            request = attrs.evolve(request, max_output_tokens=cap)
        left = spending.seconds_left()
        if left is not None and (request.deadline_seconds is None or left < request.deadline_seconds):
            request = attrs.evolve(request, deadline_seconds=left)
        return request

    def _stopped_by_deadline(self, partial: ChatResponse | None, error: ChatError | None = None) -> bool:
        """After a failed or cut-off request: whether the run's deadline ended it (then the run stops
        with what had arrived, an incomplete last answer). A request the client's rate limit would
        hold past the run's deadline ends the run there too, as a budget limit would: nothing more
        can be sent within it (one too large ever to go is an error, raised)."""
        held_past = (
            isinstance(error, RateLimitedError)
            and (left := self.spending.seconds_left()) is not None
            and left <= error.wait_seconds < math.inf
        )
        if not (held_past or self.spending.out_of_time()):
            return False
        self.stop_reason = "deadline"
        if partial is not None and (partial.messages or partial.usage is not None):
            partial = attrs.evolve(partial, status="incomplete", finish_reason=None)
            self.responses.append(partial)
            self.produced.extend(partial.messages)
            self.spending.answered(partial.usage, len(self.messages) + len(self.produced))
            not_run = self._not_run(partial.function_calls, range(len(partial.function_calls)))
            if not_run:
                self.records.extend(not_run)
                self.produced.append(ChatMessage("tool", tuple(record.result for record in not_run)))
        return True

    async def rounds(self, *, stream: bool) -> AsyncGenerator[_LoopEvent, None]:
        if self.resuming is not None:
            decided, self.resuming = self.resuming, None
            async with contextlib.aclosing(self._finish(decided)) as events:
                async for event in events:
                    yield event
            if self.stop_reason is not None:
                return
        while True:
            request = attrs.evolve(self.options, initiator="agent" if self.responses else "user")
            if self.output is not None:
                request = self.output.request(request)
            if not self.offer_tools:
                request = attrs.evolve(request, tools=(), tool_choice=None)
            budgeted = self._within_budget(request)
            if budgeted is None:
                return
            yield RoundStarted(len(self.responses) + 1)
            answer = _Answer()
            async with contextlib.aclosing(self._ask(budgeted, answer, stream=stream)) as deltas:
                async for delta in deltas:
                    yield delta
            if self.stop_reason is not None:
                return
            response = answer.response
            self.responses.append(response)
            self.produced.extend(response.messages)
            self.spending.answered(response.usage, len(self.messages) + len(self.produced))
            calls = response.function_calls
            # Calls made when no tools were offered are left unanswered, as the last answer.
            if not calls or not self.offer_tools:
                yield RoundFinished(len(self.responses), response, ())
                if self._settled(response):
                    return
                continue
            self.stop_reason = self._refused(response)
            if self.stop_reason is not None:
                # None of its calls runs: each is answered with the stop, so the history stays whole.
                async with contextlib.aclosing(self._finish(_Round(response, (), {}, {}))) as events:
                    async for event in events:
                        yield event
                return
            answering = self._open(response, calls)
            for record in answering.answered.values():
                yield ToolCallFinished(record)
            policy = self.chain.policy
            held = [position for position, call in answering.left.items() if needs_approval(policy, call)]
            if held:
                async with contextlib.aclosing(self._hold(answering, held)) as events:
                    async for event in events:
                        yield event
                if self.state is not None:
                    return
            async with contextlib.aclosing(self._finish(answering)) as events:
                async for event in events:
                    yield event
            if self.stop_reason is not None:
                return

    def _refused(self, response: ChatResponse) -> StopReason | None:
        """Why the run must end at ``response`` without running any of its calls, or None: more calls
        than one answer may make, or a token limit its usage does not report (``RunBudget.unmetered``)."""
        if len(response.function_calls) > self.settings.max_calls_per_response:
            return "too_many_calls"
        if self.spending.budget.unmetered(response.usage):
            return self.spending.ledger.stop("budget.unmetered")
        return None

    def _open(self, response: ChatResponse, calls: tuple[FunctionCallContent, ...]) -> _Round:
        """The answer's calls to answer: a call id already answered is answered at once, not run again.

        The budget admits calls in the model's order; the first it cannot answer ends the run, so
        the round holds only the calls before it.
        """
        answering = _Round(response, (), {}, {})
        admitted: list[FunctionCallContent] = []
        for position, call in enumerate(calls):
            self.stop_reason = self.spending.before_tool_call()
            if self.stop_reason is not None:
                break
            admitted.append(call)
            if call.call_id in self.answered:
                answering.answered[position] = self._answered_here(call, _duplicate(call))
            else:
                self.answered.add(call.call_id)
                answering.left[position] = call
        answering.calls = tuple(admitted)
        return answering

    async def _hold(self, answering: _Round, held: Sequence[int]) -> AsyncGenerator[_LoopEvent, None]:
        """Answer the malformed calls, then ask for the held ones: of the approver, or by stopping."""
        malformed = {position: call for position, call in answering.left.items() if not parsed(call).is_valid}
        async with contextlib.aclosing(self._invoke(malformed)) as answers:
            async for position, record in answers:
                answering.answered[position] = record
                del answering.left[position]
                yield ToolCallFinished(record)
        requests = []
        for position in held:
            requests.append(ApprovalRequest.of(parsed(answering.left[position])))
        if self.approver is None:
            for request in requests:
                yield ApprovalRequested(request)
            self.state = self._paused(answering, tuple(requests))
            return
        decisions: dict[str, ApprovalDecision] = {}
        for request in requests:
            yield ApprovalRequested(request)
            decision = await self.approver(request)
            if not isinstance(decision, Approve | Deny):
                raise TypeError(f"the approver answered a {type(decision).__name__}, not Approve() or Deny()")
            decisions[request.call_id] = decision
        self._decide(decisions)

    def _decide(self, decisions: Mapping[str, ApprovalDecision]) -> None:
        for call_id, decision in decisions.items():
            if isinstance(decision, Deny):
                self.chain.decided.deny(call_id, decision.reason)

    def _paused(self, answering: _Round, pending: tuple[ApprovalRequest, ...]) -> RunState:
        return RunState(
            messages=self.messages,
            options=self.options,
            produced=tuple(self.produced),
            responses=tuple(self.responses),
            tool_calls=tuple(self.records),
            held=tuple(answering.answered.get(position) for position in range(len(answering.calls))),
            pending=pending,
            answered=tuple(sorted(self.answered)),
            iterations=self.iterations,
            consecutive_errors=self.consecutive_errors,
            stop_reason=self.stop_reason,
            seconds_left=self.spending.seconds_left(),
            output_mode=None if self.output is None else self.output.mode,
            output_retries=0 if self.output is None else self.output.retries,
            run_id=self.run_id,
        )

    def _settled(self, response: ChatResponse) -> bool:
        """Whether the final answer ends the run: it does unless a typed answer was asked for and this
        one misfits with a retry left (then the turn telling the model what was wrong is added).
        A misfit with no retry left, or a refusal, raises, with the run so far."""
        if self.output is None:
            return True
        verdict = self.output.judge(response)
        if isinstance(verdict, Fitted):
            self.value = verdict.value
            return True
        # A gateway can echo a secret into an answer: what the error carries is cut as its run is.
        redact = self.settings.redact or _unchanged
        if isinstance(verdict, Misfit):
            retry = self.output.retry(verdict)
            if retry is not None:
                self.produced.append(retry)
                return False
            raise OutputValidationError(
                "the final answer does not fit the output type: " + "; ".join(verdict.problems),
                raw_text=redact(verdict.text),
                problems=verdict.problems,
                run=self._scrubbed(self.result()),
                response_id=response.response_id,
                model_id=response.model_id,
            )
        raise OutputRefusedError(
            "the model refused to give the typed answer",
            refusal=redact(verdict.refusal),
            run=self._scrubbed(self.result()),
            response_id=response.response_id,
            model_id=response.model_id,
        )

    async def _finish(self, answering: _Round) -> AsyncGenerator[_LoopEvent, None]:
        """Answer the calls left, then close the round: one ``tool`` message, in call order."""
        async with contextlib.aclosing(self._invoke(answering.left)) as answers:
            async for position, record in answers:
                answering.answered[position] = record
                yield ToolCallFinished(record)
        # A stop (the budget, or a deadline that came first) answers the calls it left unrun.
        calls = answering.response.function_calls
        unanswered = [position for position in range(len(calls)) if position not in answering.answered]
        for position, record in zip(unanswered, self._not_run(calls, unanswered), strict=False):
            answering.answered[position] = record
            yield ToolCallFinished(record)
        records = tuple(answering.answered[position] for position in sorted(answering.answered))
        if records:
            self.produced.append(ChatMessage("tool", tuple(record.result for record in records)))
        self.records.extend(records)
        self.iterations += 1
        yield RoundFinished(len(self.responses), answering.response, records)
        if self.stop_reason is not None:
            return
        errors = any(record.result.is_error for record in records)
        self.consecutive_errors = self.consecutive_errors + 1 if errors else 0
        settings = self.settings
        if (
            self.iterations >= settings.max_tool_iterations
            or self.consecutive_errors >= settings.max_consecutive_tool_errors
        ):
            self.offer_tools = False

    async def _ask(
        self, request: ChatOptions, answer: _Answer, *, stream: bool
    ) -> AsyncGenerator[TextDelta, None]:
        """Send the conversation so far; the text as it arrives, and the whole response into ``answer``."""
        conversation = (*self.messages, *self.produced)
        while True:
            updates: list[ChatResponseUpdate] = []
            sent, options = self.conversation.request(conversation, request)
            try:
                if not stream:
                    async with asyncio.timeout(self._bound()):
                        answer.response = await self.chat.get_response(sent, options)
                    self._answered(conversation, answer.response)
                    return
                pieces = aiter(self.chat.get_streaming_response(sent, options))
                try:
                    while True:
                        # Each wait bounded on its own: a timeout must not span the yield to the caller.
                        async with asyncio.timeout(self._bound()):
                            update = await anext(pieces, None)
                        if update is None:
                            break
                        updates.append(update)
                        if update.text:
                            yield TextDelta(update.text)
                finally:
                    await _close(pieces)
                answer.response = ChatResponse.from_updates(updates)
                self._answered(conversation, answer.response)
                return
            except TimeoutError:
                # The chat did not keep to the deadline its options gave it; the run's own bound did.
                if not self._stopped_by_deadline(ChatResponse.from_updates(updates) if updates else None):
                    raise
                return
            except ChatError as error:
                if not updates and self.output is not None and self.output.fall_back(error):
                    # The route refused text.format: the same request, the schema in its instructions.
                    request = self.output.request(request)
                    continue
                if not updates and self.conversation.resend_whole(error):
                    # The provider no longer holds the stored response: the whole history, once.
                    continue
                partial = ChatResponse.from_updates(updates) if updates else error.partial
                if not self._stopped_by_deadline(partial, error):
                    raise ToolRunError.from_error(error, self._scrubbed(self.result())) from error
                return

    def _answered(self, conversation: tuple[ChatMessage, ...], response: ChatResponse) -> None:
        self.conversation.answered(response, len(conversation) + len(response.messages))

    def _scrubbed(self, run: ToolRun) -> ToolRun:
        # A gateway can echo a secret into an answer; the error a host logs must not carry it.
        redact = self.settings.redact
        return run if redact is None else scrubbed(run, redact)

    def _bound(self) -> float | None:
        """How long the loop itself waits for the chat: the run's time left and a grace for the chat to
        end the request on its own (which reports what had arrived), or no bound without a deadline."""
        left = self.spending.seconds_left()
        return None if left is None else max(left, 0.0) + _DEADLINE_GRACE_SECONDS

    async def _invoke(
        self, calls: Mapping[int, FunctionCallContent]
    ) -> AsyncGenerator[tuple[int, ToolCallRecord], None]:
        """Each call's position and record, as it is answered through the chain (until the deadline)."""
        chain = self.chain.invoke
        spending = self.spending
        if not (self.settings.concurrent_tool_calls and len(calls) > 1):
            for position, call in calls.items():
                if spending.out_of_time():
                    self.stop_reason = "deadline"
                    return
                try:
                    async with asyncio.timeout(spending.seconds_left()):
                        result = await chain.invoke(call)
                except TimeoutError:
                    if not spending.out_of_time():
                        raise
                    self.stop_reason = "deadline"
                    return
                yield position, self._record(call, result)
            return
        tasks = {asyncio.ensure_future(chain.invoke(call)): position for position, call in calls.items()}
        try:
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(
                    pending, timeout=spending.seconds_left(), return_when=asyncio.FIRST_COMPLETED
                )
                if not done:
                    # The run's deadline came first: the calls still running are cancelled below.
                    self.stop_reason = "deadline"
                    return
                for task in sorted(done, key=tasks.__getitem__):
                    position = tasks[task]
                    yield position, self._record(calls[position], task.result())
        finally:
            # Abandoned, or a decorator raised: no call of this round outlives it.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _not_run(
        self, calls: Sequence[FunctionCallContent], positions: Iterable[int]
    ) -> list[ToolCallRecord]:
        """Once the run has stopped, each call at ``positions`` that it did not run, answered with a
        ``budget_exceeded`` error of the same call id: a history with a call and no result is not one
        the Responses API takes back."""
        reason = self.stop_reason
        if reason is None:
            return []
        return [self._answered_here(calls[p], _not_run(calls[p], reason)) for p in positions]

    def _answered_here(self, call: FunctionCallContent, result: FunctionResultContent) -> ToolCallRecord:
        """The record of a call the loop answers without the chain, told to the chain's observers."""
        for observer in self.chain.observers:
            observer.answered_by_loop(call, result)
        return ToolCallRecord(call, result, guarded=True)

    def _record(self, call: FunctionCallContent, result: FunctionResultContent) -> ToolCallRecord:
        # The guard holds the tools to the call's id already; a decorator outside it might not.
        if result.call_id != call.call_id:
            result = attrs.evolve(result, call_id=call.call_id)
        return ToolCallRecord(call, result, guarded=call.call_id in self.chain.guard.refused)


_LoopEvent: TypeAlias = RoundStarted | TextDelta | ToolCallFinished | ApprovalRequested | RoundFinished


_DEADLINE_GRACE_SECONDS = 0.5


def _unchanged(text: str) -> str:
    return text


def _spent(settings: LoopSettings, state: RunState) -> Spending:
    """What the paused run had spent, against the resuming loop's budget; its deadline what was left."""
    left = state.seconds_left if state.seconds_left is not None else settings.run_deadline_seconds
    spending = Spending.start(settings.run_budget, left)
    for response in state.responses:
        spending.answered(response.usage, 0)
    spending.last_length = len(state.messages) + len(state.produced)
    spending.ledger.tool_calls = len(state.tool_calls) + len(state.held)
    return spending


class _Answer:
    """Where :meth:`_Run._ask` leaves the model's whole response (an async generator returns nothing)."""

    response: ChatResponse


async def _close(pieces: AsyncIterator[ChatResponseUpdate]) -> None:
    # Closing the updates' iterator is what releases the HTTP response when a run stops early.
    aclose = getattr(pieces, "aclose", None)
    if aclose is not None:
        await aclose()


def _not_run(call: FunctionCallContent, reason: StopReason) -> FunctionResultContent:
    return error_result(
        call.call_id, BUDGET_EXCEEDED, f"The tool was not run: the run stopped at its limit ({reason})."
    )


def _duplicate(call: FunctionCallContent) -> FunctionResultContent:
    return error_result(
        call.call_id,
        DUPLICATE_CALL_ID,
        "The tool was not run: a call with this call id was already answered in this conversation.",
    )
