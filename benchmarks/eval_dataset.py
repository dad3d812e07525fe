"""``python -m benchmarks.eval_dataset``: writes the grounding benchmark's labelled meetings as the
built-in dataset of ``meeting-agents eval`` (``adapters/evals/meetings.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Final

from benchmarks.grounding import meetings

DATASET: Final = Path(__file__).resolve().parents[1] / "adapters" / "evals" / "meetings.jsonl"


def dataset_text() -> str:
    """The dataset's JSON lines: each meeting's name, transcript and labels."""
    lines = []
    for meeting in meetings():
        lines.append(
            json.dumps(
                {
                    "name": meeting.name,
                    "transcript": meeting.transcript,
                    "action_items": [{"owner": item.owner, "task": item.task} for item in meeting.items],
                    "decisions": [choice.text for choice in meeting.decisions],
                },
                ensure_ascii=False,
            )
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    DATASET.write_text(dataset_text(), encoding="utf-8")
    print(f"wrote {DATASET}")


if __name__ == "__main__":
    main()
