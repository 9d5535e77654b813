"""A self-contained HTML report: one file, all JavaScript and CSS inlined, opens offline.

Model output is untrusted, so everything from the run goes through jinja2's autoescaping; the
evidence highlight is built from escaped pieces only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from rotscope.analysis.summary import build_summary
from rotscope.errors import write_output
from rotscope.report.cells import depth_label, row_key
from rotscope.report.terminal import order_note, token_count_line
from rotscope.store import RunStore

NEIGHBOURHOOD_CHARS = 240
WRONG_OUTCOMES = ("incorrect", "abstained")


def heatmap_rows(summary: dict[str, Any], task: str) -> dict[str, Any]:
    """The depth x length grid of one task as rows of cells (``None`` where nothing ran)."""
    cells = [cell for cell in summary["cells"] if cell["task"] == task]
    lengths = sorted({cell["length"] for cell in cells})
    rows = sorted({row_key(cell) for cell in cells})
    lookup = {(row_key(cell), cell["length"]): cell for cell in cells}
    return {
        "task": task,
        "lengths": lengths,
        "rows": [(key[2], [lookup.get((key, length)) for length in lengths]) for key in rows],
    }


def _figure_html(figure: go.Figure) -> Markup:
    figure.update_layout(margin={"l": 50, "r": 20, "t": 40, "b": 40}, height=340, template="plotly_white")
    return Markup(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def accuracy_by_length(summary: dict[str, Any]) -> Markup:
    figure = go.Figure()
    for analysis in summary["tasks"]:
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
                x=x, y=[line["accuracy"] for line in lines], mode="lines+markers", name=analysis["task"]
            )
        )
    figure.update_xaxes(type="log", title="prompt length (model tokens)")
    figure.update_yaxes(range=[0, 1.02], title="accuracy")
    figure.update_layout(title="Accuracy vs length (Wilson 95% on instances)")
    return _figure_html(figure)


def accuracy_by_position(summary: dict[str, Any], task: str) -> Markup:
    figure = go.Figure()
    cells = [cell for cell in summary["cells"] if cell["task"] == task and cell["accuracy"] is not None]
    named = any(cell.get("layout") for cell in cells)
    for length, filler in sorted({(cell["length"], cell.get("filler") or "") for cell in cells}):
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
            )
        )
    if named:
        figure.update_xaxes(title="layout of the target problem", type="category")
    else:
        figure.update_xaxes(title="evidence depth (0 = first, 1 = last)", range=[-0.05, 1.05])
    figure.update_yaxes(range=[0, 1.05], title="accuracy")
    figure.update_layout(title=f"{task}: accuracy by position")
    return _figure_html(figure)


def failure_mix(summary: dict[str, Any]) -> Markup:
    categories = sorted({name for cell in summary["cells"] for name in cell["categories"]})
    labels = [f"{cell['task']} {cell['length']:,} @ {depth_label(cell)}" for cell in summary["cells"]]
    figure = go.Figure(
        [
            go.Bar(name=name, x=labels, y=[cell["categories"].get(name, 0) for cell in summary["cells"]])
            for name in categories
        ]
    )
    figure.update_layout(barmode="stack", title="Failure categories per cell (items)")
    return _figure_html(figure)


def evidence_neighbourhood(content: str, evidence_texts: list[str]) -> Markup:
    """The evidence with some context either side, escaped, the evidence marked."""
    positions = [(content.find(text), text) for text in evidence_texts if text and text in content]
    if not positions:
        start = max(len(content) - 2 * NEIGHBOURHOOD_CHARS, 0)
        return Markup("… ") + escape(content[start:])
    positions.sort()
    first, last = positions[0][0], positions[-1][0] + len(positions[-1][1])
    start, end = max(first - NEIGHBOURHOOD_CHARS, 0), min(last + NEIGHBOURHOOD_CHARS, len(content))
    pieces: list[Markup] = [Markup("… ") if start else Markup("")]
    cursor = start
    for position, text in positions:
        pieces.append(escape(content[cursor:position]))
        pieces.append(Markup("<mark>") + escape(text) + Markup("</mark>"))
        cursor = position + len(text)
    pieces.append(escape(content[cursor:end]))
    pieces.append(Markup(" …") if end < len(content) else Markup(""))
    return Markup("").join(pieces)


def wrong_answers(store: RunStore) -> list[dict[str, Any]]:
    found = []
    for row in store.rows():
        if row["status"] != "ok" or (
            row["outcome"] not in WRONG_OUTCOMES and row["category"] != "hallucinated"
        ):
            continue
        content = store.prompt_messages(row["prompt_digest"])[-1]["content"]
        evidence = [span["text"] for span in json.loads(row["spans"])]
        found.append({**row, "neighbourhood": evidence_neighbourhood(content, evidence)})
    return found


def render_report(run_dir: Path) -> str:
    """The report of ``run_dir`` as one HTML document."""
    from plotly.offline import get_plotlyjs

    with RunStore.read(run_dir) as store:
        summary = build_summary(store, run_dir)
        wrong = wrong_answers(store)
        meta = store.meta()
    environment = Environment(
        loader=PackageLoader("rotscope.report", "templates"), autoescape=select_autoescape(default=True)
    )
    environment.filters["depth_label"] = depth_label
    tasks = [analysis["task"] for analysis in summary["tasks"]]
    return environment.get_template("report.html.j2").render(
        summary=summary,
        heatmaps=[heatmap_rows(summary, task) for task in tasks],
        by_length=accuracy_by_length(summary) if tasks else "",
        by_position=[accuracy_by_position(summary, task) for task in tasks],
        mix=failure_mix(summary) if summary["cells"] else "",
        wrong=wrong,
        meta=meta,
        config_json=json.dumps(meta.get("config"), indent=2),
        token_counts=token_count_line(summary),
        order_note=order_note(summary["execution"]["order"]),
        approximate=(summary.get("token_counts") or {}).get("method") == "approximate",
        plotly_js=Markup(get_plotlyjs()),
    )


def write_report(run_dir: Path, output: Path) -> Path:
    write_output(output, render_report(run_dir), "report")
    return output
