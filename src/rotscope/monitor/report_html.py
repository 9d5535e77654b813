"""The monitoring store's HTML report (``rotscope monitor report STORE -o FILE.html``): one
self-contained file that opens offline (plotly's JavaScript inlined, as the run report's): the
ingested answered rate over time, a trace per length bin × position bin with its intervals; per
canary the lower bound on the paired drop over its checks, a trace per bin, with the warn and fail
margins drawn as lines; and the tables of ``report.monitor_markdown`` (the alerts, forbidden
claims on their own, where canary and ingest disagree).

It lays out what ``monitor.report_data`` assembled; everything from the store goes through
jinja2's autoescaping."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from rotscope.errors import write_output
from rotscope.monitor.report_markdown import (
    alert_table,
    canary_heading,
    check_table,
    disagreement_sentence,
    disagreement_table,
    forbidden_table,
    margins_sentence,
    rate_table,
)
from rotscope.monitor.report_model import CanaryReport, IngestReport, MonitorReport
from rotscope.report.figures import _styles


def rates_figure(ingest: IngestReport) -> go.Figure:
    """The answered rate per time bucket, one trace per bin, its 95% interval as error bars."""
    figure = go.Figure()
    for series, style in zip(ingest.series, _styles(), strict=False):
        points = series.points
        figure.add_trace(
            go.Scatter(
                x=[point.bucket for point in points],
                y=[point.answered for point in points],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [point.high - point.answered for point in points],
                    "arrayminus": [point.answered - point.low for point in points],
                },
                mode="lines+markers",
                name=series.bin,
                **style,
            )
        )
    figure.update_xaxes(title=f"time ({ingest.unit}, UTC)")
    figure.update_yaxes(range=[0, 1.05], title="answered rate of rated records")
    figure.update_layout(title="Ingested outcomes: answered rate per length bin / position bin")
    return figure


def checks_figure(canary: CanaryReport) -> go.Figure:
    """Each bin's lower bound on the paired drop per check, one trace per bin, with the margins."""
    figure = go.Figure()
    for series, style in zip(canary.series, _styles(), strict=False):
        points = series.points
        figure.add_trace(
            go.Scatter(
                x=[point.check for point in points],
                y=[point.drop_lower for point in points],
                text=[f"{point.at}: {point.status}" for point in points],
                mode="lines+markers",
                name=series.bin,
                **style,
            )
        )
    margins = canary.margins
    figure.add_hline(
        y=margins.warn,
        line_dash="dot",
        line_color="#f79009",
        annotation_text="warn",
        annotation_position="bottom right",
    )
    figure.add_hline(
        y=margins.fail,
        line_dash="dash",
        line_color="#d92d20",
        annotation_text="fail",
        annotation_position="top right",
    )
    figure.update_xaxes(title="check", dtick=1)
    figure.update_yaxes(title="drop at least (baseline − canary)")
    figure.update_layout(title=f"{canary_heading(canary)}: lower bound on the drop per check")
    return figure


def _html(figure: go.Figure) -> Markup:
    figure.update_layout(margin={"l": 60, "r": 20, "t": 60, "b": 50}, height=420, template="plotly_white")
    return Markup(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def render_monitor_report(data: MonitorReport) -> str:
    """The report of ``data`` (``monitor.report_data.report_data``) as one HTML document."""
    from plotly.offline import get_plotlyjs

    environment = Environment(
        loader=PackageLoader("rotscope.report", "templates"), autoescape=select_autoescape(default=True)
    )
    ingest = data.ingest
    canaries = []
    for canary in data.canaries:
        disagreement = canary.disagreement
        canaries.append(
            {
                "heading": canary_heading(canary),
                "margins": margins_sentence(canary),
                "figure": _html(checks_figure(canary)),
                "checks": check_table(canary),
                "alerts": alert_table(canary) if canary.alerts else None,
                "disagreement": None
                if disagreement is None
                else {
                    "sentence": disagreement_sentence(disagreement),
                    "table": disagreement_table(disagreement) if disagreement.rows else None,
                },
            }
        )
    return environment.get_template("monitor.html.j2").render(
        store=data.store,
        ingest=ingest,
        rates_figure=_html(rates_figure(ingest)) if ingest else None,
        rates=rate_table(ingest) if ingest else None,
        forbidden=forbidden_table(ingest) if ingest and ingest.forbidden else None,
        canaries=canaries,
        plotly_js=Markup(get_plotlyjs()),
    )


def write_monitor_report(data: MonitorReport, output: Path) -> Path:
    """Write the HTML report of ``data`` to ``output``."""
    write_output(output, render_monitor_report(data), "monitor report")
    return output
