"""The figures of a run as files for a paper (``rotscope report DIR --figures FOLDER``): each
task's position x length heatmap, accuracy-vs-length curve and accuracy-by-position plot, as SVG,
PNG and PDF, drawn with matplotlib on its Agg canvas: no display, no browser.

They look like the report's plotly figures (``figures``): the same titles (model, task, effective
length), colours, dashes and markers, and the heatmap's cividis scale with each cell's value
printed. matplotlib is the ``figures`` extra, imported only here, when figures are asked for.

Every text drawn comes from the run (a model's name, a task, a filler, a layout) and may hold
anything: control characters become their escapes (an SVG holding ESC or BEL is not XML) and a
``$`` stays a dollar (not matplotlib's math mode). A path is returned only once its file is on
disk and not empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rotscope._util.safe_text import terminal_safe
from rotscope.errors import BadInput
from rotscope.records.cells import Cell
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.figures import (
    COLOURS,
    DEPTH_AXIS,
    HEATMAP_WHAT,
    LAYOUT_AXIS,
    LENGTH_AXIS,
    LENGTH_WHAT,
    POSITION_AXIS,
    POSITION_WHAT,
    SCORES_AXIS,
    SCORES_WHAT,
    cell_above,
    cell_below,
    cell_grid,
    position_rows,
    score_axis,
    score_curves,
    scored_lengths,
    title_lines,
)
from rotscope.report.names import shareable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = ("svg", "png", "pdf")
SIZE_INCHES = (9.0, 5.4)
DPI = 200  # 1800 x 1080 pixels, as the plotly export's 900 x 540 at scale 2 was
INSTALL = "pip install 'rotscope[figures]'"
# plotly's dashes and markers (figures.DASHES, figures.MARKERS) in matplotlib's words, same order.
LINE_STYLES: tuple[Any, ...] = ("-", "--", ":", "-.", (0, (10, 4)), (0, (10, 3, 2, 3)))
MARKER_STYLES = ("o", "s", "D", "^", "x", "P", "*", "v")
COLOUR_MAP = "cividis"
GRID = "#ebf0f8"  # plotly_white's grid lines
# No creation date: the same run draws the same files.
METADATA: dict[str, dict[str, Any]] = {
    "svg": {"Date": None},
    "png": {},
    "pdf": {"CreationDate": None},
}
_NOT_XML = re.compile("[\ufffe\uffff]")
# matplotlib's defaults whatever the user's matplotlibrc says, and files that are the same for the
# same run: fixed SVG ids; TrueType fonts in the PDF (Type 3 fonts are refused by some journals).
HOUSE_STYLE: dict[str, Any] = {"svg.hashsalt": "rotscope", "svg.fonttype": "path", "pdf.fonttype": 42}


def drawable(text: str) -> str:
    """``text`` safe to draw and to store in an SVG: control characters, bidirectional marks and
    lone surrogates as their escapes (``\\x1b``), the two non-characters XML forbids as U+FFFD,
    and ``$`` escaped so that matplotlib draws it rather than entering math mode."""
    return _NOT_XML.sub("\ufffd", terminal_safe(text)).replace("$", r"\$")


@contextmanager
def _house_style() -> Iterator[None]:
    """matplotlib imported (or the extra that installs it named) and its house style in force."""
    try:
        import matplotlib.style
        from matplotlib.backends import backend_agg  # noqa: F401
    except ImportError:
        raise BadInput(f"--figures: drawing the figures needs matplotlib: {INSTALL}") from None
    with matplotlib.style.context(["default", HOUSE_STYLE]):
        yield


def _new_figure(title: str, subtitle: str) -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=SIZE_INCHES, layout="constrained")
    FigureCanvasAgg(figure)  # the Agg canvas, explicitly: no display is ever asked for
    axes = figure.add_subplot()
    figure.suptitle(drawable(title), x=0.01, horizontalalignment="left", fontsize=13)
    axes.set_title(drawable(subtitle), loc="left", fontsize=10, color="#444444")
    return figure, axes


def _plain_axes(axes: Axes) -> None:
    """plotly_white's look: a white plot, light grid lines, no box."""
    axes.grid(True, color=GRID, linewidth=1)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


class LineStyle(TypedDict):
    """The keyword arguments that style one line (``Axes.plot``, ``Axes.errorbar``)."""

    color: str
    linestyle: Any
    marker: str
    linewidth: int
    markersize: int


def _style(index: int) -> LineStyle:
    return {
        "color": COLOURS[index % len(COLOURS)],
        "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
        "marker": MARKER_STYLES[index % len(MARKER_STYLES)],
        "linewidth": 2,
        "markersize": 7,
    }


def length_figure(summary: Summary, analysis: TaskAnalysis) -> Figure:
    """One task's accuracy per length with its interval band (adjusted t on instance means)."""
    task = analysis.task
    figure, axes = _new_figure(*title_lines(summary, task, LENGTH_WHAT))
    lines = scored_lengths(analysis)
    x = [line.length for line in lines]
    style = _style(0)
    if lines:
        axes.fill_between(
            x,
            _drawn(line.ci_low for line in lines),
            _drawn(line.ci_high for line in lines),
            color=style["color"],
            alpha=0.2,
            linewidth=0,
            label=drawable(f"{task} 95% interval"),
        )
        axes.plot(x, _drawn(line.accuracy for line in lines), label=drawable(task), clip_on=False, **style)
        axes.set_xscale("log")
        axes.set_xticks(x, [f"{length:,}" for length in x])
        axes.minorticks_off()
        axes.legend(loc="best", frameon=False)
    else:
        _nothing_scored(axes)
    axes.set_xlabel(drawable(LENGTH_AXIS))
    axes.set_ylabel(drawable(score_axis(summary)))
    axes.set_ylim(0, 1.02)
    _plain_axes(axes)
    return figure


def position_figure(summary: Summary, task: str) -> Figure:
    """One task's accuracy per position with its interval, a line per length (and filler)."""
    figure, axes = _new_figure(*title_lines(summary, task, POSITION_WHAT))
    named, rows = position_rows(summary, task)
    labels: list[str] = []
    if named:  # named layouts on a category axis, in the order their rows first give them
        labels = list(dict.fromkeys(cell.layout or "" for _, row in rows for cell in row))
    for index, (name, row) in enumerate(rows):
        axes.errorbar(
            [labels.index(cell.layout or "") if named else _depth(cell) for cell in row],
            _drawn(cell.accuracy for cell in row),
            yerr=[[cell_below(cell) for cell in row], [cell_above(cell) for cell in row]],
            capsize=4,
            clip_on=False,
            label=drawable(name),
            **_style(index),
        )
    if named:
        axes.set_xticks(range(len(labels)), [drawable(label) for label in labels])
        axes.set_xlim(-0.5, len(labels) - 0.5)
        axes.set_xlabel(drawable(LAYOUT_AXIS))
    else:
        axes.set_xlim(-0.05, 1.05)
        axes.set_xlabel(drawable(DEPTH_AXIS))
    if rows:
        axes.legend(loc="best", frameon=False)
    else:
        _nothing_scored(axes)
    axes.set_ylabel(drawable(score_axis(summary)))
    axes.set_ylim(0, 1.05)
    _plain_axes(axes)
    return figure


def heatmap_figure(summary: Summary, task: str) -> Figure:
    """One task's accuracy by position x length, each cell printed with its value and n."""
    import numpy as np

    figure, axes = _new_figure(*title_lines(summary, task, HEATMAP_WHAT))
    lengths, labels, grid = cell_grid(summary, task)
    values = np.ma.masked_invalid(
        np.array(
            [
                [np.nan if cell is None or cell.accuracy is None else cell.accuracy for cell in line]
                for line in grid
            ],
            dtype=float,
        ).reshape(len(labels), len(lengths))
    )
    if values.size:
        image = axes.imshow(values, cmap=COLOUR_MAP, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        figure.colorbar(image, ax=axes, label=drawable(score_axis(summary)))
        for row, line in enumerate(grid):
            for column, cell in enumerate(line):
                label = _cell_label(cell)
                if label is not None:
                    axes.text(
                        column,
                        row,
                        label[0],
                        horizontalalignment="center",
                        verticalalignment="center",
                        fontsize=9,
                        color=label[1],
                    )
        axes.set_xticks(range(len(lengths)), [f"{length:,}" for length in lengths])
        axes.set_yticks(range(len(labels)), [drawable(label) for label in labels])
    else:
        _nothing_scored(axes)
    axes.set_xlabel(drawable(LENGTH_AXIS))
    axes.set_ylabel(drawable(POSITION_AXIS))
    return figure


def scores_figure(summary: Summary, task: str) -> Figure:
    """One task's accuracy and answer probability per length, each with its interval band."""
    figure, axes = _new_figure(*title_lines(summary, task, SCORES_WHAT))
    curves = score_curves(summary, task)
    lengths = sorted({length for _, x, _ in curves for length in x})
    for index, (name, x, points) in enumerate(curves):
        style = _style(index)
        axes.fill_between(
            x,
            [low for _, low, _ in points],
            [high for _, _, high in points],
            color=style["color"],
            alpha=0.2,
            linewidth=0,
        )
        axes.plot(x, [value for value, _, _ in points], label=drawable(name), clip_on=False, **style)
    if lengths:
        axes.set_xscale("log")
        axes.set_xticks(lengths, [f"{length:,}" for length in lengths])
        axes.minorticks_off()
        axes.legend(loc="best", frameon=False)
    else:
        _nothing_scored(axes)
    axes.set_xlabel(drawable(LENGTH_AXIS))
    axes.set_ylabel(drawable(SCORES_AXIS))
    axes.set_ylim(0, 1.02)
    _plain_axes(axes)
    return figure


def _drawn(values: Iterable[float | None]) -> list[float]:
    """Values to draw, a missing one (no interval) as NaN, which matplotlib leaves out."""
    return [math.nan if value is None else value for value in values]


def _depth(cell: Cell) -> float:
    """A cell's numeric depth (a named layout's cell is placed by its label instead)."""
    return cell.depth if isinstance(cell.depth, float) else math.nan


def _cell_label(cell: Cell | None) -> tuple[str, str] | None:
    """What a heatmap cell prints and in which colour: its accuracy and n (the HTML report's
    values); on a cell without a score, why (every prompt rejected, every row an error)."""
    if cell is None:
        return None
    accuracy = cell.accuracy
    if accuracy is not None:
        return (
            f"{accuracy:.2f}\nn={cell.n}",
            "white" if accuracy < 0.6 else "black",
        )  # cividis is dark below ~0.6
    if cell.all_rejected:
        return f"rejected\n{cell.rejected or 0} cases", "#666666"
    if cell.errors:
        return f"no score\n{cell.errors} errors", "#666666"
    return None


def _nothing_scored(axes: Axes) -> None:
    axes.text(
        0.5,
        0.5,
        "no scored cell",
        transform=axes.transAxes,
        horizontalalignment="center",
        verticalalignment="center",
        color="#888888",
    )


def _file_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "task"


def run_figures(summary: Summary) -> dict[str, Figure]:
    """Each task's figures by file stem: ``TASK-heatmap``, ``TASK-length``, ``TASK-position`` on the
    summary's score, and ``TASK-scores`` (both scores) where the run keeps both (``summary`` as the
    views show it: ``names.shareable``)."""
    figures: dict[str, Figure] = {}
    with _house_style():
        for analysis in summary.tasks:
            task = analysis.task
            stem = _file_part(task)
            figures[f"{stem}-heatmap"] = heatmap_figure(summary, task)
            figures[f"{stem}-length"] = length_figure(summary, analysis)
            figures[f"{stem}-position"] = position_figure(summary, task)
            if score_curves(summary, task):  # a run that keeps both scores
                figures[f"{stem}-scores"] = scores_figure(summary, task)
    return figures


def write_figures(summary: Summary, folder: Path) -> list[Path]:
    """Write each figure of the run as SVG, PNG and PDF into ``folder``; the files written, each
    checked on disk and not empty."""
    figures = run_figures(shareable(summary))
    if not figures:
        raise BadInput("--figures: the run has no scored task to draw")
    with _house_style():
        return save_figures(figures, folder, FORMATS)


def save_figures(figures: Mapping[str, Any], folder: Path, formats: Sequence[str]) -> list[Path]:
    """Each figure by its file stem into ``folder`` in each of ``formats``; the files written, each
    checked on disk and not empty (a folder or file that cannot be written is bad input)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadInput(f"--figures: cannot create {folder} ({error.strerror})") from None
    written = []
    for kind in formats:
        for stem, figure in figures.items():
            path = folder / f"{stem}.{kind}"
            try:
                figure.savefig(path, format=kind, dpi=DPI, metadata=METADATA[kind], facecolor="white")
            except OSError as error:
                raise BadInput(f"--figures: cannot write {path} ({error.strerror})") from None
            if not path.is_file() or path.stat().st_size == 0:
                raise BadInput(f"--figures: {path} was not written")
            written.append(path)
    return written
