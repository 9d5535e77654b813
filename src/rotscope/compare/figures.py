"""The comparison's figures as files for a paper (``rotscope compare DIR... --figures FOLDER``): per
task the overlaid accuracy-vs-length curves (one line per model, its 95% intervals as error bars)
and the heat maps side by side, as SVG and PNG, drawn with matplotlib on its Agg canvas (no
display, no browser), in the run figures' house style (``figure_files``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rotscope.compare.html import OVERLAY_WHAT, scored
from rotscope.compare.record import Comparison
from rotscope.compare.table import shown, task_entries
from rotscope.errors import BadInput
from rotscope.records.summary import Summary
from rotscope.report.figure_files import (
    COLOUR_MAP,
    _file_part,
    _house_style,
    _new_figure,
    _plain_axes,
    _style,
    drawable,
    save_figures,
)
from rotscope.report.figures import LENGTH_AXIS, POSITION_AXIS, cell_grid
from rotscope.report.names import shareable
from rotscope.report.scores import score_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMATS = ("svg", "png")
DODGE = 0.03
"""How far apart (a fraction of the length, on the log axis) the models' points at one length sit."""


def overlay_file_figure(comparison: Comparison, task: str) -> Figure:
    """Every model's accuracy per length on ``task``, one line each with its interval bars."""
    labels = ", ".join(run.label for run in comparison.runs)
    figure, axes = _new_figure(f"{task}: {OVERLAY_WHAT}", labels)
    ticks: set[int] = set()
    entries = task_entries(comparison, task)
    for index, entry in enumerate(entries):
        lines = scored(entry)
        ticks.update(line.length for line in lines)
        # Each model a little apart on the log axis, so intervals at one length do not hide each other.
        dodge = 1 + DODGE * (index - (len(entries) - 1) / 2)
        axes.errorbar(
            [line.length * dodge for line in lines],
            [line.accuracy for line in lines],
            yerr=[
                [line.accuracy - line.ci_low for line in lines],
                [line.ci_high - line.accuracy for line in lines],
            ],
            capsize=4,
            clip_on=False,
            label=drawable(entry.label),
            **_style(index),
        )
    if ticks:
        axes.set_xscale("log")
        axes.set_xticks(sorted(ticks), [f"{length:,}" for length in sorted(ticks)])
        axes.minorticks_off()
        axes.legend(loc="best", frameon=False)
    axes.set_xlabel(drawable(LENGTH_AXIS))
    axes.set_ylabel(drawable(score_label(comparison.score)))
    axes.set_ylim(0, 1.05)
    _plain_axes(axes)
    return figure


def heatmaps_file_figure(comparison: Comparison, summaries: Mapping[str, Summary], task: str) -> Figure:
    """Each model's position x length heat map of ``task`` side by side, one colour scale (0-1)."""
    import numpy as np

    entries = task_entries(comparison, task)
    figure, first = _new_figure(f"{task}: accuracy by position x length", "side by side, one colour scale")
    figure.delaxes(first)
    figure.set_size_inches(max(4.0 * len(entries), 6.0), 4.6)
    axes_row = figure.subplots(1, len(entries), squeeze=False, sharey=True)[0]
    image = None
    for axes, entry in zip(axes_row, entries, strict=True):
        lengths, labels, grid = cell_grid(summaries[entry.run], task)
        values = np.array(
            [
                [np.nan if cell is None or cell.accuracy is None else cell.accuracy for cell in line]
                for line in grid
            ],
            dtype=float,
        ).reshape(len(labels), len(lengths))
        axes.set_title(drawable(entry.label), fontsize=10)
        if values.size:
            image = axes.imshow(
                np.ma.masked_invalid(values),
                cmap=COLOUR_MAP,
                vmin=0,
                vmax=1,
                aspect="auto",
                interpolation="nearest",
            )
            for row, line in enumerate(values):
                for column, value in enumerate(line):
                    if not np.isnan(value):
                        colour = "white" if value < 0.6 else "black"  # cividis is dark below ~0.6
                        axes.text(
                            column, row, f"{value:.2f}", ha="center", va="center", fontsize=9, color=colour
                        )
            axes.set_xticks(range(len(lengths)), [f"{length:,}" for length in lengths])
            axes.set_yticks(range(len(labels)), [drawable(label) for label in labels])
        axes.set_xlabel(drawable(LENGTH_AXIS))
    axes_row[0].set_ylabel(drawable(POSITION_AXIS))
    if image is not None:
        figure.colorbar(image, ax=list(axes_row), label=drawable(score_label(comparison.score)))
    return figure


def write_comparison_figures(
    comparison: Comparison, summaries: Mapping[str, Summary], folder: Path
) -> list[Path]:
    """Write each task's overlay and heat maps as SVG and PNG into ``folder``; the files written,
    each checked on disk and not empty."""
    comparison = shown(comparison)
    views = {name: shareable(summary) for name, summary in summaries.items()}
    if not comparison.tasks:
        raise BadInput("--figures: the runs share no task to draw")
    with _house_style():
        figures = {}
        for task in comparison.tasks:
            stem = _file_part(task)
            figures[f"{stem}-compare-length"] = overlay_file_figure(comparison, task)
            figures[f"{stem}-compare-heatmaps"] = heatmaps_file_figure(comparison, views, task)
        return save_figures(figures, folder, FORMATS)
