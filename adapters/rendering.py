"""A run's results as the contract's JSON, and a failed request in one line: what the command line
prints and what a durable run stores, so neither imports the other."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from adapters.settings import AgentSettings
from application import (
    ActionItem,
    ApprovalRequest,
    Decision,
    MeetingSummary,
    ToolCallRecord,
    WorkflowEdit,
    workflow_to_json,
)
from domain import ChatError, ChatTransportError, MalformedResponseError, ResponseFailedError, Usage

__all__ = ["describe_failure", "edit_json", "error_code", "shown_url", "summary_json", "usage_json"]

_SHOWN_CAUSE: Final = 200


def error_code(record: ToolCallRecord) -> str | None:
    """The error code the call was answered with (``invalid_tool_arguments``, ``unknown_step``, ...)."""
    result = record.result
    if not result.is_error:
        return None
    if isinstance(result.result, Mapping) and isinstance(result.result.get("error"), str):
        return str(result.result["error"])
    return "error"


def _tool_calls_json(records: Sequence[ToolCallRecord]) -> list[dict[str, Any]]:
    return [
        {
            "call_id": record.call.call_id,
            "name": record.call.name,
            "guarded": record.guarded,
            "error": error_code(record),
        }
        for record in records
    ]


def _pending_json(pending: Sequence[ApprovalRequest]) -> list[dict[str, Any]]:
    return [
        {
            "call_id": request.call_id,
            "name": request.name,
            "arguments": dict(request.arguments),
            "raw_arguments": request.raw_arguments,
        }
        for request in pending
    ]


def summary_json(summary: MeetingSummary) -> dict[str, Any]:
    return {
        "text": summary.text,
        "action_items": [
            {"owner": item.owner, "task": item.task, "due": item.due, **_cited_json(item)}
            for item in summary.action_items
        ],
        "decisions": [{"text": decision.text, **_cited_json(decision)} for decision in summary.decisions],
        "complete": summary.complete,
        "failed_chunks": [list(lines) for lines in summary.failed_chunks],
        "tool_calls": _tool_calls_json(summary.tool_calls),
        "stop_reason": summary.stop_reason,
        "usage": usage_json(summary.usage, len(summary.run.responses)),
        "status": summary.run.status,
        "pending": _pending_json(summary.run.pending),
    }


def _cited_json(item: ActionItem | Decision) -> dict[str, Any]:
    """Where an item was said: its lines, and in a recording its time (seconds) and its speakers."""
    return {"lines": list(item.lines), "start": item.start, "end": item.end, "speakers": list(item.speakers)}


def usage_json(usage: Usage | None, requests: int) -> dict[str, Any]:
    """The run's spending for ``--format json``: the requests sent, the summed tokens and cost (null when
    not reported)."""
    usage = usage or Usage()
    return {
        "requests": requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cost_usd": usage.cost_usd,
    }


def edit_json(edit: WorkflowEdit) -> dict[str, Any]:
    workflow: dict[str, Any] = json.loads(workflow_to_json(edit.workflow))
    return {
        "workflow": workflow,
        "text": edit.text,
        "complete": edit.complete,
        "tool_calls": _tool_calls_json(edit.tool_calls),
        "stop_reason": edit.stop_reason,
        "usage": usage_json(edit.usage, len(edit.run.responses)),
        "status": edit.status,
        "pending": _pending_json(edit.pending),
    }


def shown_url(url: str) -> str:
    """``url`` without any user name or password it carries."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _what_failed(error: ChatError) -> str:
    if isinstance(error, ChatTransportError):
        return "the gateway request failed"
    if isinstance(error, ResponseFailedError):
        return "the model failed" + (f" ({error.code})" if error.code else "")
    if isinstance(error, MalformedResponseError):
        return "the gateway's answer could not be read"
    return "the request failed"


def _root_cause(error: BaseException) -> BaseException | None:
    """The deepest exception under ``error`` that is not itself a ChatError (a run's error is
    chained from the adapter's), or None when the chain holds nothing else."""
    seen = {id(error)}
    root = None
    while (cause := error.__cause__ or error.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        error = cause
        if not isinstance(cause, ChatError):
            root = cause
    return root


def describe_failure(error: ChatError, agent: AgentSettings, redact: Callable[[str], str] = str) -> str:
    """One line: what failed, the error's own words, then where (URL, model, attempts, status, limits, ids).

    The caller redacts it; ``redact`` is applied before anything is cut to length (the cause's text).
    Nothing here reads the API key.
    """
    where = [f"POST {shown_url((agent.base_url or '').rstrip('/'))}/responses", f"model {agent.model}"]
    if isinstance(error, ChatTransportError):
        where.append(f"{error.attempts} attempt{'s' if error.attempts != 1 else ''}")
        if error.status_code is not None and f"HTTP {error.status_code}" not in error.message:
            where.append(f"HTTP {error.status_code}")
        if error.status_code is None and "timed out" in error.message:
            where.append(f"idle timeout agent.timeout_seconds={agent.timeout_seconds:g} s")
        root = _root_cause(error)
        if error.status_code is None and root is not None and str(root):
            where.append(f"cause {type(root).__name__}: {redact(str(root))[:_SHOWN_CAUSE]}")
    if error.request_id:
        where.append(f"request id {error.request_id}")
    if error.response_id:
        where.append(f"response id {error.response_id}")
    return f"{_what_failed(error)}: {error.message} [{'; '.join(where)}]"
