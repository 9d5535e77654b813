"""How the views name and order a summary's cells: a row per depth (or per filler type and layout)."""

from __future__ import annotations

from typing import Any

from rotscope.position import OFFSET_PREFIX, Position


def depth_label(cell: dict[str, Any]) -> str:
    label = cell["position"] or Position(cell["depth"]).label
    return f"{cell['filler']} · {label}" if cell.get("filler") else label


def _offset(cell: dict[str, Any]) -> int | None:
    """The N of an ``@N`` cell (N filler tokens before the evidence at every length), else ``None``."""
    position = cell.get("position") or ""
    digits = position.removeprefix(OFFSET_PREFIX)
    return int(digits) if position.startswith(OFFSET_PREFIX) and digits.isdigit() else None


def row_key(cell: dict[str, Any]) -> tuple[str, float, str]:
    """Heatmap row of a cell: by filler type, then depth (named layouts in their family's order,
    which the summary gives as ``layout_order``). An ``@N`` offset is one row at every length (its
    fraction differs by length), after the fractions, labelled ``@N tokens``."""
    depth = cell["depth"]
    offset = _offset(cell)
    if offset is not None:
        label = f"{OFFSET_PREFIX}{offset:,} tokens"
        return (
            cell.get("filler") or "",
            2.0 + offset,
            f"{cell['filler']} · {label}" if cell.get("filler") else label,
        )
    if depth is None:  # an all-rejected offset cell: no prompt reached a depth
        order = float("inf")
    elif isinstance(depth, str):
        rank = cell.get("layout_order")
        order = float(rank) if rank is not None else float("inf")
    else:
        order = float(depth)
    return (cell.get("filler") or "", order, depth_label(cell))
