"""The workflow-editor pipeline: the model edits a copy of a workflow through step tools."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Collection, Iterator, Sequence
from typing import Final, Unpack

import attrs

from application.framing import FRAMING_RULE, frame
from application.runs.budget import StopReason
from application.runs.events import RunEvent
from application.runs.held import waiting
from application.runs.loop import LoopSettings
from application.runs.pipeline import PipelineOptions, ToolPipeline
from application.runs.run import RunState, RunStatus, ToolCallRecord, ToolRun
from application.tools.approval import ApprovalRequest, Decisions
from application.tools.parameters import not_blank
from application.tools.registry import ToolError, ToolRegistry
from application.workflows.json_form import workflow_to_json
from domain import ChatPort, UnknownStepError, Usage, Workflow, WorkflowStep

__all__ = ["WORKFLOW_EDITOR", "WORKFLOW_TOOLS", "WorkflowEdit", "WorkflowEditorAgent", "waiting_edits"]

# The name a paused run's state gives its pipeline, so that only this pipeline resumes it.
WORKFLOW_EDITOR: Final = "workflow_editor"
WORKFLOW_TOOLS: Final = ("list_steps", "add_step", "remove_step", "rename_step", "move_step")
DEFAULT_APPROVAL_REQUIRED: Final = ("remove_step",)

# ---------------------------------------------------------------- instructions
INSTRUCTIONS: Final = f"""\
You edit a workflow: a named, ordered list of steps, each with an id, a name and a kind.

Change the workflow only through the tools, one edit per call:
- list_steps shows the steps as they are now, in order.
- add_step adds a step after the step with the given id, or at the end when after is null;
  it answers with the new step's id.
- remove_step, rename_step and move_step (to a 1-based position) change an existing step by id.

Make exactly the changes the instruction asks for and nothing else. If a tool answers with an
error, read its message (call list_steps when a step id was unknown) and correct the call.
When you are done, answer with one or two sentences saying what you changed.

The workflow, as JSON, comes between <workflow> and </workflow>; the instruction between
<instruction> and </instruction>.
{FRAMING_RULE}"""


def instruction_message(workflow: Workflow, instruction: str) -> str:
    """The user message of a run: the workflow and the instruction, each framed so neither can forge tags."""
    return (
        "Edit this workflow as the instruction says.\n\n"
        f"{frame('workflow', workflow_to_json(workflow))}\n\n{frame('instruction', instruction)}"
    )


# ---------------------------------------------------------------- results


@attrs.frozen
class WorkflowEdit:
    """The edited copy of the workflow, the model's closing ``text``, the tool calls and the whole run
    (``run``, the :class:`ToolRun`: every message, each model answer, the summed usage).

    ``complete`` is False when the model's final answer was cut short (``status == "incomplete"``)
    or the run stopped at its budget or deadline (``stop_reason``): the edits made before it still
    stand, but the model may not have made them all. ``usage`` is the whole run's.

    An edit that stopped for approval has ``status == "awaiting_approval"``, the calls waiting in
    ``pending`` and what :meth:`WorkflowEditorAgent.resume` goes on from in ``state``; its
    ``workflow`` is then the copy as edited so far, unchanged by the held calls.
    """

    workflow: Workflow
    text: str
    complete: bool
    tool_calls: tuple[ToolCallRecord, ...]
    run: ToolRun
    stop_reason: StopReason | None = None

    @property
    def usage(self) -> Usage | None:
        """The tokens and cost of the whole run (every request summed), or None when none was reported."""
        return self.run.usage

    @property
    def status(self) -> RunStatus:
        """``"awaiting_approval"`` when the run stopped for approval, ``"done"`` otherwise."""
        return self.run.status

    @property
    def pending(self) -> tuple[ApprovalRequest, ...]:
        """The calls waiting for a decision."""
        return self.run.pending

    @property
    def state(self) -> RunState | None:
        """The paused run, for :meth:`WorkflowEditorAgent.resume`; None unless ``status`` says it waits."""
        return self.run.state


# ---------------------------------------------------------------- tools


@attrs.frozen
class AddStep:
    name: str = attrs.field(validator=not_blank, metadata={"description": "The new step's name."})
    kind: str = attrs.field(validator=not_blank, metadata={"description": "The new step's kind."})
    after: str | None = attrs.field(
        default=None, metadata={"description": "Id of the step to insert after; null to append at the end."}
    )


@attrs.frozen
class RemoveStep:
    step_id: str = attrs.field(metadata={"description": "Id of the step to remove."})


@attrs.frozen
class RenameStep:
    step_id: str = attrs.field(metadata={"description": "Id of the step to rename."})
    name: str = attrs.field(validator=not_blank, metadata={"description": "The step's new name."})


@attrs.frozen
class MoveStep:
    step_id: str = attrs.field(metadata={"description": "Id of the step to move."})
    position: int = attrs.field(
        metadata={"description": "The 1-based position to move it to; out-of-range values are clamped."}
    )


@attrs.define
class _Draft:
    """The copy being edited during one run."""

    workflow: Workflow


def _steps(workflow: Workflow) -> list[dict[str, str]]:
    return [{"id": s.id, "name": s.name, "kind": s.kind} for s in workflow.steps]


def _step(step: WorkflowStep) -> dict[str, str]:
    return {"id": step.id, "name": step.name, "kind": step.kind}


@contextlib.contextmanager
def _known_step() -> Iterator[None]:
    """The block's step id names a step of the draft, or the call is answered ``unknown_step``."""
    try:
        yield
    except UnknownStepError:
        # The id is not echoed back: it is the model's own text, and list_steps shows the real ones.
        raise ToolError("unknown_step", "No step has that id. Call list_steps to see the step ids.") from None


def _workflow_tools(draft: _Draft, *, detailed_errors: bool, approval: frozenset[str]) -> ToolRegistry:
    # The tools are synchronous on purpose: even under concurrent invocation each one runs to the
    # end without yielding, so the edits of one response apply in the order the model wrote them.
    registry = ToolRegistry(detailed_errors=detailed_errors)

    @registry.tool(needs_approval="list_steps" in approval)
    def list_steps() -> dict[str, object]:
        """List the workflow's steps in order, with their ids, names and kinds."""
        return {"name": draft.workflow.name, "steps": _steps(draft.workflow)}

    @registry.tool(needs_approval="add_step" in approval)
    def add_step(params: AddStep) -> dict[str, object]:
        """Add a step after the given step, or at the end; answers with the new step."""
        with _known_step():
            draft.workflow, step = draft.workflow.add_step(params.name, params.kind, params.after)
        return {"added": _step(step), "position": draft.workflow.index_of(step.id) + 1}

    @registry.tool(needs_approval="remove_step" in approval)
    def remove_step(params: RemoveStep) -> dict[str, object]:
        """Remove a step."""
        with _known_step():
            draft.workflow = draft.workflow.remove_step(params.step_id)
        return {"removed": params.step_id, "steps": _steps(draft.workflow)}

    @registry.tool(needs_approval="rename_step" in approval)
    def rename_step(params: RenameStep) -> dict[str, object]:
        """Give a step a new name."""
        with _known_step():
            draft.workflow = draft.workflow.rename_step(params.step_id, params.name)
        return {"renamed": _step(draft.workflow.step(params.step_id))}

    @registry.tool(needs_approval="move_step" in approval)
    def move_step(params: MoveStep) -> dict[str, object]:
        """Move a step to a 1-based position."""
        with _known_step():
            draft.workflow = draft.workflow.move_step(params.step_id, params.position)
        return {"moved": params.step_id, "steps": _steps(draft.workflow)}

    return registry


# ---------------------------------------------------------------- pipeline


class WorkflowEditorAgent(ToolPipeline):
    """Edits a copy of a workflow as instructed; every tool call goes through :class:`GuardedToolInvoker`.

    ``WorkflowEditorAgent(chat, settings=None, *, approval_required_tools=("remove_step",), **pipeline)``,
    ``pipeline`` the :class:`PipelineOptions` of :class:`ToolPipeline`. A call of a tool named
    in ``approval_required_tools`` (``()`` for none) waits for approval: the ``approver``'s when
    there is one, else the edit stops (``status == "awaiting_approval"``) and :meth:`resume` goes on.
    """

    def __init__(
        self,
        chat: ChatPort,
        settings: LoopSettings | None = None,
        *,
        approval_required_tools: Sequence[str] = DEFAULT_APPROVAL_REQUIRED,
        **pipeline: Unpack[PipelineOptions],
    ) -> None:
        super().__init__(chat, settings, **pipeline)
        self._approval = _approval_set(approval_required_tools)

    def _tools(self, draft: _Draft) -> ToolRegistry:
        return _workflow_tools(
            draft, detailed_errors=self.settings.detailed_tool_errors, approval=self._approval
        )

    agent_name = WORKFLOW_EDITOR

    async def edit(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
        return await self._observed(self._edited(workflow, instruction), _run_of)

    async def _edited(self, workflow: Workflow, instruction: str) -> WorkflowEdit:
        draft = _Draft(workflow)
        run = await self._run(instruction_message(workflow, instruction), INSTRUCTIONS, self._tools(draft))
        return _edit(draft, run)

    async def resume(self, state: RunState, decisions: Decisions) -> WorkflowEdit:
        """Go on with an edit that stopped for approval (``edit.state``), as if it had never stopped.

        ``decisions`` maps each pending call id to ``Approve()`` or ``Deny(reason)``; a missing,
        unknown or repeated id raises ``ValueError`` before anything runs, as does a state that is
        not a paused workflow edit. The state is left as it was: keep it as spent once resumed.
        """
        return await self._observed(self._resumed(state, decisions), _run_of)

    async def _resumed(self, state: RunState, decisions: Decisions) -> WorkflowEdit:
        # A resumed edit is a run of its own: what the hooks see holds the calls decided and what follows.
        draft = _draft_of(state)
        return _edit(draft, await self._resume(state, decisions, self._tools(draft)))

    def resume_events(
        self, state: RunState, decisions: Decisions
    ) -> AsyncGenerator[RunEvent[WorkflowEdit], None]:
        """:meth:`resume` as it runs, reported as :meth:`edit_events` reports an edit; the state and
        the decisions are checked (``ValueError``) at once."""
        draft = _draft_of(state)
        events = self._resume_events(state, decisions, self._tools(draft), lambda run: _edit(draft, run))
        return self._observed_events(events, _run_of)

    def waiting(self, state: RunState) -> tuple[ApprovalRequest, ...]:
        """The calls :meth:`resume` asks a decision on: see :func:`waiting_edits`."""
        return waiting_edits(state, self._approval)

    def edit_events(
        self, workflow: Workflow, instruction: str
    ) -> AsyncGenerator[RunEvent[WorkflowEdit], None]:
        """:meth:`edit` as it runs: the model's text as it arrives, each answered call, each round,
        then ``RunFinished`` whose ``result`` is the :class:`WorkflowEdit`.

        Closing the iterator early (``aclose()``, or cancelling its task) stops the run: the model's
        stream is closed and no further tool runs. See :meth:`ToolLoop.run_events`.
        """
        draft = _Draft(workflow)
        events = self._run_events(
            instruction_message(workflow, instruction),
            INSTRUCTIONS,
            self._tools(draft),
            lambda run: _edit(draft, run),
        )
        return self._observed_events(events, _run_of)


def _run_of(edit: WorkflowEdit) -> ToolRun:
    return edit.run


def _approval_set(approval_required_tools: Collection[str]) -> frozenset[str]:
    if isinstance(approval_required_tools, str):
        raise TypeError("approval_required_tools: a sequence of tool names, not one string")
    unknown = sorted(set(approval_required_tools) - set(WORKFLOW_TOOLS))
    if unknown:
        raise ValueError(
            f"approval_required_tools: no tool named {', '.join(map(repr, unknown))}; "
            f"the tools are {', '.join(WORKFLOW_TOOLS)}"
        )
    return frozenset(approval_required_tools)


def _draft_of(state: RunState) -> _Draft:
    if state.pipeline != WORKFLOW_EDITOR or state.workflow is None:
        raise ValueError(
            f"the state is not a paused workflow edit (its pipeline is {state.pipeline!r}); "
            "resume it with the pipeline that paused it"
        )
    return _Draft(state.workflow)


def waiting_edits(
    state: RunState, approval_required_tools: Collection[str] = DEFAULT_APPROVAL_REQUIRED
) -> tuple[ApprovalRequest, ...]:
    """The calls a paused edit waits on, as :meth:`WorkflowEditorAgent.resume` finds them: the held
    answer's own calls that ``approval_required_tools`` holds back, each built from the call that
    runs once approved (show a person these, not a stored ``pending``).

    Raises ``ValueError`` (before anything runs) for a state that is not a paused workflow edit, whose
    parts do not hold together, or whose ``pending`` is not exactly those calls.
    """
    draft = _draft_of(state)
    tools = _workflow_tools(draft, detailed_errors=False, approval=_approval_set(approval_required_tools))
    return waiting(state, tools)[1]


def _edit(draft: _Draft, run: ToolRun) -> WorkflowEdit:
    if run.state is not None:
        # The paused run names this pipeline and keeps the copy as edited so far, to go on from.
        run = attrs.evolve(
            run, state=attrs.evolve(run.state, pipeline=WORKFLOW_EDITOR, workflow=draft.workflow)
        )
    return WorkflowEdit(
        workflow=draft.workflow,
        text=run.text,
        complete=run.complete,
        tool_calls=run.tool_calls,
        run=run,
        stop_reason=run.stop_reason,
    )
