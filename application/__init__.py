"""Use cases: guarded tool invocation, the tool loop and the agent pipelines."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from application.documents import DocumentError, dumps, loads
    from application.meetings.chunking import ChunkSettings
    from application.meetings.grounding import UNGROUNDED, Grounding, UngroundedError
    from application.meetings.summary import (
        ActionItem,
        Decision,
        MeetingSummary,
        SummaryAgent,
        find_participants,
    )
    from application.meetings.transcripts import Transcript, TranscriptError, TranscriptLine
    from application.runs.budget import STOP_REASONS, RunBudget, StopReason, estimate_tokens
    from application.runs.events import (
        ApprovalRequested,
        ChunkFinished,
        RoundFinished,
        RoundStarted,
        RunEvent,
        RunFinished,
        TextDelta,
        ToolCallFinished,
    )
    from application.runs.loop import AnsweredByLoop, LoopSettings, ToolInvokerDecorator, ToolLoop
    from application.runs.output import OutputRefusedError, OutputValidationError, output_schema
    from application.runs.run import OutputMode, RunState, RunStatus, ToolCallRecord, ToolRun, ToolRunError
    from application.tools.approval import (
        ApprovalDecision,
        ApprovalPolicy,
        ApprovalRequest,
        Approve,
        Approver,
        Decisions,
        Deny,
    )
    from application.tools.guard import GuardedToolInvoker
    from application.tools.parameters import ParameterError, json_schema_for, not_blank
    from application.tools.registry import ToolError, ToolRegistry, error_result
    from application.workflows.editor import WorkflowEdit, WorkflowEditorAgent
    from application.workflows.json_form import WorkflowJsonError, workflow_from_json, workflow_to_json

__all__ = [
    "STOP_REASONS",
    "UNGROUNDED",
    "ActionItem",
    "AnsweredByLoop",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRequest",
    "ApprovalRequested",
    "Approve",
    "Approver",
    "ChunkFinished",
    "ChunkSettings",
    "Decision",
    "Decisions",
    "Deny",
    "DocumentError",
    "Grounding",
    "GuardedToolInvoker",
    "LoopSettings",
    "MeetingSummary",
    "OutputMode",
    "OutputRefusedError",
    "OutputValidationError",
    "ParameterError",
    "RoundFinished",
    "RoundStarted",
    "RunBudget",
    "RunEvent",
    "RunFinished",
    "RunState",
    "RunStatus",
    "StopReason",
    "SummaryAgent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolError",
    "ToolInvokerDecorator",
    "ToolLoop",
    "ToolRegistry",
    "ToolRun",
    "ToolRunError",
    "Transcript",
    "TranscriptError",
    "TranscriptLine",
    "UngroundedError",
    "WorkflowEdit",
    "WorkflowEditorAgent",
    "WorkflowJsonError",
    "dumps",
    "error_result",
    "estimate_tokens",
    "find_participants",
    "json_schema_for",
    "loads",
    "not_blank",
    "output_schema",
    "workflow_from_json",
    "workflow_to_json",
]

# Each name's module, imported on first use: a command imports only the use cases it runs.
_MODULES: dict[str, str] = {
    "ActionItem": "application.meetings.summary",
    "AnsweredByLoop": "application.runs.loop",
    "ApprovalDecision": "application.tools.approval",
    "ApprovalPolicy": "application.tools.approval",
    "ApprovalRequest": "application.tools.approval",
    "ApprovalRequested": "application.runs.events",
    "Approve": "application.tools.approval",
    "Approver": "application.tools.approval",
    "ChunkFinished": "application.runs.events",
    "ChunkSettings": "application.meetings.chunking",
    "Decision": "application.meetings.summary",
    "Decisions": "application.tools.approval",
    "Deny": "application.tools.approval",
    "DocumentError": "application.documents",
    "Grounding": "application.meetings.grounding",
    "GuardedToolInvoker": "application.tools.guard",
    "LoopSettings": "application.runs.loop",
    "MeetingSummary": "application.meetings.summary",
    "OutputMode": "application.runs.run",
    "OutputRefusedError": "application.runs.output",
    "OutputValidationError": "application.runs.output",
    "ParameterError": "application.tools.parameters",
    "RoundFinished": "application.runs.events",
    "RoundStarted": "application.runs.events",
    "RunBudget": "application.runs.budget",
    "RunEvent": "application.runs.events",
    "RunFinished": "application.runs.events",
    "RunState": "application.runs.run",
    "RunStatus": "application.runs.run",
    "STOP_REASONS": "application.runs.budget",
    "StopReason": "application.runs.budget",
    "SummaryAgent": "application.meetings.summary",
    "TextDelta": "application.runs.events",
    "ToolCallFinished": "application.runs.events",
    "ToolCallRecord": "application.runs.run",
    "ToolError": "application.tools.registry",
    "ToolInvokerDecorator": "application.runs.loop",
    "ToolLoop": "application.runs.loop",
    "ToolRegistry": "application.tools.registry",
    "ToolRun": "application.runs.run",
    "ToolRunError": "application.runs.run",
    "Transcript": "application.meetings.transcripts",
    "TranscriptError": "application.meetings.transcripts",
    "TranscriptLine": "application.meetings.transcripts",
    "UNGROUNDED": "application.meetings.grounding",
    "UngroundedError": "application.meetings.grounding",
    "WorkflowEdit": "application.workflows.editor",
    "WorkflowEditorAgent": "application.workflows.editor",
    "WorkflowJsonError": "application.workflows.json_form",
    "dumps": "application.documents",
    "error_result": "application.tools.registry",
    "estimate_tokens": "application.runs.budget",
    "find_participants": "application.meetings.summary",
    "json_schema_for": "application.tools.parameters",
    "loads": "application.documents",
    "not_blank": "application.tools.parameters",
    "output_schema": "application.runs.output",
    "workflow_from_json": "application.workflows.json_form",
    "workflow_to_json": "application.workflows.json_form",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
