"""The command's grammar: global options that mean the same before or after the subcommand."""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Final, NoReturn

from adapters.offline import SCENARIOS

APPROVE_CHOICES: Final = ("all", "none")

__all__ = ["FORMATS", "CommandLineError", "parse_arguments", "program_version"]

PROG: Final = "meeting-agents"
FORMATS: Final = ("text", "json")
DISTRIBUTION: Final = "meeting-assistant-agents"

EPILOG: Final = """\
Options before or after the command mean the same; given twice, the later one wins.

Output: stdout carries only the result (text, or one JSON object with --format json). Errors and
warnings go to stderr, one line each; the endpoint banner and token usage too, when stderr is a
terminal or with -v. While the model works, a terminal's stderr shows one live line (the round, the
tool calls answered and refused, the time, a failed attempt being retried), erased at the end; a
script's stderr gets none of it. --stream prints the model's text on stdout as it arrives, then the
rest of the result; it cannot be combined with --format json (exit 2).

--stream and --streaming are two different things: --stream is how the result is printed (text as
it arrives); --streaming/--no-streaming is how each answer travels from the gateway (an SSE event
stream, the default, or one JSON document), which changes nothing in the result. --stream works
with either.

Exit codes:
  0    done
  1    the model or the gateway failed (one line naming what failed and where; -v for details)
  2    bad input or configuration, found before any request (unreadable or non-UTF-8 file, empty
       transcript or instruction, unusable --output, bad URL, unknown key or value)
  3    the model's answer was incomplete: what arrived is printed, stderr says so (eval: a
       --min-precision or --min-recall missed)
  4    edit-workflow: the instruction was not carried out and the workflow is unchanged; stderr
       says why (no such step, several steps match, the model's edits all failed, nothing understood)
  5    edit-workflow, resume: the run waits for approval of an edit (remove_step by default): not
       on a terminal and no --approve all|none; --state FILE keeps it for `resume FILE`
  130  interrupted (Ctrl-C)

Without agent.base_url (env AGENT_BASE_URL) the command starts a built-in OFFLINE stand-in:
a deterministic, rule-based model on 127.0.0.1, not a language model. Point it at a LiteLLM
proxy with AGENT_BASE_URL=http://127.0.0.1:4000/v1 AGENT_API_KEY=... AGENT_MODEL=...

Offline scenarios (--scenario NAME, several as a+b, NAME*N for the first N requests only):
"""


class CommandLineError(Exception):
    """The command line itself is wrong (unknown option, missing argument): exit code 2, one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse prints the whole usage first; one line that says what is wrong and where help is
        # keeps "one line per failure" true for the command line itself.
        raise CommandLineError(f"{message} (see {PROG} --help)")


class _OnDemand:
    """An option's ``choices``, loaded each time argparse reads them (a subcommand's help, a value to
    check): building the parser, which every run and ``--version`` do, imports none of the application."""

    def __init__(self, load: Callable[[], Sequence[str]]) -> None:
        self._load = load

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __contains__(self, value: object) -> bool:
        return value in self._load()


def _input_formats() -> Sequence[str]:
    from application.meetings.transcripts import FORMATS

    return FORMATS


def program_version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _add_global_options(parser: argparse.ArgumentParser, *, copy: bool) -> None:
    """The options that work anywhere. On a subcommand's copy nothing has a default, so a value
    given before the subcommand is not overwritten by the copy's default."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if copy else value

    parser.add_argument(
        "--config", type=Path, metavar="FILE", default=default(None), help="a YAML or TOML config file"
    )
    parser.add_argument(
        "--streaming",
        action=argparse.BooleanOptionalAction,
        default=default(None),
        help="answers travel as an SSE event stream (the SSE adapter, the default) or, with "
        "--no-streaming, as one JSON document (the JSON adapter); not --stream, which is about printing",
    )
    parser.add_argument(
        "--scenario",
        metavar="NAME",
        default=default(None),
        help=f"a fault scenario of the offline stand-in, e.g. malformed-arguments ({PROG} --help lists them)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default(False),
        help="log each request, and show the details of a failure",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        default=default(False),
        help="print the run's OpenTelemetry span tree on stderr (needs the SDK: the cli extra)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=default("text"),
        help="text for people (the default) or one JSON object on stdout",
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        default=default(False),
        help="print the model's text on stdout as it arrives, then the rest of the result (--format text); "
        "not --streaming, which is about how answers travel",
    )


def _parser() -> argparse.ArgumentParser:
    scenarios = "\n".join(f"  {name:<22} {text}" for name, text in SCENARIOS.items())
    parser = _Parser(
        prog=PROG,
        description="Meeting Assistant agents over an OpenAI Responses endpoint (a LiteLLM gateway).",
        epilog=EPILOG + scenarios,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {program_version()}")
    _add_global_options(parser, copy=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_command(
        commands,
        "summarize",
        _summarize_arguments,
        summary="summarize a meeting transcript",
        description="Summarize a meeting transcript: summary text, action items and decisions.",
        epilog="Exit codes: 0 done, 1 model or gateway failed, 2 bad input, 3 incomplete answer, 130 Ctrl-C.",
    )
    _add_command(
        commands,
        "edit-workflow",
        _edit_arguments,
        summary="edit a workflow from a plain instruction",
        description="Edit a workflow (JSON: {name, steps: [{id, name, kind}]}) as a plain instruction says.",
        epilog=(
            "Exit codes: 0 done, 1 model or gateway failed, 2 bad input, 3 incomplete answer, "
            "4 instruction not carried out (workflow unchanged; stderr says why), 5 waiting for "
            "approval, 130 Ctrl-C.\n"
            "--output is written only on exit code 0.\n"
            "Edits of the tools in agent.approval_required_tools (remove_step by default) wait for "
            "approval: on a terminal the command asks (default No); --approve all or --approve none "
            "decides without asking; otherwise the command stops with exit code 5, writing the paused "
            f"run to --state FILE, and `{PROG} resume FILE --approve CALL_ID --deny CALL_ID` goes on."
        ),
    )
    _add_command(
        commands,
        "resume",
        _resume_arguments,
        summary="go on with an edit that waits for approval (written by --state)",
        description=(
            "Go on with a workflow edit that stopped for approval, from the file edit-workflow --state "
            "wrote: each waiting call is approved (--approve CALL_ID) or denied (--deny CALL_ID); on a "
            "terminal the command asks about the ones not named. The file is left as it was: it is spent "
            "once resumed (resuming it again asks the model again)."
        ),
        epilog=(
            "Exit codes: as edit-workflow: 0 done, 1 model or gateway failed, 2 bad input (a file that "
            "is not a paused edit; a call id unknown, given twice or left undecided), 3 incomplete "
            "answer, 4 instruction not carried out, 5 waiting for approval again, 130 Ctrl-C."
        ),
    )
    _add_command(
        commands,
        "batch",
        _batch_arguments,
        summary="summarize many transcripts, durably: a second run finishes what a crash left",
        description=(
            "Summarize every transcript (files, folders of *.txt and *.md, - for a list of paths on stdin)\n"
            "into --out DIR: DIR/<name>.json per transcript and DIR/index.jsonl. Each transcript is a\n"
            "DBOS workflow keyed by its text and what changes its summary (model, instructions, tools,\n"
            "settings), kept in --db: killed and run again, the command finishes\n"
            "what is left and sends no completed request again."
        ),
        epilog=(
            "Exit codes: 0 all done, 1 any failed (the rest still written), 2 bad input, "
            "3 any incomplete, 130 Ctrl-C (run it again to go on)."
        ),
    )
    _add_command(
        commands,
        "worker",
        _worker_arguments,
        summary="take transcripts from a shared batch queue (--db postgresql://...) until stopped",
        description="Work the queue of `batch --db postgresql://...` here until Ctrl-C or SIGTERM.",
        epilog="Exit codes: 0 stopped by SIGTERM, 2 bad input, 130 Ctrl-C.",
        cassettes=False,
    )
    _add_command(
        commands,
        "batch-status",
        _status_arguments,
        summary="list the meetings of a run database: done, failed (and why), pending and running",
        description="Read a batch's run database (--db) and list its meetings by state, with their totals.",
        epilog="Exit codes: 0 listed, 2 bad input (a database that cannot be read).",
        cassettes=False,
        raw=False,
    )
    _add_command(
        commands,
        "eval",
        _eval_arguments,
        summary="summarize labelled meetings and report precision and recall",
        description=(
            'Summarize every meeting of DATASET (JSON lines: {"transcript", "action_items": [{"owner",\n'
            '"task"}], "decisions": [...]}; without DATASET the built-in labelled meetings) and report, per\n'
            "meeting and in total, precision and recall of action items and decisions, the share of calls\n"
            "refused as ungrounded, requests, tokens, cost and time."
        ),
        epilog="Exit codes: 0 done, 2 bad input (or a request --replay does not hold), 3 a --min-* line "
        "missed.",
    )
    return parser


def _add_command(
    commands: argparse._SubParsersAction[_Parser],
    name: str,
    arguments: Callable[[argparse.ArgumentParser], None],
    *,
    summary: str,
    description: str,
    epilog: str,
    cassettes: bool = True,
    raw: bool = True,
) -> None:
    """A subcommand: its own arguments, then --record/--replay (unless it sends no request of its own) and
    the global options, so that every command takes them the same way. ``raw`` keeps the description's
    and epilog's line breaks as written."""
    command = commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter if raw else argparse.HelpFormatter,
    )
    arguments(command)
    if cassettes:
        _add_cassette_options(command)
    _add_global_options(command, copy=True)


def _summarize_arguments(summarize: argparse.ArgumentParser) -> None:
    summarize.add_argument(
        "transcript",
        metavar="TRANSCRIPT_FILE",
        help="a UTF-8 transcript (a BOM is fine): plain text, WebVTT, SRT or diarized JSON; - reads stdin",
    )
    _add_input_options(summarize)
    _add_language_option(summarize)
    summarize.add_argument(
        "--quote",
        action="store_true",
        help="print the transcript lines each action item and decision cites under it (--format text)",
    )
    _add_save_run(summarize)


def _edit_arguments(edit: argparse.ArgumentParser) -> None:
    edit.add_argument("workflow", metavar="WORKFLOW_JSON", help="the workflow file; - reads stdin")
    edit.add_argument("instruction", metavar="INSTRUCTION", help='e.g. "remove Manual QA sign-off"')
    _add_output_options(edit, replaced="the WORKFLOW_JSON file")
    edit.add_argument(
        "--approve",
        choices=APPROVE_CHOICES,
        help="decide the edits that wait for approval without asking: all run, or none does",
    )
    _add_save_run(edit)
    _add_state_option(edit)


def _add_output_options(parser: argparse.ArgumentParser, *, replaced: str) -> None:
    """``--output FILE`` for the edited workflow, and ``--force`` to let it replace the file read."""
    parser.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write the edited workflow here, atomically (checked before any request)",
    )
    parser.add_argument("--force", action="store_true", help=f"allow --output to replace {replaced} itself")


def _add_cassette_options(parser: argparse.ArgumentParser) -> None:
    """``--record DIR`` and ``--replay DIR``: a run's exchanges kept as a cassette, or answered from one."""
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="write every request and answer of the run to a cassette in DIR (JSON lines, secrets cut; "
        "it holds the run's content)",
    )
    parser.add_argument(
        "--replay",
        type=Path,
        metavar="DIR",
        help="answer from the cassettes in DIR (or one cassette file) with no gateway; a request they do "
        "not hold exits 2 with a diff",
    )


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def _eval_arguments(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument("dataset", nargs="?", type=Path, metavar="DATASET", help="a JSON-lines file")
    evaluate.add_argument(
        "--min-precision",
        type=_share,
        metavar="P",
        help="exit 3 when action items' or decisions' precision is below P",
    )
    evaluate.add_argument(
        "--min-recall",
        type=_share,
        metavar="R",
        help="exit 3 when action items' or decisions' recall is below R",
    )
    evaluate.add_argument(
        "--judge-model",
        metavar="MODEL",
        help="also ask MODEL, through the same gateway, to score each summary's completeness and "
        "faithfulness",
    )


def _speaker(text: str) -> tuple[str, str]:
    """An argparse type: ``LABEL=NAME``, both given."""
    label, equals, name = text.partition("=")
    if not equals or not label.strip() or not name.strip():
        raise argparse.ArgumentTypeError(f"expected LABEL=NAME (e.g. SPEAKER_00=Ana Souza), got {text!r}")
    return label.strip(), name.strip()


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    """How a transcript file is read: its format (found from its content unless forced) and its speakers."""
    input_format = parser.add_argument(
        "--input-format", help="read the transcript as this format instead of the one its content shows"
    )
    # Given after add_argument, which formats the option once to check it: the formats are then read
    # only by the help that shows them and by a value to check.
    input_format.choices = _OnDemand(_input_formats)
    parser.add_argument(
        "--speaker",
        dest="speakers",
        action="append",
        type=_speaker,
        default=[],
        metavar="LABEL=NAME",
        help="name a diarization label (SPEAKER_00, spk_0) as the person it is; repeatable",
    )


def _language(text: str) -> str:
    from application.meetings.language import summary_language

    try:
        return summary_language(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_language_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--language",
        type=_language,
        metavar="TAG",
        help="write the summary and its items in this language (a BCP 47 tag: fr, de, pt-BR), whatever the"
        " transcript's; auto (the default, agent.summary_language) keeps the transcript's",
    )


def _add_state_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="when the run waits for approval, write it here (a run document) for resume; exit code 5",
    )


def _resume_arguments(resume: argparse.ArgumentParser) -> None:
    resume.add_argument("state_file", metavar="STATE_FILE", help="the paused run, as --state wrote it")
    resume.add_argument(
        "--approve", dest="approved", action="append", default=[], metavar="CALL_ID", help="run this call"
    )
    resume.add_argument(
        "--deny", dest="denied", action="append", default=[], metavar="CALL_ID", help="do not run this call"
    )
    _add_output_options(resume, replaced="STATE_FILE")
    _add_state_option(resume)


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse type: a finite number above zero."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (0 < value < float("inf")):
            raise argparse.ArgumentTypeError(f"expected a number above zero, got {text!r}")
        return value

    return parse


def _batch_arguments(batch: argparse.ArgumentParser) -> None:
    batch.add_argument("paths", nargs="+", metavar="PATH", help="a transcript, a folder of them, or -")
    _add_input_options(batch)
    _add_language_option(batch)
    batch.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the summaries go")
    batch.add_argument(
        "--db",
        metavar="URL",
        help="the run database (default sqlite:///DIR/.runs.sqlite; postgresql://... to share)",
    )
    batch.add_argument("--id", metavar="NAME", help="this process's executor id (default batch@HOSTNAME)")
    batch.add_argument(
        "--max-cost",
        type=_positive(float),
        metavar="USD",
        help="the batch's budget: once its transcripts have cost this much, no other starts",
    )
    batch.add_argument(
        "--max-tokens",
        type=_positive(int),
        metavar="N",
        help="the same in tokens (input and output) across the batch",
    )
    again = batch.add_mutually_exclusive_group()
    again.add_argument(
        "--rerun",
        action="store_true",
        help="summarize every transcript again, from the start, even those a run with the same key finished",
    )
    again.add_argument(
        "--retry",
        action="append",
        metavar="KEY",
        help=(
            "run only this meeting again, from the start (its key as index.jsonl and batch-status show it, "
            "its first 8+ characters, or its source); the others stay as recorded (repeatable)"
        ),
    )


def _worker_arguments(worker: argparse.ArgumentParser) -> None:
    worker.add_argument(
        "--db", metavar="URL", required=True, help="the shared run database: postgresql://..."
    )
    worker.add_argument(
        "--id",
        metavar="NAME",
        help="this worker's executor id, unique among live processes (default worker@HOSTNAME)",
    )


def _status_arguments(status: argparse.ArgumentParser) -> None:
    status.add_argument(
        "--db", metavar="URL", required=True, help="the run database: sqlite:///... or postgresql://..."
    )


def _add_save_run(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--save-run",
        type=Path,
        metavar="FILE",
        help=(
            "write the whole run here, atomically, as a run document that application.loads reads back "
            "(checked before any request; written whenever the run ends, a failed one included)"
        ),
    )


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; raises :class:`CommandLineError`, or SystemExit(0) for --help/--version."""
    args = _parser().parse_args(argv)
    if args.stream and args.format == "json":
        # One JSON object on stdout has no place for text that arrives before it.
        raise CommandLineError(
            "--stream prints text as it arrives and --format json prints one JSON object; use one of them "
            f"(see {PROG} --help)"
        )
    return args
