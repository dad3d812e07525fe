"""The ``meeting-agents`` command: check everything, then one run through the container, then the result."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import sys
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import attrs

from adapters.cli.display.console import Console
from adapters.cli.display.failures import describe_failure, failure_details, logging_to, shown_url
from adapters.cli.display.progress import LiveRun
from adapters.cli.display.report import (
    edit_details,
    edit_json,
    edit_text,
    summary_details,
    summary_json,
    summary_text,
    usage_line,
)
from adapters.cli.exit_codes import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_MODEL_FAILED,
    EXIT_NOT_CARRIED_OUT,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WAITING,
)
from adapters.cli.files import AtomicOutput, InputError, long_transcripts, read_text
from adapters.cli.meetings.transcripts import imported
from adapters.cli.parser import PROG
from adapters.cli.run_document import save_run
from adapters.cli.startup import importing
from adapters.cli.workflows.approval import TerminalApprover, fixed_approver, question
from adapters.cli.workflows.instruction import why_not_carried_out
from adapters.offline import OFFLINE_MODEL, UnknownScenarioError
from adapters.offline.scenarios import parse_model
from adapters.redaction import Redactor
from adapters.settings import (
    ConfigurationError,
    Secret,
    Settings,
    fallback_name,
    load_config_file,
    resolve_settings,
)
from application import (
    ApprovalDecision,
    ApprovalRequest,
    Approve,
    Approver,
    Deny,
    MeetingSummary,
    RunEvent,
    RunFinished,
    RunState,
    SummaryAgent,
    ToolRunError,
    Transcript,
    WorkflowEdit,
    WorkflowEditorAgent,
    WorkflowJsonError,
    workflow_from_json,
    workflow_to_json,
)
from application.framing import unframe
from application.scrubbing import scrubbed
from application.tools.approval import checked_decisions
from application.workflows.editor import WORKFLOW_EDITOR, waiting_edits
from domain import ChatError, ChatResponse, WholeAnswers, Workflow

if TYPE_CHECKING:
    from adapters.telemetry.console import SpanTreeRecorder

__all__ = ["run"]


# The offline stand-in accepts any key; the SDK insists on one.
_OFFLINE_KEY: Final = "sk-offline-stand-in"
_OFFLINE_NOTE: Final = (
    f"{PROG}: no gateway is configured (AGENT_BASE_URL): the offline stand-in answers, "
    "a rule-based model, not a language model"
)
# About four characters of English per token: good enough to say how big a transcript is.
_FINISH_REASONS: Final = {
    "length": "the output token limit was reached",
    "content_filter": "a content filter stopped it",
}


@attrs.frozen
class _Work:
    """Everything one run needs, checked before any request."""

    settings: Settings
    text: str
    workflow: Workflow | None = None
    instruction: str = ""
    output: AtomicOutput | None = None
    save_run: AtomicOutput | None = None
    state_output: AtomicOutput | None = None
    """``--state``: where a run that waits for approval is written."""
    state: RunState | None = None
    """``resume``: the paused run, and the decisions on its pending calls."""
    decisions: Mapping[str, ApprovalDecision] = attrs.field(factory=dict)
    transcript: Transcript | None = None
    """``summarize``: the transcript file as imported (its format read, its speakers named)."""


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    agent: dict[str, Any] = {}
    if args.streaming is not None:
        agent["use_streaming"] = args.streaming
    if args.trace:
        # The tree is drawn from the spans, so --trace switches the telemetry on for this run.
        agent["telemetry"] = True
    if args.scenario is not None:
        try:
            parse_model(f"{OFFLINE_MODEL}:{args.scenario}")
        except UnknownScenarioError as exc:
            raise ConfigurationError(f"--scenario: {exc}") from None
        agent["offline_scenario"] = args.scenario
    if getattr(args, "language", None) is not None:
        agent["summary_language"] = args.language
    if getattr(args, "record", None) is not None:
        agent["record_to"] = str(args.record)
    if getattr(args, "replay", None) is not None:
        replay = Path(args.replay)
        if not replay.exists():
            raise ConfigurationError(f"--replay {str(replay)!r}: no such cassette file or directory")
        agent["replay_from"] = str(replay)
    return {"agent": agent} if agent else {}


# The keys that say "this gateway": any of them given means the stand-in must not answer instead.
_GATEWAY_KEYS: Final = ("base_url", "api_key", "model")


def _gateway_keys_given(config: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    """Where each gateway key was given, the config file's ``agent`` section or an ``AGENT_*`` variable."""
    section = config.get("agent")
    section = section if isinstance(section, Mapping) else {}
    given = [f"agent.{key} in --config" for key in _GATEWAY_KEYS if section.get(key) is not None]
    return given + [f"AGENT_{key.upper()}" for key in _GATEWAY_KEYS if f"AGENT_{key.upper()}" in environ]


def _settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    config = load_config_file(args.config) if args.config is not None else {}
    settings = resolve_settings(config, environ, _overrides(args))
    agent = settings.agent
    given = _gateway_keys_given(config, environ)
    if not agent.base_url and not given and (missing := _uvicorn_missing()) is not None:
        # A plain `pip install` has no stand-in server: say what to install, before anything starts.
        raise ConfigurationError(
            f"the offline stand-in (no agent.base_url is set) cannot start: {missing}; "
            "or point AGENT_BASE_URL at a gateway"
        )
    if not agent.base_url and given:
        # A misspelt AGENT_BASE_URL must not end in a plausible answer from the rule-based stand-in.
        raise ConfigurationError(
            f"agent.base_url: not set, but {' and '.join(given)} {'is' if len(given) == 1 else 'are'}; "
            "set AGENT_BASE_URL (or agent.base_url in --config) to the gateway's URL, or unset "
            f"{'it' if len(given) == 1 else 'them'} to run the offline stand-in"
        )
    if agent.offline_scenario:
        try:
            parse_model(f"{OFFLINE_MODEL}:{agent.offline_scenario}")
        except UnknownScenarioError as exc:
            raise ConfigurationError(f"agent.offline_scenario: {exc}") from None
    if agent.base_url:
        if agent.offline_scenario:
            source = "--scenario" if args.scenario else "agent.offline_scenario"
            raise ConfigurationError(
                f"{source}: applies only to the offline stand-in, but agent.base_url is set "
                f"({shown_url(agent.base_url)})"
            )
        section = config.get("agent")
        if not (isinstance(section, Mapping) and section.get("model")) and not environ.get("AGENT_MODEL"):
            raise ConfigurationError(
                f"agent.model: not set; the gateway at {shown_url(agent.base_url)} needs a model name "
                "(env AGENT_MODEL, or agent.model in --config)"
            )
        if not agent.api_key:
            raise ConfigurationError(
                "agent.api_key: not set (env AGENT_API_KEY, or agent.api_key in --config); "
                f"the gateway at {shown_url(agent.base_url)} needs its key"
            )
    return settings


def _uvicorn_missing() -> str | None:
    from adapters.offline import uvicorn_missing

    return uvicorn_missing()


def _stdin() -> BinaryIO:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        # No standard input at all (a daemon, some CI runners): reading it fails like a closed file.
        return io.BytesIO()
    return stream  # type: ignore[no-any-return]  # sys.stdin.buffer is a BinaryIO; getattr loses it


def _save_run(args: argparse.Namespace, inputs: list[tuple[str, str]]) -> AtomicOutput | None:
    """--save-run, checked and opened before any request (like --output, never over an input file)."""
    if getattr(args, "save_run", None) is None:  # resume has no --save-run
        return None
    output = getattr(args, "output", None)
    if output is not None and os.path.realpath(output) == os.path.realpath(args.save_run):
        raise InputError(f"--save-run {str(args.save_run)!r}: is the --output file; name another")
    return AtomicOutput.open(args.save_run, inputs=inputs, option="--save-run")


def _work(args: argparse.Namespace, settings: Settings, console: Console) -> _Work:
    limit = settings.agent.max_transcript_bytes
    if args.command == "resume":
        return _resume_work(args, settings, console)
    if args.command == "summarize":
        text = read_text(args.transcript, "TRANSCRIPT_FILE", _stdin(), limit=limit)
        where = "(stdin)" if args.transcript == "-" else repr(args.transcript)
        if not text.strip():
            raise InputError(f"TRANSCRIPT_FILE {where}: empty; there is nothing to summarize")
        transcript = imported(text, f"TRANSCRIPT_FILE {where}", args, name=args.transcript, console=console)
        return _Work(
            settings,
            text,
            transcript=transcript,
            save_run=_save_run(args, [("TRANSCRIPT_FILE", args.transcript)]),
        )
    text = read_text(args.workflow, "WORKFLOW_JSON", _stdin(), limit=limit)
    try:
        workflow = workflow_from_json(text)
    except WorkflowJsonError as exc:
        where = "(stdin)" if args.workflow == "-" else repr(args.workflow)
        raise InputError(f"WORKFLOW_JSON {where}: {exc}") from None
    if not args.instruction.strip():
        raise InputError('INSTRUCTION: empty; say what to change, e.g. "remove Manual QA sign-off"')
    inputs = [("WORKFLOW_JSON", args.workflow)]
    output, save_run, state_output = _edit_outputs(args, inputs, state_inputs=inputs)
    return _Work(
        settings,
        text,
        workflow,
        args.instruction,
        output,
        save_run=save_run,
        state_output=state_output,
    )


def _state_output(args: argparse.Namespace, inputs: list[tuple[str, str]]) -> AtomicOutput | None:
    if args.state is None:
        return None
    return AtomicOutput.open(args.state, inputs=inputs, force=False, option="--state")


def _edit_outputs(
    args: argparse.Namespace, inputs: list[tuple[str, str]], *, state_inputs: list[tuple[str, str]]
) -> tuple[AtomicOutput | None, AtomicOutput | None, AtomicOutput | None]:
    """``edit-workflow``'s and ``resume``'s files, checked and opened before any request, in this order:
    --output (never over one of ``inputs`` without --force), --save-run (edit-workflow's) and --state
    (never over one of ``state_inputs``). When one cannot be opened, those opened before it are
    discarded, leaving no temporary file, and its :class:`InputError` goes on."""
    with contextlib.ExitStack() as opened:
        output = None
        if args.output is not None:
            output = AtomicOutput.open(args.output, inputs=inputs, force=args.force)
            opened.callback(output.discard)
        save_run = _save_run(args, inputs)
        if save_run is not None:
            opened.callback(save_run.discard)
        state_output = _state_output(args, state_inputs)
        opened.pop_all()
    return output, save_run, state_output


def _resume_work(args: argparse.Namespace, settings: Settings, console: Console) -> _Work:
    """The paused edit STATE_FILE holds, with its original workflow and instruction, and the decisions."""
    where = f"STATE_FILE {args.state_file!r}" if args.state_file != "-" else "STATE_FILE (stdin)"
    text = read_text(args.state_file, "STATE_FILE", _stdin(), limit=settings.agent.max_transcript_bytes)
    # Run documents are read and written only by resume and by an edit that waits: imported here.
    from application.documents import DocumentError, loads

    try:
        state = loads(text, secret=_state_secret(settings), max_bytes=settings.agent.max_transcript_bytes)
    except DocumentError as exc:
        raise InputError(f"{where}: not a stored run ({exc})") from None
    if not isinstance(state, RunState) or state.pipeline != WORKFLOW_EDITOR or not state.messages:
        raise InputError(
            f"{where}: not a workflow edit waiting for approval (edit-workflow --state writes one)"
        )
    try:
        # The edit's first message holds the workflow and the instruction as the run was given them.
        first = state.messages[0].text
        workflow = workflow_from_json(unframe(first, "workflow"))
        instruction = unframe(first, "instruction")
    except (ValueError, WorkflowJsonError):
        raise InputError(f"{where}: its first message does not hold a workflow and an instruction") from None
    try:
        # Asked about and decided: the held answer's own calls, never the state's say of them.
        requests = waiting_edits(state, settings.agent.approval_required_tools)
    except ValueError as exc:
        raise InputError(f"{where}: {exc}") from None
    decisions = _decisions(args, requests, state.workflow, console)
    # Writing the new paused run over the spent one is allowed: the old one must not be resumed again.
    output, _, state_output = _edit_outputs(args, [("STATE_FILE", args.state_file)], state_inputs=[])
    return _Work(
        settings,
        text,
        workflow,
        instruction,
        output,
        state_output=state_output,
        state=state,
        decisions=decisions,
    )


def _state_secret(settings: Settings) -> str | None:
    """``agent.state_secret``: what signs a kept paused run and must have signed one resumed."""
    return settings.agent.state_secret.reveal() or None


def _decisions(
    args: argparse.Namespace,
    requests: Sequence[ApprovalRequest],
    workflow: Workflow | None,
    console: Console,
) -> dict[str, ApprovalDecision]:
    """--approve and --deny on the waiting calls; on a terminal, the ones not named are asked about."""
    given: list[tuple[str, ApprovalDecision]] = [(call_id, Approve()) for call_id in args.approved]
    given += [(call_id, Deny(reason="denied with --deny")) for call_id in args.denied]
    pending = [request.call_id for request in requests]
    named = {call_id for call_id, _ in given}
    unnamed = [request for request in requests if request.call_id not in named]
    if unnamed and _on_terminal(console):
        for request in unnamed:
            console.ask(question(request, workflow))
            yes = sys.stdin.readline().strip().lower() in ("y", "yes")
            given.append(
                (request.call_id, Approve() if yes else Deny(reason="the person at the terminal said no"))
            )
    try:
        return checked_decisions(pending, given)
    except ValueError as exc:
        decide = " ".join(f"--approve {call_id}" for call_id in pending)
        raise InputError(f"--approve/--deny: {exc} (pending: {', '.join(pending)}; e.g. {decide})") from None


def _on_terminal(console: Console) -> bool:
    return sys.stdin is not None and sys.stdin.isatty() and console.stderr.isatty()


@contextlib.contextmanager
def _endpoint(settings: Settings, console: Console) -> Iterator[Settings]:
    """The settings to run with: the configured gateway, or an offline stand-in started here."""
    agent = settings.agent
    model = OFFLINE_MODEL + (f":{agent.offline_scenario}" if agent.offline_scenario else "")
    if agent.replay_from is not None:
        console.info(f"Endpoint: REPLAY of {agent.replay_from} (no gateway is asked)")
        # The model a request names is the one the recording named: the gateway's, or the stand-in's.
        yield settings if agent.base_url else attrs.evolve(settings, agent=attrs.evolve(agent, model=model))
        return
    if agent.base_url:
        console.info(f"Endpoint: {shown_url(agent.base_url)} (model {agent.model})")
        for number, fallback in enumerate(agent.fallbacks):
            name = fallback.name or fallback_name(number)
            console.info(f"Fallback {name}: {shown_url(fallback.base_url)} (model {fallback.model})")
        yield settings
        return
    # The stand-in's server and model are imported only when it answers.
    from adapters.offline import OfflineResponsesServer

    with OfflineResponsesServer(dialect=agent.offline_dialect) as server:
        if not console.chatty:
            # Even a script is told, in one line, that no language model answers (the banner says more).
            console.line(_OFFLINE_NOTE)
        console.info(
            f"Endpoint: OFFLINE stand-in at {server.base_url} (model {model})\n"
            "  A deterministic rule-based model, not a language model. To use a LiteLLM proxy\n"
            "  instead set AGENT_BASE_URL=http://127.0.0.1:4000/v1, AGENT_API_KEY and AGENT_MODEL\n"
            "  (or agent.* in --config)."
        )
        offline = attrs.evolve(
            agent, base_url=server.base_url, model=model, api_key=agent.api_key or Secret(_OFFLINE_KEY)
        )
        yield attrs.evolve(settings, agent=offline)


def _mode_line(settings: Settings) -> str:
    if settings.agent.use_streaming:
        return "Mode: streaming (ResponsesSseAdapter); --no-streaming or AGENT_USE_STREAMING=false switches"
    return "Mode: JSON (ResponsesJsonAdapter); --streaming or AGENT_USE_STREAMING=true switches"


def _span_recorder(args: argparse.Namespace) -> SpanTreeRecorder | None:
    """With ``--trace``, where the run's spans are kept; without the SDK a ConfigurationError (exit 2)."""
    if not args.trace:
        return None
    from adapters.telemetry import TracingUnavailableError, span_tree_recorder

    try:
        return span_tree_recorder()
    except TracingUnavailableError as exc:
        raise ConfigurationError(str(exc)) from None


def _import_the_runtime() -> None:
    """Import the SDK and the container now, once the input is checked and before the run's clock
    starts: they take seconds on a busy machine, which would otherwise read as the first round's
    (--help, --version and every bad-input error need neither)."""
    import adapters.container  # noqa: F401  # imported for its cost, used in _run


async def _run(
    command: str,
    work: _Work,
    settings: Settings,
    live: LiveRun,
    recorder: SpanTreeRecorder | None = None,
    approver: Approver | None = None,
) -> MeetingSummary | WorkflowEdit:
    """One run through the container's pipeline, each event shown by ``live``; the run's result."""
    # Imported by _import_the_runtime before the run's clock started; cached here.
    from dependency_injector import providers

    from adapters.container import Container

    container = Container()
    # Settings were resolved and checked once, above; the container builds everything else from them.
    container.settings.override(providers.Object(settings))
    if not live.streams_text:
        # Without --stream nothing of an answer is shown before it is whole, so the run need not stream
        # it; and an adapter asks again for a body broken in transit only while it has handed nothing
        # over, which an answer read whole never has.
        container.chat_decorators.add_args(providers.Object(WholeAnswers))
    if recorder is not None:
        container.tracer_provider.override(providers.Object(recorder.tracer_provider))
        container.meter_provider.override(providers.Object(recorder.meter_provider))
    if approver is not None:
        container.approver.override(providers.Object(approver))
    async with container:
        run: AsyncGenerator[RunEvent[MeetingSummary | WorkflowEdit], None]
        if command == "summarize":
            summarizer: SummaryAgent = container.summary_agent()
            run = summarizer.summarize_events(work.transcript if work.transcript is not None else work.text)
        elif work.state is not None:  # resume
            resumer: WorkflowEditorAgent = container.workflow_editor_agent()
            run = resumer.resume_events(work.state, work.decisions)
        else:
            assert work.workflow is not None  # _work reads a workflow for edit-workflow
            editor: WorkflowEditorAgent = container.workflow_editor_agent()
            run = editor.edit_events(work.workflow, work.instruction)
        result: MeetingSummary | WorkflowEdit | None = None
        # Closed on any way out, so an interrupted run closes its connection and runs no further tool.
        async with contextlib.aclosing(run) as events:
            async for event in events:
                if isinstance(event, RunFinished):
                    result = event.result
                else:
                    live.observe(event)
    assert result is not None  # every run's events end with RunFinished
    return result


# The setting behind each stop that is not a limit of agent.run_budget.
_STOP_SETTINGS: Final = {
    "deadline": "agent.run_deadline_seconds",
    "too_many_calls": "agent.max_calls_per_response",
    "budget.unmetered": "agent.run_budget.allow_unmetered",
}


def _incomplete(final: ChatResponse, stop_reason: str | None) -> str:
    if stop_reason is not None:
        limit = _STOP_SETTINGS.get(stop_reason, "agent.run_" + stop_reason)
        return f"the run stopped early at its limit ({stop_reason}: {limit}); what arrived is printed"
    reason = _FINISH_REASONS.get(final.finish_reason or "", "")
    return (
        "the model's answer is incomplete" + (f" ({reason})" if reason else "") + "; what arrived is printed"
    )


def _finish(
    args: argparse.Namespace,
    work: _Work,
    result: MeetingSummary | WorkflowEdit,
    console: Console,
    *,
    streamed: bool,
) -> int:
    """Print the result and say how it went: the exit code. ``streamed``: the text is out already."""
    # Secrets out before anything is cut to length for the report or written to --output.
    result = scrubbed(result, console.redact)
    as_json = args.format == "json"
    if isinstance(result, MeetingSummary):
        quoted = work.transcript.framed_lines() if args.quote and work.transcript is not None else None
        if as_json:
            console.result_json(summary_json(result))
        elif args.stream:
            console.result(("\n" if streamed else "") + summary_details(result, quoted))
        else:
            console.result(summary_text(result, quoted))
    else:
        assert work.workflow is not None  # an edit comes only from a workflow
        if as_json:
            console.result_json(edit_json(result))
        elif args.stream:
            console.result(("\n" if streamed else "") + edit_details(work.workflow, result))
        else:
            console.result(edit_text(work.workflow, result))
    console.info("\n" + usage_line(result.usage, len(result.run.responses)))
    if work.save_run is not None:
        unsaved = save_run(work.save_run, result, console.redactor)
        if unsaved is not None:
            console.error(unsaved)
            return EXIT_USAGE
        console.info(f"Saved the run to {work.save_run.target}")
    if isinstance(result, WorkflowEdit) and result.pending:
        return _waiting(result, work, console)
    if isinstance(result, MeetingSummary) and result.failed_chunks:
        missing = ", ".join(f"lines {first}-{last}" for first, last in result.failed_chunks)
        console.error(f"part of the meeting could not be summarized ({missing}); the rest is printed")
        return EXIT_INCOMPLETE
    if not result.complete:
        unwritten = "; --output not written" if work.output is not None else ""
        console.error(_incomplete(result.run.final, result.stop_reason) + unwritten)
        return EXIT_INCOMPLETE
    if isinstance(result, WorkflowEdit):
        assert work.workflow is not None  # as above
        why = why_not_carried_out(work.workflow, result, work.instruction)
        if why is not None:
            console.error(f"the instruction was not carried out, the workflow is unchanged: {why}")
            return EXIT_NOT_CARRIED_OUT
        if work.output is not None:
            try:
                work.output.commit(workflow_to_json(result.workflow) + "\n")
            except OSError as exc:
                console.error(f"--output {str(work.output.target)!r}: cannot be written ({exc.strerror})")
                return EXIT_USAGE
            console.info(f"Wrote the edited workflow to {work.output.target}")
    return EXIT_OK


def _waiting(edit: WorkflowEdit, work: _Work, console: Console) -> int:
    """Say that the edit waits for approval, keep it with --state, and say how to go on: exit code 5."""
    count = len(edit.pending)
    ids = ", ".join(request.call_id for request in edit.pending)
    unwritten = "; --output not written" if work.output is not None else ""
    waits = f"the edit waits for approval of {count} call{'s' if count != 1 else ''} ({ids}){unwritten}"
    if work.state_output is None or edit.state is None:
        console.error(
            f"{waits}; run it on a terminal to be asked, again with --approve all or --approve none, "
            "or with --state FILE to keep it and go on with resume"
        )
        return EXIT_WAITING
    target = work.state_output.target
    from application.documents import DocumentError, dumps

    try:
        work.state_output.commit(dumps(edit.state, secret=_state_secret(work.settings)) + "\n")
    except OSError as exc:
        console.error(f"--state {str(target)!r}: cannot be written ({exc.strerror})")
        return EXIT_USAGE
    except DocumentError as exc:
        # The model's answer holds a value nested deeper than any document can; like any file that
        # cannot be written, the command says so on one line.
        console.error(f"--state {str(target)!r}: cannot be written ({exc.problem})")
        return EXIT_USAGE
    first = edit.pending[0].call_id
    console.error(
        f"{waits}; kept in {target}: go on with {PROG} resume {target} --approve {first} (or --deny {first})"
    )
    return EXIT_WAITING


def _approver(args: argparse.Namespace, work: _Work, console: Console, live: LiveRun) -> Approver | None:
    """Who decides the edits that wait for approval: --approve, the person at the terminal, or nobody."""
    if args.command not in ("edit-workflow", "resume"):
        return None
    if args.command == "edit-workflow" and args.approve is not None:
        return fixed_approver(args.approve)
    if _on_terminal(console):
        # A resumed edit names its steps as its copy has them now.
        workflow = work.state.workflow if work.state is not None else work.workflow
        return TerminalApprover(console, live, sys.stdin, workflow)
    return None


def _command(
    args: argparse.Namespace, console: Console, environ: Mapping[str, str], *, owns_process: bool
) -> int:
    try:
        settings = _settings(args, environ)
        console.redactor = Redactor([environ.get("AGENT_API_KEY"), *settings.agent.secrets()])
        if args.command in ("batch", "worker", "batch-status"):
            return _batch_commands(args, console, settings)
        if args.command == "eval":
            from adapters.cli.meetings.evaluation import eval_command

            return eval_command(args, console, settings, _endpoint)
        work = _work(args, settings, console)
        recorder = _span_recorder(args)
    except (ConfigurationError, InputError) as exc:
        console.error(str(exc))
        return EXIT_USAGE
    with contextlib.ExitStack() as outputs:
        for output in (work.output, work.save_run, work.state_output):
            if output is not None:
                outputs.enter_context(output)
        long = long_transcripts([(None, len(work.text))], settings.agent.transcript_warning_chars)
        if args.command == "summarize" and long is not None:
            console.warning(long)
        with importing(owns_process):
            _import_the_runtime()
        # The endpoint, the run and the report all happen in one event-loop run: nothing is left for
        # this frame to do afterwards (coverage's tracer loses frames that wait across real socket I/O).
        return asyncio.run(_session(args, work, console, recorder))


def _batch_commands(args: argparse.Namespace, console: Console, settings: Settings) -> int:
    """``batch``, ``worker``, ``batch-status`` (meetings/batch.py): durable runs; only they import DBOS."""
    from adapters.cli.meetings.batch import batch_command, status_command, worker_command

    if args.command == "batch":
        return batch_command(args, console, settings, _stdin(), _endpoint)
    if args.command == "batch-status":
        return status_command(args, console)
    return worker_command(args, console, settings, _endpoint)


async def _session(
    args: argparse.Namespace, work: _Work, console: Console, recorder: SpanTreeRecorder | None = None
) -> int:
    """Start the endpoint, run the command and report: the exit code."""
    try:
        with _endpoint(work.settings, console) as running:
            console.info(_mode_line(running) + "\n")
            live = LiveRun(
                console,
                progress=console.stderr.isatty(),
                stream=args.stream,
                max_retries=running.agent.max_retries,
            )
            approver = _approver(args, work, console, live)
            try:
                async with live:
                    result = await _run(args.command, work, running, live, recorder, approver)
            except ChatError as exc:
                if _replay_mismatch(exc):
                    message, _, diff = str(exc).partition("\n")
                    console.error(message)
                    if diff:
                        console.block(console.redact(diff))
                    return EXIT_USAGE
                console.error(describe_failure(exc, running.agent, console.redact))
                console.details(failure_details(exc, console.redact))
                if work.save_run is not None and isinstance(exc, ToolRunError):
                    # The run up to the failure: what a host would need to look into it.
                    unsaved = save_run(work.save_run, exc.run, console.redactor)
                    if unsaved is not None:
                        console.error(unsaved)
                    else:
                        console.info(f"Saved the run so far to {work.save_run.target}")
                return EXIT_MODEL_FAILED
        return _finish(args, work, result, console, streamed=live.text.shown_any)
    finally:
        if recorder is not None:
            # Whatever the outcome: a failed run's tree shows where it failed.
            console.block("\nTrace (span, duration, tokens, error):\n" + recorder.render())
            recorder.shutdown()


def _replay_mismatch(error: ChatError) -> bool:
    """A request ``--replay``'s cassettes do not hold: bad input (exit 2), not a failed model."""
    from adapters.cassettes import ReplayMismatchError

    return isinstance(error, ReplayMismatchError)


def run(args: argparse.Namespace, environ: Mapping[str, str], *, owns_process: bool = False) -> int:
    """Run the parsed command and return its exit code; stdin, stdout and stderr are the ``sys`` streams.
    ``owns_process``: the command runs in a process of its own (see ``startup.importing``)."""
    stdout, stderr = sys.stdout, sys.stderr
    chatty = args.verbose or stderr.isatty()
    console = Console(stdout, stderr, verbose=args.verbose, chatty=chatty, environ=environ)
    with logging_to(console.line, verbose=args.verbose):
        try:
            return _command(args, console, environ, owns_process=owns_process)
        except KeyboardInterrupt:
            console.error("interrupted")
            return EXIT_INTERRUPTED
        except Exception as exc:
            # A bug of ours, not the model's or the user's: still one line, the traceback with -v.
            console.error(f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback)")
            console.details(failure_details(exc, console.redact))
            return EXIT_MODEL_FAILED
