"""Accuracy by separation (``placement.separations``): a task's probes at each distance between
the facts it combines, every length pooled and then per length, with the statistics and the
clustered interval of a cell (``analysis.cells.cell_stats``) as depth is analysed."""

from __future__ import annotations

from rotscope.analysis.cells import cell_stats
from rotscope.records.cells import SeparationCell
from rotscope.rows import Row, group_by


def _mean(values: list[int]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _order(separation: int | float) -> tuple[bool, float]:
    """Token counts first, then shares, each ascending."""
    return isinstance(separation, float), float(separation)


def _cell(task: str, separation: int | float, length: int | None, rows: list[Row]) -> SeparationCell:
    asked = [row["separation_asked"] for row in rows if row.get("separation_asked") is not None]
    measured = [row["separation_tokens"] for row in rows if row.get("separation_tokens") is not None]
    return SeparationCell(
        task=task,
        separation=separation,
        length=length,
        asked_tokens=_mean([value for value in asked if value is not None]),
        measured_tokens=_mean([value for value in measured if value is not None]),
        **cell_stats(rows).model_dump(),
    )


def separation_cells(probes: list[Row], task_order: list[str]) -> list[SeparationCell] | None:
    """Per task (in ``task_order``) and separation, pooled over lengths (``length`` null) and then
    per length, in the order the separations sort (tokens, then shares); ``None`` where no row has
    a separation."""
    rows = [row for row in probes if row.get("separation") is not None]
    if not rows:
        return None
    cells: list[SeparationCell] = []
    tasks = sorted(
        group_by(rows, "task").items(),
        key=lambda item: task_order.index(item[0][0]) if item[0][0] in task_order else len(task_order),
    )
    for (task,), task_rows in tasks:
        by_separation = sorted(group_by(task_rows, "separation").items(), key=lambda item: _order(item[0][0]))
        cells.extend(_cell(task, separation, None, group) for (separation,), group in by_separation)
        for (separation,), group in by_separation:
            cells.extend(
                _cell(task, separation, length, part)
                for (length,), part in group_by(group, "length_target").items()
            )
    return cells
