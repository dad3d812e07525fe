"""What a benchmark run prints: the plain-text table of its checks, each against its target."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.harness import Check

__all__ = ["render_table"]


def render_table(checks: Sequence[Check]) -> str:
    """A plain-text table: per check its value, spread of runs, target and verdict; details underneath."""
    rows = [("benchmark", "value", "spread", "target", "verdict")]
    rows += [(c.name, f"{c.value:.3f} {c.unit}", c.spread or "-", c.target, c.verdict) for c in checks]
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * width for width in widths))
    lines.append("")
    lines += [f"- {c.name}: {c.detail}" for c in checks if c.detail]
    return "\n".join(lines)
