"""Run the offline Responses endpoint on its own: ``python -m adapters.offline [--port N] [--dialect D]``."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Literal, TextIO

from adapters.offline.scenarios import OFFLINE_MODEL, SCENARIOS
from adapters.offline.server import OfflineResponsesServer


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.offline",
        description="Serve POST /v1/responses on 127.0.0.1 from the offline stand-in: a deterministic, "
        "rule-based model (not a language model) for demos and tests.",
        epilog=f"Fault scenarios, chosen per request with the model name {OFFLINE_MODEL}:<scenario>[+...]:\n"
        + "\n".join(f"  {name:<22} {text}" for name, text in SCENARIOS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    parser.add_argument(
        "--dialect", choices=("openai", "litellm"), default="openai", help="event-stream dialect"
    )
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda signum, frame: stop.set())
    return serve(port=args.port, dialect=args.dialect, stop=stop, out=sys.stdout)


def serve(*, port: int, dialect: Literal["openai", "litellm"], stop: threading.Event, out: TextIO) -> int:
    """Serve until ``stop`` is set, saying where on ``out``."""
    with OfflineResponsesServer(port=port, dialect=dialect) as server:
        print(f"Offline Responses endpoint (a rule-based stand-in) listening at {server.base_url}", file=out)
        print(
            f"Use it with AGENT_BASE_URL={server.base_url} AGENT_MODEL={OFFLINE_MODEL} "
            "AGENT_API_KEY=sk-offline (any key will do); stop with Ctrl-C.",
            file=out,
            flush=True,
        )
        stop.wait()
    print(f"Stopped after {len(server.requests)} requests.", file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
