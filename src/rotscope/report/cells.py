"""How the views name and order a summary's cells: a row per depth (or per filler type and layout)."""

from __future__ import annotations

from typing import Any

from rotscope.tasks.reasoning.family import LAYOUT_COPIES

LAYOUT_ORDER = list(LAYOUT_COPIES)


def depth_label(cell: dict[str, Any]) -> str:
    label = cell["position"] or f"{cell['depth']:.2f}"
    return f"{cell['filler']} · {label}" if cell.get("filler") else label


def row_key(cell: dict[str, Any]) -> tuple[str, float, str]:
    """Heatmap row of a cell: by filler type, then depth (layout names in their canonical order)."""
    depth = cell["depth"]
    if isinstance(depth, str):
        order = float(LAYOUT_ORDER.index(depth) if depth in LAYOUT_ORDER else len(LAYOUT_ORDER))
    else:
        order = float(depth)
    return (cell.get("filler") or "", order, depth_label(cell))
