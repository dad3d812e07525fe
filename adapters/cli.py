"""The ``meeting-agents`` command: summarize a transcript or edit a workflow through the container."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from dependency_injector import providers

from adapters.container import Container
from adapters.offline import OFFLINE_MODEL, SCENARIOS, OfflineResponsesServer
from adapters.settings import ConfigurationError, Settings, load_config_file, resolve_settings
from application import ToolCallRecord, WorkflowJsonError, workflow_from_json, workflow_to_json
from domain import ChatError, ChatResponse, Usage

__all__ = ["main"]

EXIT_OK = 0
EXIT_MODEL_FAILED = 1
EXIT_USAGE = 2

_OFFLINE_KEY = "sk-offline-stand-in"


class _UsageError(Exception):
    """Bad input from the command line: reported as one line with exit code 2."""


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", type=Path, metavar="FILE", help="a YAML or TOML config file")
    common.add_argument(
        "--streaming",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="use the SSE adapter (default) or, with --no-streaming, the JSON adapter",
    )
    common.add_argument(
        "--scenario",
        metavar="NAME",
        help="a fault scenario of the offline endpoint (e.g. malformed-arguments); see the list below",
    )
    common.add_argument("-v", "--verbose", action="store_true", help="log requests and show error details")

    scenarios = "\n".join(f"  {name:<22} {text}" for name, text in SCENARIOS.items())
    parser = argparse.ArgumentParser(
        prog="meeting-agents",
        description="Meeting Assistant agents over an OpenAI Responses endpoint (a LiteLLM gateway).",
        epilog=(
            "Without agent.base_url (env AGENT_BASE_URL) the command starts a built-in OFFLINE stand-in:\n"
            "a deterministic, rule-based model on 127.0.0.1, not a language model. Point it at a LiteLLM\n"
            "proxy with AGENT_BASE_URL=http://127.0.0.1:4000/v1 AGENT_API_KEY=... AGENT_MODEL=...\n\n"
            f"Offline scenarios:\n{scenarios}"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    summarize = commands.add_parser(
        "summarize",
        parents=[common],
        help="summarize a meeting transcript",
        description="Summarize a transcript.",
    )
    summarize.add_argument("transcript", type=Path, metavar="TRANSCRIPT_FILE")
    edit = commands.add_parser(
        "edit-workflow",
        parents=[common],
        help="edit a workflow from a plain instruction",
        description="Edit a workflow.",
    )
    edit.add_argument("workflow", type=Path, metavar="WORKFLOW_JSON")
    edit.add_argument("instruction", metavar="INSTRUCTION")
    edit.add_argument("--output", type=Path, metavar="FILE", help="write the edited workflow JSON here")
    return parser


def _flag_overrides(args: argparse.Namespace) -> dict[str, Any]:
    agent: dict[str, Any] = {}
    if args.streaming is not None:
        agent["use_streaming"] = args.streaming
    if args.scenario is not None:
        if args.scenario not in SCENARIOS and not _is_scenario_list(args.scenario):
            raise _UsageError(
                f"--scenario: unknown scenario {args.scenario!r}; known: {', '.join(SCENARIOS)}"
            )
        agent["offline_scenario"] = args.scenario
    return {"agent": agent} if agent else {}


def _is_scenario_list(value: str) -> bool:
    return all(part.split("*", 1)[0] in SCENARIOS for part in value.split("+"))


@contextlib.contextmanager
def _endpoint(settings: Settings, out: TextIO) -> Iterator[dict[str, Any]]:
    """Yield the overrides that point the container at the configured gateway or at the offline stand-in."""
    agent = settings.agent
    if agent.base_url:
        if agent.offline_scenario:
            raise _UsageError("--scenario: applies only to the offline endpoint, but agent.base_url is set")
        out.write(f"Endpoint: {agent.base_url} (model {agent.model})\n")
        yield {}
        return
    model = OFFLINE_MODEL + (f":{agent.offline_scenario}" if agent.offline_scenario else "")
    with OfflineResponsesServer(dialect=agent.offline_dialect) as server:
        out.write(
            f"Endpoint: OFFLINE stand-in at {server.base_url} (model {model})\n"
            "  A deterministic rule-based model, not a language model. To use a LiteLLM proxy\n"
            "  instead set AGENT_BASE_URL=http://127.0.0.1:4000/v1, AGENT_API_KEY and AGENT_MODEL\n"
            "  (or agent.* in --config).\n"
        )
        api_key = agent.api_key.reveal() or _OFFLINE_KEY
        yield {"agent": {"base_url": server.base_url, "model": model, "api_key": api_key}}


def _merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    return {"agent": {**a.get("agent", {}), **b.get("agent", {})}}


def _usage_line(usage: Usage | None, run: ChatResponse) -> str:
    requests = sum(1 for m in run.messages if m.role == "assistant")
    if usage is None:
        return f"Token usage: not reported ({requests} model turns)"
    parts = [f"input {usage.input_tokens}", f"output {usage.output_tokens}", f"total {usage.total_tokens}"]
    if usage.reasoning_tokens:
        parts.append(f"reasoning {usage.reasoning_tokens}")
    return f"Token usage: {', '.join(parts)} ({requests} model turns)"


def _tool_lines(records: Sequence[ToolCallRecord]) -> list[str]:
    guarded = sum(1 for r in records if r.guarded)
    lines = [f"Tool calls ({len(records)}, {guarded} guarded)"]
    for record in records:
        call, result = record.call, record.result
        if record.guarded:
            kind = call.parse_error.kind if call.parse_error else "invalid"
            lines.append(
                f"  GUARDED {call.name} [{call.call_id}]: arguments rejected ({kind}, "
                f"{len(call.raw_arguments)} chars); not run, the model got invalid_tool_arguments"
            )
        elif result.is_error:
            code = result.result.get("error") if isinstance(result.result, Mapping) else "error"
            lines.append(f"  error   {call.name}({_compact(call.arguments)}) -> {code}")
        else:
            lines.append(f"  ok      {call.name}({_compact(call.arguments)})")
    return lines


def _compact(arguments: Mapping[str, object] | None) -> str:
    if not arguments:
        return ""
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in arguments.items())
    return text if len(text) <= 100 else text[:97] + "..."


def _mode_line(settings: Settings) -> str:
    adapter = "ResponsesSseAdapter" if settings.agent.use_streaming else "ResponsesJsonAdapter"
    mode = "streaming" if settings.agent.use_streaming else "JSON"
    return f"Mode: {mode} ({adapter}); set AGENT_USE_STREAMING or --streaming/--no-streaming to switch\n"


async def _summarize(container: Container, transcript: str, out: TextIO) -> None:
    summary = await container.summary_agent().summarize(transcript)
    out.write("\nSummary\n")
    out.write("".join(f"  {line}\n" for line in summary.text.splitlines() or ["(no summary text)"]))
    out.write(f"\nAction items ({len(summary.action_items)})\n")
    for n, item in enumerate(summary.action_items, 1):
        due = f" (due {item.due})" if item.due else ""
        out.write(f"  {n}. {item.owner}: {item.task}{due}\n")
    out.write(f"\nDecisions ({len(summary.decisions)})\n")
    out.write("".join(f"  {n}. {decision}\n" for n, decision in enumerate(summary.decisions, 1)))
    out.write("\n" + "\n".join(_tool_lines(summary.tool_calls)) + "\n")
    out.write(_usage_line(summary.run.usage, summary.run) + "\n")


async def _edit(
    container: Container, workflow_text: str, instruction: str, output: Path | None, out: TextIO
) -> None:
    try:
        workflow = workflow_from_json(workflow_text)
    except WorkflowJsonError as exc:
        raise _UsageError(f"WORKFLOW_JSON: {exc}") from None
    edit = await container.workflow_editor_agent().edit(workflow, instruction)
    before = workflow_to_json(workflow).splitlines()
    after = workflow_to_json(edit.workflow).splitlines()
    diff = list(difflib.unified_diff(before, after, "before", "after", lineterm=""))
    out.write("\nModel: " + (edit.text or "(no text)") + "\n\nWorkflow changes\n")
    out.write("".join(f"  {line}\n" for line in diff) if diff else "  (no change)\n")
    if output is not None:
        await asyncio.to_thread(output.write_text, workflow_to_json(edit.workflow) + "\n", encoding="utf-8")
        out.write(f"Wrote the edited workflow to {output}\n")
    out.write("\n" + "\n".join(_tool_lines(edit.tool_calls)) + "\n")
    out.write(_usage_line(edit.run.usage, edit.run) + "\n")


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _UsageError(f"{what}: cannot read {str(path)!r} ({exc.strerror})") from None


def _describe_chat_error(error: ChatError) -> str:
    context = [
        f"{name} {value}"
        for name, value in (("response", error.response_id), ("request", error.request_id))
        if value
    ]
    where = f" ({', '.join(context)})" if context else ""
    return f"{type(error).__name__}: {error.message}{where}"


async def _run(
    args: argparse.Namespace, text: str, settings: Settings, config: dict[str, Any], flags: dict[str, Any]
) -> None:
    out = sys.stdout
    with _endpoint(settings, out) as endpoint:
        container = Container()
        container.config.from_dict(config)
        container.overrides.override(providers.Object(_merge(flags, endpoint)))
        async with container:
            out.write(_mode_line(container.settings()))
            if args.command == "summarize":
                await _summarize(container, text, out)
            else:
                await _edit(container, text, args.instruction, args.output, out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (0 done, 1 the model or gateway failed, 2 bad input)."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = load_config_file(args.config) if args.config else {}
        flags = _flag_overrides(args)
        settings = resolve_settings(config, os.environ, flags)
        if args.command == "summarize":
            text = _read(args.transcript, "TRANSCRIPT_FILE")
        else:
            text = _read(args.workflow, "WORKFLOW_JSON")
        asyncio.run(_run(args, text, settings, config, flags))
    except (ConfigurationError, _UsageError) as exc:
        print(f"meeting-agents: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ChatError as exc:
        print(f"meeting-agents: error: {_describe_chat_error(exc)}", file=sys.stderr)
        if args.verbose:
            partial = exc.run or exc.partial
            if partial is not None and partial.text:
                print(f"  what had arrived: {partial.text[:500]}", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)
        return EXIT_MODEL_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
