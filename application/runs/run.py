"""What a tool run produces: one record per answered call, the run itself, and the error that ends one."""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeAlias, Unpack

import attrs

from application.runs.budget import StopReason
from application.tools.approval import ApprovalRequest
from domain import (
    ChatError,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ErrorContext,
    FunctionCallContent,
    FunctionResultContent,
    Usage,
    Workflow,
)

__all__ = ["OutputMode", "RunState", "RunStatus", "ToolCallRecord", "ToolRun", "ToolRunError"]

RunStatus: TypeAlias = Literal["done", "awaiting_approval"]

OutputMode: TypeAlias = Literal["json_schema", "prompted"]
"""How a run asked for its typed answer: the provider's ``text.format`` (``json_schema``), or the
schema written into the instructions (``prompted``) where the route refused ``text.format``."""


@attrs.frozen
class ToolCallRecord:
    """One call the model made and the result it got.

    ``guarded`` is True when the tool was not run because the run refused the call itself: its
    arguments did not parse (``invalid_tool_arguments``, as the run's guard reports it, never by
    parsing the call again) or its call id had already been answered in the run (``duplicate_call_id``).
    """

    call: FunctionCallContent
    result: FunctionResultContent
    guarded: bool


@attrs.frozen
class RunState:
    """Everything a run paused for approval needs to go on, in this process or another one.

    A plain value (``application.dumps``/``loads`` round-trip it): the conversation the run was
    handed (``messages``) with its ``options``, what the run added so far (``produced``, ending with
    the held answer), the model's ``responses`` (the held answer last), the records of the rounds
    already over (``tool_calls``), the held answer's calls (``held``: per call, in call order, the
    record of a call answered before the pause, e.g. refused by the guard, or None for a call still
    to be answered), the calls waiting for a decision (``pending``), the call ids already answered or
    held (``answered``, so a resumed run still answers a repeated id ``duplicate_call_id``), the
    run's counters (rounds, consecutive error rounds; ``stop_reason`` when the budget admitted only
    the held calls, so the resumed run ends after them; ``seconds_left`` of its deadline: the time
    waiting for a decision does not count), and the pipeline it belongs to (``pipeline``:
    ``"workflow_editor"``, or None for a host's own tools) with that pipeline's own state
    (``workflow``: the editor's copy as edited so far). A run asked for a typed answer keeps how it
    asks (``output_mode``) and the misfit retries it has left (``output_retries``). ``run_id`` is the
    run's own id, which its requests' ``prompt_cache_key`` is made from, so a resumed run keeps it.

    Resuming never changes a state, so a state resumed twice would run its approved calls twice: a
    host keeps the state it resumed from as spent.
    """

    messages: tuple[ChatMessage, ...]
    options: ChatOptions
    produced: tuple[ChatMessage, ...]
    responses: tuple[ChatResponse, ...]
    tool_calls: tuple[ToolCallRecord, ...]
    held: tuple[ToolCallRecord | None, ...]
    pending: tuple[ApprovalRequest, ...]
    answered: tuple[str, ...]
    iterations: int
    consecutive_errors: int
    stop_reason: StopReason | None = None
    seconds_left: float | None = None
    pipeline: str | None = None
    workflow: Workflow | None = None
    output_mode: OutputMode | None = None
    output_retries: int = 0
    run_id: str | None = None


_NO_ANSWER = ChatResponse()


@attrs.frozen
class ToolRun:
    """One run of the tool loop.

    ``messages`` is everything the run added to the conversation, in order: each model answer's
    messages exactly as the adapter returned them, then one ``tool`` message per round of calls.
    ``responses`` are the model's answers in order, the last one being the final answer;
    ``tool_calls`` holds one record per answered call; ``iterations`` counts the rounds of calls.
    ``stop_reason`` is None for a run that went to its final answer, else the limit of its budget
    (``budget.requests``, ``budget.input_tokens``, ...) or ``deadline`` that ended it early, with
    what it had (see :mod:`application.runs.budget`).

    A run that stopped for approval has ``state`` (a :class:`RunState`): its ``status`` is then
    ``"awaiting_approval"`` and ``pending`` lists the calls waiting for a decision; its last
    answer's calls have no ``tool`` message yet, and ``tool_calls`` holds only the calls answered.

    A run asked for a typed answer (``ToolLoop.run(..., output_type=T)``) has ``output``, the final
    answer structured into ``T``, and ``output_mode``, how it was asked for (``"prompted"`` when the
    route refused ``text.format`` and the schema went in the instructions). ``output`` is derived
    from the final answer's text, which the run keeps; it takes no part in equality, and a run
    loaded from its document has its JSON form.
    """

    messages: tuple[ChatMessage, ...] = ()
    responses: tuple[ChatResponse, ...] = ()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    iterations: int = 0
    stop_reason: StopReason | None = None
    state: RunState | None = None
    output: object = attrs.field(default=None, eq=False)
    output_mode: OutputMode | None = None

    @property
    def status(self) -> RunStatus:
        """``"awaiting_approval"`` when the run stopped for approval, ``"done"`` otherwise."""
        return "done" if self.state is None else "awaiting_approval"

    @property
    def pending(self) -> tuple[ApprovalRequest, ...]:
        """The calls waiting for a decision (empty unless the run stopped for approval)."""
        return () if self.state is None else self.state.pending

    @property
    def complete(self) -> bool:
        """False when the run stopped early (``stop_reason``) or its final answer was cut short."""
        return self.stop_reason is None and self.final.status != "incomplete"

    @property
    def final(self) -> ChatResponse:
        """The model's last answer; an empty ``ChatResponse`` when none arrived (a failed first request)."""
        return self.responses[-1] if self.responses else _NO_ANSWER

    @property
    def text(self) -> str:
        """The text of the model's last answer."""
        return self.final.text

    @property
    def usage(self) -> Usage | None:
        """The usage of every answer summed, or None when no answer reported any."""
        total: Usage | None = None
        for response in self.responses:
            if response.usage is not None:
                total = response.usage if total is None else total + response.usage
        return total


class ToolRunError(ChatError):
    """A :class:`ChatError` that ended a tool run; ``run`` is the :class:`ToolRun` up to the failure.

    The loop does not change the adapter's error: it raises a new one, chained from it
    (``__cause__``), whose class derives from both the adapter error's class and this one. So
    ``except ChatTransportError`` (with its ``status_code``), ``except ChatError`` and ``.partial``
    keep working, and ``except ToolRunError`` adds ``.run``. ``type(error).__name__`` stays the
    adapter error's name.
    """

    run: ToolRun
    # The class a derived run error was made from; absent on classes written by hand.
    _made_from: ClassVar[type[ChatError]]

    def __init__(
        self,
        message: str,
        *,
        run: ToolRun | None = None,
        **context: Unpack[ErrorContext],
    ) -> None:
        # ``run`` has a default so that an adapter error class's own __init__, which knows nothing
        # of runs, can still construct a derived class through super().
        super().__init__(message, **context)
        self.run = run if run is not None else ToolRun()

    def __reduce__(self) -> tuple[Any, ...]:
        # The derived classes are made at run time, so pickle rebuilds them from the class they came from.
        origin = type(self).__dict__.get("_made_from", type(self))
        return (_rebuild, (origin, self.args, self.__dict__))

    @staticmethod
    def from_error(error: ChatError, run: ToolRun) -> ToolRunError:
        """A new error like ``error`` (its class, message and fields) that also carries ``run``."""
        cls = _run_error_class(type(error))
        failure = cls.__new__(cls, *error.args)
        failure.__dict__.update(error.__dict__)
        failure.run = run
        return failure


# One derived class per adapter error class, made on first use: there are only a handful.
_DERIVED: dict[type[ChatError], type[ToolRunError]] = {}


def _run_error_class(made_from: type[ChatError]) -> type[ToolRunError]:
    if issubclass(made_from, ToolRunError):
        return made_from
    derived = _DERIVED.get(made_from)
    if derived is None:
        namespace = {
            "__module__": made_from.__module__,
            "__qualname__": made_from.__qualname__,
            "__doc__": made_from.__doc__,
            "_made_from": made_from,
        }
        # ToolRunError already derives from ChatError, so a plain ChatError needs no second base.
        bases = (ToolRunError,) if made_from is ChatError else (made_from, ToolRunError)
        derived = typing.cast(type[ToolRunError], type(made_from.__name__, bases, namespace))
        _DERIVED[made_from] = derived
    return derived


def _rebuild(
    made_from: type[ChatError], args: tuple[object, ...], state: Mapping[str, object]
) -> ToolRunError:
    cls = _run_error_class(made_from)
    error = cls.__new__(cls, *args)
    error.__dict__.update(state)
    return error
