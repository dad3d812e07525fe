"""``meeting-agents eval``: summarize labelled meetings and report how well the summaries match them."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from adapters.cli.display.console import Console
from adapters.cli.exit_codes import EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from adapters.evals import BUILTIN_NAME, DatasetError, builtin_dataset, read_dataset
from adapters.settings import Settings
from application.meetings.evaluation import (
    Evaluation,
    Judge,
    LabelledMeeting,
    MeetingEvaluation,
    Score,
    evaluate,
)

__all__ = ["eval_command", "evaluation_json", "evaluation_table"]

Endpoint = Callable[[Settings, Console], AbstractContextManager[Settings]]


def _score_json(score: Score) -> dict[str, Any]:
    return {
        "precision": score.precision,
        "recall": score.recall,
        "matched": score.matched,
        "found": score.found,
        "labelled": score.labelled,
    }


def _meeting_json(meeting: MeetingEvaluation) -> dict[str, Any]:
    judged = meeting.judgement
    return {
        "name": meeting.name,
        "action_items": _score_json(meeting.action_items),
        "decisions": _score_json(meeting.decisions),
        "calls": meeting.calls,
        "ungrounded": meeting.ungrounded,
        "requests": meeting.requests,
        "input_tokens": meeting.input_tokens,
        "output_tokens": meeting.output_tokens,
        "cost_usd": meeting.cost_usd,
        "seconds": round(meeting.seconds, 3),
        "complete": meeting.complete,
        "error": meeting.error,
        "judged": None
        if judged is None
        else {
            "completeness": judged.completeness,
            "faithfulness": judged.faithfulness,
            "reason": judged.reason,
        },
    }


def _judged_means(evaluation: Evaluation) -> dict[str, Any] | None:
    judged = [m.judgement for m in evaluation.meetings if m.judgement is not None]
    if not judged:
        return None
    return {
        "completeness": sum(j.completeness for j in judged) / len(judged),
        "faithfulness": sum(j.faithfulness for j in judged) / len(judged),
        "meetings": len(judged),
    }


def evaluation_json(evaluation: Evaluation, dataset: str) -> dict[str, Any]:
    """The ``--format json`` document: totals, then one entry per meeting."""
    seconds = evaluation.total("seconds")
    return {
        "dataset": dataset,
        "action_items": _score_json(evaluation.action_items),
        "decisions": _score_json(evaluation.decisions),
        "ungrounded_share": evaluation.ungrounded_share,
        "requests": evaluation.total("requests"),
        "input_tokens": evaluation.total("input_tokens"),
        "output_tokens": evaluation.total("output_tokens"),
        "cost_usd": evaluation.total("cost_usd"),
        "seconds": None if seconds is None else round(seconds, 3),
        "judged": _judged_means(evaluation),
        "meetings": [_meeting_json(meeting) for meeting in evaluation.meetings],
    }


def _cell(score: Score) -> str:
    return f"{score.precision:5.3f} {score.recall:5.3f}"


def _number(value: object) -> str:
    return "-" if value is None else f"{value:,}"


def evaluation_table(evaluation: Evaluation, dataset: str) -> str:
    """The figures for people: one row per meeting, then the totals."""
    header = f"{'meeting':<20} {'items P':>7} {'R':>5}  {'decisions P':>11} {'R':>5}  " + (
        f"{'refused':>7} {'requests':>8}"
    )
    rows = [f"{dataset}: {len(evaluation.meetings)} meetings", header]
    for meeting in evaluation.meetings:
        refused = f"{meeting.ungrounded}/{meeting.calls}"
        note = f"  failed: {meeting.error}" if meeting.error else ("" if meeting.complete else "  incomplete")
        rows.append(
            f"{meeting.name[:20]:<20} {_cell(meeting.action_items):>13}  {_cell(meeting.decisions):>17}  "
            f"{refused:>7} {meeting.requests:>8}{note}"
        )
    items, decisions = evaluation.action_items, evaluation.decisions
    cost = evaluation.total("cost_usd")
    rows += [
        "",
        f"action items: precision {items.precision:.3f}, recall {items.recall:.3f} "
        f"({items.matched} matched, {items.found} found, {items.labelled} labelled)",
        f"decisions:    precision {decisions.precision:.3f}, recall {decisions.recall:.3f} "
        f"({decisions.matched} matched, {decisions.found} found, {decisions.labelled} labelled)",
        f"refused as ungrounded: {evaluation.ungrounded_share:.3f} of record calls",
        f"requests {_number(evaluation.total('requests'))}, "
        f"input tokens {_number(evaluation.total('input_tokens'))}, "
        f"output tokens {_number(evaluation.total('output_tokens'))}, "
        + ("cost not reported" if cost is None else f"cost ${cost:.4f}")
        + f", {evaluation.total('seconds') or 0:.1f} s",
    ]
    judged = _judged_means(evaluation)
    if judged is not None:
        rows.append(
            f"judged ({judged['meetings']} meetings): completeness {judged['completeness']:.2f}/5, "
            f"faithfulness {judged['faithfulness']:.2f}/5"
        )
    return "\n".join(rows)


def _missed(evaluation: Evaluation, args: argparse.Namespace) -> list[str]:
    missed = []
    for name, score in (("action items", evaluation.action_items), ("decisions", evaluation.decisions)):
        if args.min_precision is not None and score.precision < args.min_precision:
            missed.append(f"{name} precision {score.precision:.3f} < --min-precision {args.min_precision}")
        if args.min_recall is not None and score.recall < args.min_recall:
            missed.append(f"{name} recall {score.recall:.3f} < --min-recall {args.min_recall}")
    return missed


def _dataset(args: argparse.Namespace, settings: Settings) -> tuple[str, tuple[LabelledMeeting, ...]]:
    if args.dataset is None:
        return BUILTIN_NAME, builtin_dataset()
    return str(args.dataset), read_dataset(args.dataset, limit=settings.agent.max_transcript_bytes)


async def _evaluate(
    meetings: tuple[LabelledMeeting, ...], settings: Settings, judge_model: str | None
) -> Evaluation:
    from dependency_injector import providers

    from adapters.cassettes import ReplayMismatchError
    from adapters.container import Container

    container = Container()
    container.settings.override(providers.Object(settings))
    async with container:
        judge = Judge(container.tool_loop(), judge_model) if judge_model else None
        # A request the cassette does not hold is bad input to the whole evaluation, not one meeting's miss.
        return await evaluate(meetings, container.summary_agent(), judge, fatal=(ReplayMismatchError,))


def eval_command(args: argparse.Namespace, console: Console, settings: Settings, endpoint: Endpoint) -> int:
    """``meeting-agents eval``: the dataset read and checked first (exit 2), then every meeting; 3 when a
    ``--min-precision``/``--min-recall`` line is missed."""
    try:
        name, meetings = _dataset(args, settings)
    except DatasetError as exc:
        console.error(f"DATASET {exc}")
        return EXIT_USAGE

    async def session() -> Evaluation:
        with endpoint(settings, console) as running:
            return await _evaluate(meetings, running, args.judge_model)

    evaluation = asyncio.run(session())
    if args.format == "json":
        console.result_json(evaluation_json(evaluation, name))
    else:
        console.result(evaluation_table(evaluation, name) + "\n")
    missed = _missed(evaluation, args)
    for line in missed:
        console.error(f"missed: {line}")
    return EXIT_INCOMPLETE if missed else EXIT_OK
