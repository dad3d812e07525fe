"""Use cases: guarded tool invocation, the tool loop and the agent pipelines."""

from application.documents import DocumentError, dumps, loads
from application.meetings.chunking import ChunkSettings
from application.meetings.grounding import UNGROUNDED, Grounding, UngroundedError
from application.meetings.summary import ActionItem, Decision, MeetingSummary, SummaryAgent, find_participants
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
