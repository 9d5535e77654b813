"""Accuracy by separation (``Summary.separations``, ``placement.separations``) in every view: one
builder of the table's rows (``separation_rows``) that the terminal's lines and the Markdown table
render, and the HTML report's plot; each says nothing where the run has no such axis."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from rotscope._util.safe_text import markdown_safe
from rotscope.records.cells import SeparationCell
from rotscope.records.summary import Summary

HEADING = "accuracy by separation (filler tokens between the facts to combine; 95% {method}):"


def separation_text(separation: int | float) -> str:
    """A separation as the experiment gave it: ``512 tokens`` or ``0.25 filler`` (a share of it)."""
    return f"{separation:,} tokens" if isinstance(separation, int) else f"{separation:g} filler"


@dataclass(frozen=True)
class SeparationRow:
    """One row of the accuracy-by-separation table, in words both views print as they are."""

    task: str
    separation: str
    """``separation_text`` of the cell's separation."""
    length: int | None
    """The length; ``None``: every length pooled (each view words it its own way)."""
    accuracy: str
    """The instance accuracy and its interval: ``0.50 [0.10, 0.90]``, ``n/a``, ``no interval``."""
    instances: int
    between: str
    """The filler tokens measured between the facts, and those asked: ``70 apart (asked 64)``."""


def _interval(cell: SeparationCell) -> str:
    if cell.ci_low is None or cell.ci_high is None:
        return "no interval"
    return f"[{cell.ci_low:.2f}, {cell.ci_high:.2f}]"


def _accuracy(cell: SeparationCell) -> str:
    return "n/a" if cell.instance_accuracy is None else f"{cell.instance_accuracy:.2f}"


def _measured(cell: SeparationCell) -> str:
    if cell.measured_tokens is None:
        return "-"
    return f"{cell.measured_tokens:,.0f} apart (asked {cell.asked_tokens or 0:,.0f})"


def _method(cells: list[SeparationCell]) -> str:
    methods = {cell.ci_method for cell in cells if cell.ci_method}
    return methods.pop() if len(methods) == 1 else "adjusted t on instance means, clustered as each line says"


def separation_rows(cells: list[SeparationCell]) -> list[SeparationRow]:
    """A row per task, separation and length (every length first), in the summary's order."""
    return [
        SeparationRow(
            task=cell.task,
            separation=separation_text(cell.separation),
            length=cell.length,
            accuracy=f"{_accuracy(cell)} {_interval(cell)}",
            instances=cell.instances,
            between=_measured(cell),
        )
        for cell in cells
    ]


def separation_lines(cells: list[SeparationCell] | None) -> list[str]:
    """The terminal's lines: a heading, then a line per row; empty without the axis."""
    if not cells:
        return []
    lines = [HEADING.format(method=_method(cells))]
    for row in separation_rows(cells):
        where = "all lengths" if row.length is None else f"length {row.length:,}"
        lines.append(
            f"  {row.task:<10} {row.separation:<13} {where:<12} {row.accuracy} "
            f"n={row.instances}; {row.between}"
        )
    return lines


def separation_markdown(cells: list[SeparationCell] | None) -> list[str]:
    """The same rows as a Markdown table; empty without the axis."""
    if not cells:
        return []
    lines = [
        "",
        f"Accuracy by separation (95% {_method(cells)}):",
        "",
        "| task | separation | length | accuracy [95%] | instances | filler tokens between facts |",
        "|---|---|---|---|---|---|",
    ]
    for row in separation_rows(cells):
        where = "all" if row.length is None else f"{row.length:,}"
        lines.append(
            f"| {markdown_safe(row.task)} | {row.separation} | {where} | {row.accuracy} | "
            f"{row.instances} | {row.between} |"
        )
    return lines


def separation_figure(summary: Summary) -> go.Figure:
    """Accuracy by separation (every length pooled) with its interval, a line per task; token
    counts on the axis as measured, so shares and counts share one axis."""
    figure = go.Figure()
    for task in dict.fromkeys(cell.task for cell in summary.separations or []):
        cells = [
            cell
            for cell in summary.separations or []
            if cell.task == task and cell.length is None and cell.instance_accuracy is not None
        ]
        cells.sort(key=lambda cell: cell.measured_tokens or 0.0)
        figure.add_trace(
            go.Scatter(
                x=[cell.measured_tokens for cell in cells],
                y=[cell.instance_accuracy for cell in cells],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [(cell.ci_high or 0.0) - (cell.instance_accuracy or 0.0) for cell in cells],
                    "arrayminus": [(cell.instance_accuracy or 0.0) - (cell.ci_low or 0.0) for cell in cells],
                },
                text=[separation_text(cell.separation) for cell in cells],
                mode="lines+markers",
                name=task,
            )
        )
    figure.update_xaxes(title="filler tokens between the facts (measured)")
    figure.update_yaxes(range=[0, 1.02], title="accuracy")
    figure.update_layout(title="Accuracy by separation of the facts to combine")
    return figure
