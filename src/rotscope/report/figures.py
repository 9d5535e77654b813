"""The interactive plotly figures of the HTML report (accuracy vs length, accuracy by position),
and what they share with the figure files of ``report --figures`` (``figure_files``, drawn with
matplotlib): the titles, the line styles and the heatmap's colour scale, so both look alike.

Each figure reads in black and white: every line has its own dash and marker, the heatmap's
colour scale (cividis) rises in lightness monotonically and each cell prints its value.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import plotly.graph_objects as go

from rotscope.records.cells import Cell, LengthCell
from rotscope.records.effective import TaskEffectiveLength
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.cells import row_key
from rotscope.report.scores import LIKELIHOOD, agreement_of, score_label

DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down")
COLOUR_SCALE = "Cividis"
COLOURS = ("#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880")
"""plotly's default colour sequence, which the report's figures use; the figure files too."""
LENGTH_WHAT = "accuracy vs length (95% adjusted t on instance means)"
POSITION_WHAT = "accuracy by position"
HEATMAP_WHAT = "accuracy by position x length"
LENGTH_AXIS = "prompt length (model tokens)"
DEPTH_AXIS = "evidence depth (0 = first, 1 = last)"
LAYOUT_AXIS = "layout of the target problem"
POSITION_AXIS = "evidence position"
ACCURACY_AXIS = "accuracy"
SCORES_WHAT = "accuracy and answer probability vs length"
"""The figure of a run that keeps both scores: each score's curve on one figure per task."""
SCORES_AXIS = "accuracy / mean probability of the gold answer"


DODGE_DEPTH = 0.012
"""How far apart (in depth) the lines of a position plot are drawn at one depth."""
DODGE_NAMED = 0.08
"""The same for named positions, in category widths."""


def score_axis(summary: Summary) -> str:
    """The axis of the summary's score (``Summary.score``): accuracy, or the answer probability."""
    return score_label(summary.score)


def _styles() -> Iterator[dict[str, Any]]:
    """Line and marker styles that differ without colour, in a fixed order."""
    index = 0
    while True:
        yield {
            "line": {"dash": DASHES[index % len(DASHES)], "width": 2},
            "marker": {"symbol": MARKERS[index % len(MARKERS)], "size": 8},
        }
        index += 1


def short_effective(entry: TaskEffectiveLength | None) -> str:
    """An effective length in a few characters, for a figure's title."""
    if entry is None:
        return "-"
    value, state = entry.value, entry.state
    if state == "no-data":
        return "no data"
    if state == "no-signal":
        return "no signal"
    if state == "at-least-longest":
        return f"≥ {value:,} tokens"
    if value is None:
        return "below the shortest length"
    return f"{value:,} tokens"


def title_lines(summary: Summary, task: str, what: str) -> tuple[str, str]:
    """A task's figure title: model, task and what it shows; then its effective length."""
    per_task = {entry.task: entry for entry in summary.effective_lengths.tasks}
    entry = per_task.get(task)
    definition = f" ({entry.definition})" if entry else ""
    if what != SCORES_WHAT:  # a figure of one score names the summary's
        what = what.replace(ACCURACY_AXIS, score_axis(summary), 1)
    return f"{summary.model} · {task}: {what}", f"effective length {short_effective(entry)}{definition}"


Curve = tuple[str, list[int], list[tuple[float, float, float]]]
"""A score's name, its lengths, and (value, low, high) at each."""


def score_curves(summary: Summary, task: str) -> list[Curve]:
    """Each score's curve of a task that has both: its name, lengths and (value, low, high) per
    length, accuracy first; empty where the run keeps one score."""
    entry = agreement_of(summary, task)
    if entry is None:
        return []
    curves: list[Curve] = []
    for name, points in (
        ("accuracy", [(line.length, line.accuracy, line.accuracy_ci) for line in entry.lengths]),
        (LIKELIHOOD, [(line.length, line.likelihood, line.likelihood_ci) for line in entry.lengths]),
    ):
        drawn = [(length, value, ci) for length, value, ci in points if value is not None and ci is not None]
        curves.append(
            (name, [length for length, _, _ in drawn], [(value, ci[0], ci[1]) for _, value, ci in drawn])
        )
    return curves


def scores_figure(summary: Summary, task: str) -> go.Figure:
    """A task's accuracy and answer probability per length, each with its interval band."""
    figure = go.Figure()
    for (name, x, points), style, colour in zip(
        score_curves(summary, task), _styles(), COLOURS, strict=False
    ):
        figure.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=[high for _, _, high in points] + [low for _, low, _ in points][::-1],
                fill="toself",
                fillcolor=colour,
                opacity=0.2,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                name=f"{name} 95% interval",
            )
        )
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[value for value, _, _ in points],
                mode="lines+markers",
                name=name,
                line={**style["line"], "color": colour},
                marker={**style["marker"], "color": colour},
            )
        )
    figure.update_xaxes(type="log", title=LENGTH_AXIS)
    figure.update_yaxes(range=[0, 1.02], title=SCORES_AXIS)
    figure.update_layout(title=f"{task}: {SCORES_WHAT}")
    return figure


def scored_lengths(analysis: TaskAnalysis) -> list[LengthCell]:
    """A task's length lines that have an accuracy (a length with every row an error has none)."""
    return [line for line in analysis.lengths or [] if line.accuracy is not None]


def position_rows(summary: Summary, task: str) -> tuple[bool, list[tuple[str, list[Cell]]]]:
    """A task's scored cells as one line per length (and filler): its legend name and its cells in
    row order; first whether the positions are named layouts (else numeric depths)."""
    cells = [cell for cell in summary.cells if cell.task == task and cell.accuracy is not None]
    named = any(cell.layout for cell in cells)
    groups = sorted({(cell.length, cell.filler or "") for cell in cells})
    rows = []
    for length, filler in groups:
        row = sorted(
            (cell for cell in cells if cell.length == length and (cell.filler or "") == filler),
            key=_row_key,
        )
        rows.append((f"{length:,} tokens" + (f", {filler}" if filler else ""), row))
    return named, rows


def _row_key(cell: Cell) -> tuple[str, float, str]:
    return row_key(cell)


def cell_grid(summary: Summary, task: str) -> tuple[list[int], list[str], list[list[Cell | None]]]:
    """A task's position x length grid: its lengths, its row labels, its cells (``None`` where
    nothing ran)."""
    cells = [cell for cell in summary.cells if cell.task == task]
    lengths = sorted({cell.length for cell in cells})
    keys = {id(cell): _row_key(cell) for cell in cells}
    rows = sorted(set(keys.values()))
    lookup = {(keys[id(cell)], cell.length): cell for cell in cells}
    return (
        lengths,
        [key[2] for key in rows],
        [[lookup.get((key, length)) for length in lengths] for key in rows],
    )


def length_figure(summary: Summary) -> go.Figure:
    """Accuracy per length with its interval band (adjusted t on instance means), a line per task."""
    figure = go.Figure()
    for analysis, style in zip(summary.tasks, _styles(), strict=False):
        lines = scored_lengths(analysis)
        x = [line.length for line in lines]
        figure.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=[line.ci_high for line in lines] + [line.ci_low for line in lines][::-1],
                fill="toself",
                opacity=0.2,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                name=f"{analysis.task} 95% interval",
            )
        )
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[line.accuracy for line in lines],
                mode="lines+markers",
                name=analysis.task,
                **style,
            )
        )
    figure.update_xaxes(type="log", title=LENGTH_AXIS)
    figure.update_yaxes(range=[0, 1.02], title=score_axis(summary))
    what = LENGTH_WHAT.replace(ACCURACY_AXIS, score_axis(summary), 1)
    figure.update_layout(title=what[0].upper() + what[1:])
    return figure


def _position(cell: Cell, layouts: list[str | None]) -> float:
    """Where a cell sits on a position plot's axis: its layout's index among ``layouts`` (named
    positions), else its depth."""
    if layouts:
        return float(layouts.index(cell.layout))
    assert isinstance(cell.depth, int | float), cell.depth  # position_rows: numeric depths here
    return float(cell.depth)


def position_figure(summary: Summary, task: str) -> go.Figure:
    """Accuracy per position with its interval, a line per length (and filler)."""
    figure = go.Figure()
    named, rows = position_rows(summary, task)
    layouts = list(dict.fromkeys(cell.layout for _, row in rows for cell in row)) if named else []
    # Each line a little apart from the others (a "dodge"), so no length's marker and interval
    # hides behind another's at the same position; the axis still names the positions.
    spread = DODGE_NAMED if named else DODGE_DEPTH
    for index, ((name, row), style) in enumerate(zip(rows, _styles(), strict=False)):
        shift = (index - (len(rows) - 1) / 2) * spread
        figure.add_trace(
            go.Scatter(
                x=[_position(cell, layouts) + shift for cell in row],
                text=[str(cell.layout) if named else f"{cell.depth:g}" for cell in row],
                hovertemplate="position %{text}: %{y:.2f}",
                y=[cell.accuracy for cell in row],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [cell_above(cell) for cell in row],
                    "arrayminus": [cell_below(cell) for cell in row],
                },
                mode="lines+markers",
                name=name,
                **style,
            )
        )
    if named:
        positions = list(range(len(layouts)))
        figure.update_xaxes(
            title=LAYOUT_AXIS, tickvals=positions, ticktext=layouts, range=[-0.5, len(layouts) - 0.5]
        )
    else:
        figure.update_xaxes(title=DEPTH_AXIS, range=[-0.08, 1.08])
    figure.update_yaxes(range=[0, 1.05], title=score_axis(summary))
    figure.update_layout(title=f"{task}: {POSITION_WHAT.replace(ACCURACY_AXIS, score_axis(summary), 1)}")
    return figure


def cell_above(cell: Cell) -> float:
    """How far a scored cell's interval reaches above its accuracy (``position_rows`` gives only
    scored cells, each with its interval)."""
    assert cell.accuracy is not None and cell.ci_high is not None
    return cell.ci_high - cell.accuracy


def cell_below(cell: Cell) -> float:
    """How far a scored cell's interval reaches below its accuracy."""
    assert cell.accuracy is not None and cell.ci_low is not None
    return cell.accuracy - cell.ci_low
