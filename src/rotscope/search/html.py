"""The HTML report of a search folder (``rotscope report DIR`` on ``DIR/search.json``): the
verdict, the tested lengths on the accuracy-vs-length curve numbered in the order the search
tested them, the threshold, the bracket, and every decision in order. One file, opens offline."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from rotscope.errors import write_output
from rotscope.search.lines import last_per_step, search_lines
from rotscope.search.record import SearchRecord


def search_figure(record: SearchRecord) -> go.Figure:
    """Score by length (log axis) of each tested length's last decision, labelled with its place
    in the testing order; the threshold line (``F × base`` or the absolute score); the bracket
    shaded. Markers differ by state without colour (black and white)."""
    tested = last_per_step(record.decisions)
    order = {d.length: n for n, d in enumerate(tested, start=1)}
    figure = go.Figure()
    symbols = {"pass": "circle", "fail": "x", "open": "diamond-open"}
    for state in ("pass", "fail", "open"):
        points = sorted((d for d in tested if d.state == state), key=lambda d: d.length)
        if points:
            figure.add_trace(
                go.Scatter(
                    x=[d.length for d in points],
                    y=[d.score for d in points],
                    mode="markers+text",
                    name=state,
                    text=[f"#{order[d.length]}" for d in points],
                    textposition="top center",
                    marker={"symbol": symbols[state], "size": 11, "color": "#1d2330"},
                    customdata=[d.instances for d in points],
                    hovertemplate="%{x:,} tokens: score %{y:.2f} on %{customdata} instances",
                )
            )
    definition = record.definition
    if definition.relative:  # the base of the most instances: every decision's base is a prefix
        threshold = definition.value * max(tested, key=lambda d: d.instances).base
    else:
        threshold = definition.value
    figure.add_hline(y=threshold, line={"dash": "dash", "color": "#444"}, annotation_text="threshold")
    low, high = record.bracket.passes, record.bracket.fails
    if low is not None and high is not None:
        figure.add_vrect(x0=low, x1=high, fillcolor="#999", opacity=0.2, line_width=0)
    figure.update_xaxes(type="log", title="prompt length (model tokens)")
    figure.update_yaxes(range=[-0.05, 1.1], title="score (mean over instances and depths)")
    figure.update_layout(title="Tested lengths, numbered in order of testing", template="plotly_white")
    return figure


def render_search_report(record: SearchRecord, name: str) -> str:
    from plotly.offline import get_plotlyjs

    environment = Environment(
        loader=PackageLoader("rotscope.report", "templates"), autoescape=select_autoescape(default=True)
    )
    figure = search_figure(record)
    budget = record.budget.model_dump()  # the keys the record has, as it has them
    figure.update_layout(height=420, margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return environment.get_template("search.html.j2").render(
        name=name,
        lines=search_lines(record),
        decisions=record.decisions,
        record=record,
        budget=", ".join(f"{key} {value:,}" for key, value in budget.items() if value) or "none",
        figure=Markup(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})),
        plotly_js=Markup(get_plotlyjs()),
    )


def write_search_report(record: SearchRecord, name: str, output: Path) -> Path:
    write_output(output, render_search_report(record, name), "report")
    return output
