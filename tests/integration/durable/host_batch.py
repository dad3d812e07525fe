"""A host's batch, in a process of its own (DBOS is a process-global), without the command line.

``python -m tests.integration.durable.host_batch DB_URL FILE...``: composes the durable engine
(``AGENT_*`` from the environment) with :func:`adapters.durable_composition.durable_engine`, runs every
file as one transcript and prints one JSON line: each transcript's status and summary's decisions, and
whether any module of ``adapters.cli`` was imported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path

from adapters.durable import Outcome
from adapters.durable_composition import durable_engine
from adapters.settings import resolve_settings


async def run(database_url: str, transcripts: dict[str, str]) -> dict[str, Outcome]:
    settings = resolve_settings(environ=os.environ)
    keys = {hashlib.sha256(text.encode()).hexdigest(): name for name, text in transcripts.items()}
    outcomes: dict[str, Outcome] = {}
    async with durable_engine(settings, database_url, "host@test") as engine:
        for sha256, name in keys.items():
            await engine.submit(sha256, transcripts[name])
        while len(outcomes) < len(keys):  # bounded by the test's process timeout
            for sha256, outcome in (await engine.take_finished()).items():
                outcomes[keys[sha256]] = outcome
            await engine.wait(0.25)
    return outcomes


def main(argv: list[str]) -> None:
    transcripts = {Path(name).name: Path(name).read_text(encoding="utf-8") for name in argv[1:]}
    outcomes = asyncio.run(run(argv[0], transcripts))
    cli = sorted(name for name in sys.modules if name == "adapters.cli" or name.startswith("adapters.cli."))
    shown = {
        name: {
            "status": outcome.status,
            "decisions": [item["text"] for item in (outcome.summary or {}).get("decisions", [])],
        }
        for name, outcome in outcomes.items()
    }
    print(json.dumps({"outcomes": shown, "cli_modules": cli}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
