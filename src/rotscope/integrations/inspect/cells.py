"""A cell's name in Inspect's metrics, the same for a live Inspect task and an exported run."""

from __future__ import annotations


def cell_label(task: str, length: int, depth: float | str | None, position: str | None,
               filler: str | None = None) -> str:  # fmt: skip
    """Task, length and position (its name, else its depth), and a layout's filler type if any:
    ``niah 512 midpoint``, ``niah 512 0.25``."""
    where = position if position is not None else (f"{depth:g}" if isinstance(depth, float) else str(depth))
    return " ".join([task, str(length), where, *([filler] if filler else [])])
