"""Accuracy by separation (``Summary.separations``, ``placement.separations``) in every view: the
terminal's lines, the Markdown table, the HTML report's plot; each says nothing where the run has
no such axis."""

from __future__ import annotations

import plotly.graph_objects as go

from rotscope._util.safe_text import markdown_safe
from rotscope.records.cells import SeparationCell
from rotscope.records.summary import Summary

HEADING = "accuracy by separation (filler tokens between the facts to combine; 95% {method}):"


def separation_text(separation: int | float) -> str:
    """A separation as the experiment gave it: ``512 tokens`` or ``0.25 filler`` (a share of it)."""
    return f"{separation:,} tokens" if isinstance(separation, int) else f"{separation:g} filler"


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


def separation_lines(cells: list[SeparationCell] | None) -> list[str]:
    """A line per task, separation and length (every length first): accuracy, interval, the
    filler tokens measured between the facts."""
    if not cells:
        return []
    lines = [HEADING.format(method=_method(cells))]
    for cell in cells:
        where = "all lengths" if cell.length is None else f"length {cell.length:,}"
        lines.append(
            f"  {cell.task:<10} {separation_text(cell.separation):<13} {where:<12} "
            f"{_accuracy(cell)} {_interval(cell)} n={cell.instances}; {_measured(cell)}"
        )
    return lines


def separation_markdown(cells: list[SeparationCell] | None) -> list[str]:
    """The same as a Markdown table; empty without the axis."""
    if not cells:
        return []
    lines = [
        "",
        f"Accuracy by separation (95% {_method(cells)}):",
        "",
        "| task | separation | length | accuracy [95%] | instances | filler tokens between facts |",
        "|---|---|---|---|---|---|",
    ]
    for cell in cells:
        where = "all" if cell.length is None else f"{cell.length:,}"
        lines.append(
            f"| {markdown_safe(cell.task)} | {separation_text(cell.separation)} | {where} | "
            f"{_accuracy(cell)} {_interval(cell)} | {cell.instances} | {_measured(cell)} |"
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
