"""The built-in dataset of ``meeting-agents eval`` is the grounding benchmark's meetings, label for label."""

from __future__ import annotations

from adapters.evals import BUILTIN_NAME, builtin_dataset
from benchmarks.eval_dataset import DATASET, dataset_text
from benchmarks.grounding import meetings


def test_the_built_in_dataset_is_the_grounding_benchmarks_meetings() -> None:
    # Regenerate with `python -m benchmarks.eval_dataset` when the benchmark's meetings change.
    assert DATASET.read_text(encoding="utf-8") == dataset_text()
    built_in = builtin_dataset()
    generated = meetings()
    assert [m.name for m in built_in] == [m.name for m in generated]
    assert [len(m.action_items) for m in built_in] == [len(m.items) for m in generated]
    assert BUILTIN_NAME
