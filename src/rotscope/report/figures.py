"""The plotly figures of a run: accuracy vs length, accuracy by position, the depth x length
heatmap; shown in the HTML report and exported as SVG and PNG for a paper (``--figures DIR``).

Each figure reads in black and white: every line has its own dash and marker, the heatmap's
colour scale (cividis) rises in lightness monotonically and each cell prints its value.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from rotscope.errors import BadInput
from rotscope.report.cells import row_key
from rotscope.report.names import shareable

DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down")
COLOUR_SCALE = "Cividis"
FORMATS = ("svg", "png")
EXPORT_SIZE = {"width": 900, "height": 540, "scale": 2}
INSTALL = "pip install 'rotscope[figures]'"


def _styles() -> Iterator[dict[str, Any]]:
    """Line and marker styles that differ without colour, in a fixed order."""
    index = 0
    while True:
        yield {
            "line": {"dash": DASHES[index % len(DASHES)], "width": 2},
            "marker": {"symbol": MARKERS[index % len(MARKERS)], "size": 8},
        }
        index += 1


def short_effective(entry: dict[str, Any] | None) -> str:
    """An effective length in a few characters, for a figure's title."""
    if entry is None:
        return "-"
    value, state = entry.get("value"), entry.get("state")
    if state == "no-data":
        return "no data"
    if state == "no-signal":
        return "no signal"
    if state == "at-least-longest":
        return f"≥ {value:,} tokens"
    if value is None:
        return "below the shortest length"
    return f"{value:,} tokens"


def _title(summary: dict[str, Any], task: str, what: str) -> str:
    per_task = {entry["task"]: entry for entry in summary["effective_lengths"]["tasks"]}
    entry = per_task.get(task)
    definition = f" ({entry['definition']})" if entry else ""
    return (
        f"{summary['model']} · {task}: {what}<br><sup>effective length {short_effective(entry)}"
        f"{definition}</sup>"
    )


def length_figure(summary: dict[str, Any], tasks: list[str] | None = None) -> go.Figure:
    """Accuracy per length with its Wilson band, a line per task (``tasks``: all by default)."""
    figure = go.Figure()
    chosen = [analysis for analysis in summary["tasks"] if tasks is None or analysis["task"] in tasks]
    for analysis, style in zip(chosen, _styles(), strict=False):
        lines = [line for line in analysis["lengths"] if line["accuracy"] is not None]
        x = [line["length"] for line in lines]
        figure.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=[line["ci_high"] for line in lines] + [line["ci_low"] for line in lines][::-1],
                fill="toself",
                opacity=0.2,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                name=f"{analysis['task']} 95% interval",
            )
        )
        figure.add_trace(
            go.Scatter(
                x=x,
                y=[line["accuracy"] for line in lines],
                mode="lines+markers",
                name=analysis["task"],
                **style,
            )
        )
    figure.update_xaxes(type="log", title="prompt length (model tokens)")
    figure.update_yaxes(range=[0, 1.02], title="accuracy")
    if tasks is not None and len(tasks) == 1:
        figure.update_layout(title=_title(summary, tasks[0], "accuracy vs length (Wilson 95% on instances)"))
    else:
        figure.update_layout(title="Accuracy vs length (Wilson 95% on instances)")
    return figure


def position_figure(summary: dict[str, Any], task: str, titled: bool = False) -> go.Figure:
    """Accuracy per position with its interval, a line per length (and filler)."""
    figure = go.Figure()
    cells = [cell for cell in summary["cells"] if cell["task"] == task and cell["accuracy"] is not None]
    named = any(cell.get("layout") for cell in cells)
    groups = sorted({(cell["length"], cell.get("filler") or "") for cell in cells})
    for (length, filler), style in zip(groups, _styles(), strict=False):
        row = sorted(
            (cell for cell in cells if cell["length"] == length and (cell.get("filler") or "") == filler),
            key=row_key,
        )
        figure.add_trace(
            go.Scatter(
                x=[cell["layout"] if named else cell["depth"] for cell in row],
                y=[cell["accuracy"] for cell in row],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [cell["ci_high"] - cell["accuracy"] for cell in row],
                    "arrayminus": [cell["accuracy"] - cell["ci_low"] for cell in row],
                },
                mode="lines+markers",
                name=f"{length:,} tokens" + (f", {filler}" if filler else ""),
                **style,
            )
        )
    if named:
        figure.update_xaxes(title="layout of the target problem", type="category")
    else:
        figure.update_xaxes(title="evidence depth (0 = first, 1 = last)", range=[-0.05, 1.05])
    figure.update_yaxes(range=[0, 1.05], title="accuracy")
    figure.update_layout(
        title=_title(summary, task, "accuracy by position") if titled else f"{task}: accuracy by position"
    )
    return figure


def _cell_text(cell: dict[str, Any] | None) -> str:
    if cell is None or cell["accuracy"] is None:
        return ""
    return f"{cell['accuracy']:.2f}<br>n={cell['n']}"


def heatmap_figure(summary: dict[str, Any], task: str) -> go.Figure:
    """Accuracy by position x length, each cell printed with its value and n."""
    cells = [cell for cell in summary["cells"] if cell["task"] == task]
    lengths = sorted({cell["length"] for cell in cells})
    rows = sorted({row_key(cell) for cell in cells})
    lookup = {(row_key(cell), cell["length"]): cell for cell in cells}
    grid = [[lookup.get((key, length)) for length in lengths] for key in rows]
    figure = go.Figure(
        go.Heatmap(
            x=[f"{length:,}" for length in lengths],
            y=[key[2] for key in rows],
            z=[[None if cell is None else cell["accuracy"] for cell in line] for line in grid],
            text=[[_cell_text(cell) for cell in line] for line in grid],
            texttemplate="%{text}",
            colorscale=COLOUR_SCALE,
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "accuracy"}},
        )
    )
    figure.update_xaxes(title="prompt length (model tokens)", type="category")
    figure.update_yaxes(title="evidence position", autorange="reversed", type="category")
    figure.update_layout(title=_title(summary, task, "accuracy by position x length"))
    return figure


def _file_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "task"


def run_figures(summary: dict[str, Any]) -> dict[str, go.Figure]:
    """Each task's three figures by file stem: ``TASK-heatmap``, ``TASK-length``, ``TASK-position``."""
    figures: dict[str, go.Figure] = {}
    for analysis in summary["tasks"]:
        task = analysis["task"]
        stem = _file_part(task)
        figures[f"{stem}-heatmap"] = heatmap_figure(summary, task)
        figures[f"{stem}-length"] = length_figure(summary, [task])
        figures[f"{stem}-position"] = position_figure(summary, task, titled=True)
    for figure in figures.values():
        figure.update_layout(template="simple_white", margin={"t": 90})
    return figures


def write_figures(summary: dict[str, Any], folder: Path) -> list[Path]:
    """Write each figure of the run as SVG and PNG into ``folder``; the files written."""
    if importlib.util.find_spec("kaleido") is None:
        raise BadInput(f"--figures: static export needs kaleido and Chrome or Chromium: {INSTALL}")
    import plotly.io as pio

    figures = run_figures(shareable(summary))
    if not figures:
        raise BadInput("--figures: the run has no scored task to draw")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BadInput(f"--figures: cannot create {folder} ({error.strerror})") from None
    paths = [folder / f"{stem}.{kind}" for kind in FORMATS for stem in figures]
    mathjax = pio.defaults.mathjax
    pio.defaults.mathjax = False  # no formula in these figures: no script to fetch from a CDN
    try:
        pio.write_images([*figures.values()] * len(FORMATS), paths, **EXPORT_SIZE)
    except RuntimeError as error:
        if type(error).__name__ == "ChromeNotFoundError":
            raise BadInput(
                "--figures: kaleido found no Chrome or Chromium (apt install chromium, or run "
                "plotly_get_chrome)"
            ) from None
        raise
    finally:
        pio.defaults.mathjax = mathjax
    return paths
