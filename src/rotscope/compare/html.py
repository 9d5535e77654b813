"""The HTML comparison (``rotscope compare DIR... -o FILE.html``): one self-contained file that
opens offline (plotly's JavaScript inlined, as the run report's): per task the leaderboard, the
accuracy-vs-length curves of every model overlaid with their intervals (one trace per model),
the same against the fraction of each model's window where windows are known, the heat maps side
by side on one colour scale, and each pair's verdicts.

Everything from the runs goes through jinja2's autoescaping."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from plotly.subplots import make_subplots

from rotscope.compare.record import Comparison, LeaderboardEntry
from rotscope.compare.table import (
    family_label,
    leaderboard_cells,
    leaderboard_headers,
    left_out_words,
    pair_lines,
    shown,
    task_entries,
)
from rotscope.errors import write_output
from rotscope.records.summary import Summary
from rotscope.report.figures import (
    COLOUR_SCALE,
    LENGTH_AXIS,
    LENGTH_WHAT,
    POSITION_AXIS,
    _styles,
    cell_grid,
)
from rotscope.report.names import shareable
from rotscope.report.scores import score_label

OVERLAY_WHAT = f"every model's {LENGTH_WHAT}"
WINDOW_AXIS = "prompt length as a fraction of the model's context window"


class ScoredLength(NamedTuple):
    """A length with a score, as a curve draws it."""

    length: int
    fraction_of_window: float | None
    accuracy: float
    ci_low: float
    """The interval's ends; the score itself where the entry has no interval (no bar drawn)."""
    ci_high: float


def scored(entry: LeaderboardEntry) -> list[ScoredLength]:
    """The entry's lengths with a score, in order (a length where nothing is scored has no point)."""
    return [
        ScoredLength(
            line.length,
            line.fraction_of_window,
            line.accuracy,
            line.accuracy if line.ci_low is None else line.ci_low,
            line.accuracy if line.ci_high is None else line.ci_high,
        )
        for line in entry.lengths
        if line.accuracy is not None
    ]


def _trace(entry: LeaderboardEntry, x: Sequence[float], style: dict[str, Any]) -> go.Scatter:
    lines = scored(entry)
    return go.Scatter(
        x=x,
        y=[line.accuracy for line in lines],
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [line.ci_high - line.accuracy for line in lines],
            "arrayminus": [line.accuracy - line.ci_low for line in lines],
        },
        mode="lines+markers",
        name=entry.label,
        **style,
    )


def overlay_figure(comparison: Comparison, task: str) -> go.Figure:
    """Accuracy per length of every model on ``task``, one trace each, its 95% intervals as error
    bars (adjusted t on instance means)."""
    figure = go.Figure()
    for entry, style in zip(task_entries(comparison, task), _styles(), strict=False):
        x = [line.length for line in scored(entry)]
        figure.add_trace(_trace(entry, x, style))
    figure.update_xaxes(type="log", title=LENGTH_AXIS)
    figure.update_yaxes(range=[0, 1.05], title=score_label(comparison.score))
    figure.update_layout(title=f"{task}: {OVERLAY_WHAT}")
    return figure


def window_figure(comparison: Comparison, task: str) -> go.Figure | None:
    """The overlay against each model's fraction of its window; ``None`` where no model's window
    is known (a fake, a command, an imported run)."""
    entries = [entry for entry in task_entries(comparison, task) if entry.window]
    if not entries:
        return None
    figure = go.Figure()
    for entry, style in zip(entries, _styles(), strict=False):
        x = [line.fraction_of_window or 0.0 for line in scored(entry)]
        figure.add_trace(_trace(entry, x, style))
    figure.update_xaxes(type="log", title=WINDOW_AXIS, tickformat=".0%")
    figure.update_yaxes(range=[0, 1.05], title=score_label(comparison.score))
    figure.update_layout(title=f"{task}: accuracy vs fraction of each model's window")
    return figure


def heatmaps_figure(comparison: Comparison, summaries: Mapping[str, Summary], task: str) -> go.Figure:
    """Each model's position x length heat map of ``task``, side by side on one colour scale (0-1),
    each cell printed with its accuracy."""
    entries = task_entries(comparison, task)
    figure = make_subplots(
        rows=1,
        cols=max(len(entries), 1),
        subplot_titles=[entry.label for entry in entries],
        shared_yaxes=True,
    )
    for column, entry in enumerate(entries, start=1):
        lengths, labels, grid = cell_grid(summaries[entry.run], task)
        values = [[None if cell is None else cell.accuracy for cell in line] for line in grid]
        figure.add_trace(
            go.Heatmap(
                z=values,
                x=[f"{length:,}" for length in lengths],
                y=labels,
                zmin=0,
                zmax=1,
                colorscale=COLOUR_SCALE,
                showscale=column == len(entries),
                text=[["" if value is None else f"{value:.2f}" for value in line] for line in values],
                texttemplate="%{text}",
                name=entry.label,
                hovertemplate="%{y} at %{x}: %{z:.2f}<extra>%{fullData.name}</extra>",
            ),
            row=1,
            col=column,
        )
        figure.update_xaxes(title_text=LENGTH_AXIS if column == 1 else None, row=1, col=column)
    figure.update_yaxes(title_text=POSITION_AXIS, row=1, col=1)
    figure.update_layout(title=f"{task}: accuracy by position x length, side by side")
    return figure


def _html(figure: go.Figure) -> Markup:
    figure.update_layout(margin={"l": 60, "r": 20, "t": 60, "b": 50}, height=380, template="plotly_white")
    return Markup(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def render_comparison(comparison: Comparison, summaries: Mapping[str, Summary]) -> str:
    """The comparison as one HTML document (``summaries``: each run's summary by its run name,
    for the heat maps)."""
    from plotly.offline import get_plotlyjs

    comparison = shown(comparison)
    views = {name: shareable(summary) for name, summary in summaries.items()}
    environment = Environment(
        loader=PackageLoader("rotscope.report", "templates"), autoescape=select_autoescape(default=True)
    )
    tasks = []
    for task in comparison.tasks:
        window = window_figure(comparison, task)
        tasks.append(
            {
                "task": task,
                "rows": [leaderboard_cells(entry) for entry in task_entries(comparison, task)],
                "overlay": _html(overlay_figure(comparison, task)),
                "window": _html(window) if window is not None else None,
                "heatmaps": _html(heatmaps_figure(comparison, views, task)),
                "pairs": pair_lines(comparison, task),
                "family": family_label(comparison, task),
            }
        )
    return environment.get_template("comparison.html.j2").render(
        comparison=comparison,
        headers=leaderboard_headers(comparison),
        tasks=tasks,
        imported=any(run.imported for run in comparison.runs),
        left_out=[left_out_words(run) for run in comparison.runs if run.left_out_lengths],
        plotly_js=Markup(get_plotlyjs()),
    )


def write_comparison(comparison: Comparison, summaries: Mapping[str, Summary], output: Path) -> Path:
    """Write the HTML comparison to ``output``."""
    write_output(output, render_comparison(comparison, summaries), "comparison")
    return output
