"""How the views name and order a summary's cells: a row per depth (or per filler type and layout)."""

from __future__ import annotations

from rotscope.position import OFFSET_PREFIX, Position
from rotscope.records.cells import Cell
from rotscope.records.run import CellOver


def depth_label(cell: Cell | CellOver) -> str:
    """A cell's position as named, else its depth to two places (a layout's name as it is)."""
    depth = cell.depth
    label = cell.position or (depth if isinstance(depth, str) else Position(depth).label)
    return f"{cell.filler} · {label}" if cell.filler else label


def _offset(cell: Cell) -> int | None:
    """The N of an ``@N`` cell (N filler tokens before the evidence at every length), else ``None``."""
    position = cell.position or ""
    digits = position.removeprefix(OFFSET_PREFIX)
    return int(digits) if position.startswith(OFFSET_PREFIX) and digits.isdigit() else None


def row_key(cell: Cell) -> tuple[str, float, str]:
    """Heatmap row of a cell: by filler type, then depth (named layouts in their family's order,
    which the summary gives as ``layout_order``). An ``@N`` offset is one row at every length (its
    fraction differs by length), after the fractions, labelled ``@N tokens``."""
    depth = cell.depth
    offset = _offset(cell)
    if offset is not None:
        label = f"{OFFSET_PREFIX}{offset:,} tokens"
        return (cell.filler or "", 2.0 + offset, f"{cell.filler} · {label}" if cell.filler else label)
    if depth is None:  # an all-rejected offset cell: no prompt reached a depth
        order = float("inf")
    elif isinstance(depth, str):
        rank = cell.layout_order
        order = float(rank) if rank is not None else float("inf")
    else:
        order = float(depth)
    return (cell.filler or "", order, depth_label(cell))
