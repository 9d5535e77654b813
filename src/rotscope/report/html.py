"""A self-contained HTML report: one file, all JavaScript and CSS inlined, opens offline.

Model output is untrusted, so everything from the run goes through jinja2's autoescaping; the
evidence highlight is built from escaped pieces only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from rotscope.analysis.summary import build_summary
from rotscope.errors import write_output
from rotscope.records._base import Record
from rotscope.records.cells import Cell
from rotscope.records.run import CellOver
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.cells import depth_label
from rotscope.report.effective import base_lengths_text, bracket_text, near_text, no_scores_text
from rotscope.report.figures import cell_grid, length_figure, position_figure, scores_figure
from rotscope.report.names import shareable, terminal_safe_summary, without_paths
from rotscope.report.questions import by_length, decoy_answers, kind_of, shown_questions
from rotscope.report.scores import agreement_line, kept_line, score_headline, score_label
from rotscope.report.sentence import closing_task, one_sentence
from rotscope.report.separations import separation_figure, separation_text
from rotscope.report.wording import headline_entries, headline_intro, order_note, token_count_line
from rotscope.rows import Row
from rotscope.store import RunStore

NEIGHBOURHOOD_CHARS = 240
WRONG_OUTCOMES = ("incorrect", "abstained")


class HeatmapRows(NamedTuple):
    """The depth x length grid of one task as rows of cells (``None`` where nothing ran)."""

    task: str
    lengths: list[int]
    rows: list[tuple[str, list[Cell | None]]]


def heatmap_rows(summary: Summary, task: str) -> HeatmapRows:
    """The depth x length grid of one task as rows of cells (``None`` where nothing ran)."""
    lengths, labels, grid = cell_grid(summary, task)
    return HeatmapRows(task, lengths, list(zip(labels, grid, strict=True)))


def _figure_html(figure: go.Figure) -> Markup:
    figure.update_layout(margin={"l": 50, "r": 20, "t": 40, "b": 40}, height=340, template="plotly_white")
    return Markup(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def accuracy_by_length(summary: Summary) -> Markup:
    return _figure_html(length_figure(summary))


def accuracy_by_position(summary: Summary, task: str) -> Markup:
    return _figure_html(position_figure(summary, task))


def failure_mix(summary: Summary) -> Markup:
    categories = sorted({name for cell in summary.cells for name in cell.categories or {}})
    labels = [f"{cell.task} {cell.length:,} @ {_depth_label(cell)}" for cell in summary.cells]
    figure = go.Figure(
        [
            go.Bar(name=name, x=labels, y=[(cell.categories or {}).get(name, 0) for cell in summary.cells])
            for name in categories
        ]
    )
    figure.update_layout(barmode="stack", title="Failure categories per cell (items)")
    return _figure_html(figure)


def _dump(record: Record | None) -> dict[str, Any] | None:
    return None if record is None else record.model_dump()


def _depth_label(cell: Cell | CellOver) -> str:
    """A cell's (or a cell over the error cap's) depth as the views name it (report/cells.py)."""
    return depth_label(cell)


def _point_accuracy(analysis: TaskAnalysis) -> float | None:
    """The calibration's accuracy as the report shows it: on instance means, the point's where an
    older summary has none."""
    calibration = analysis.calibration
    assert calibration is not None
    if "instance_accuracy" in calibration.model_fields_set:
        return calibration.instance_accuracy
    return calibration.accuracy


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


class WrongAnswer(Row):
    """A wrong answer as the report shows it: its row and the evidence's neighbourhood."""

    neighbourhood: Markup


def wrong_answers(store: RunStore) -> list[WrongAnswer]:
    found: list[WrongAnswer] = []
    for row in store.rows():
        if row["status"] != "ok" or (
            row["outcome"] not in WRONG_OUTCOMES and row["category"] != "hallucinated"
        ):
            continue
        content = store.prompt_messages(row["prompt_digest"])[-1]["content"]
        evidence = [span["text"] for span in json.loads(row["spans"])]
        found.append({**row, "neighbourhood": evidence_neighbourhood(content, evidence)})
    return found


def render_report(run_dir: Path, score: str | None = None) -> str:
    """The report of ``run_dir`` on ``score`` (``analysis.summary.summary_score``) as one HTML document."""
    from plotly.offline import get_plotlyjs

    with RunStore.read(run_dir) as store:
        # names from outside (model, task, case ids) as every view shows them (_util.safe_text)
        summary = shareable(terminal_safe_summary(build_summary(store, run_dir, score=score)))
        # an imported folder holds no prompts to show a wrong answer in
        wrong = [] if summary.imported else wrong_answers(store)
        meta = store.meta()
    environment = Environment(
        loader=PackageLoader("rotscope.report", "templates"), autoescape=select_autoescape(default=True)
    )
    environment.filters["depth_label"] = _depth_label
    environment.filters["separation_text"] = separation_text
    # The shared wording helpers (report/effective.py), as every view words them.
    environment.globals.update(
        bracket_text=bracket_text,
        near_text=near_text,
        base_lengths_text=base_lengths_text,
        no_scores_text=no_scores_text,
        point_accuracy=_point_accuracy,
        question_kind=kind_of,
        question_lengths=by_length,
        decoy_answers=decoy_answers,
    )
    tasks = [analysis.task for analysis in summary.tasks]
    # the worst position by the name the cells give it (``unknown`` for an import without one), as
    # the terminal and Markdown name it
    places = {(cell.task, cell.length, cell.depth): depth_label(cell) for cell in summary.cells}
    environment.globals["place_of"] = lambda task, length, depth: places.get((task, length, depth), depth)
    return environment.get_template("report.html.j2").render(
        summary=summary,
        heatmaps=[heatmap_rows(summary, task) for task in tasks],
        by_length=accuracy_by_length(summary) if tasks else "",
        by_position=[accuracy_by_position(summary, task) for task in tasks],
        by_separation=_figure_html(separation_figure(summary)) if summary.separations else "",
        # no failure category (an import: another harness's outcomes have none): no empty plot
        mix=failure_mix(summary) if any(cell.categories for cell in summary.cells) else "",
        wrong=wrong,
        questions=shown_questions(summary),
        meta=meta,
        config_json=json.dumps(without_paths(meta.get("config")), indent=2),
        headline_intro=headline_intro(summary.effective_lengths),
        headline_entries=headline_entries(summary.effective_lengths),
        sentence=one_sentence(summary),
        score_headline=score_headline(summary, closing_task(summary.effective_lengths)),
        score_name=score_label(summary.score),
        kept=kept_line(summary),
        agreement=[
            (agreement_line(entry).strip(), _figure_html(scores_figure(summary, entry.task)))
            for entry in summary.agreement or []
        ],
        token_counts=token_count_line(summary),
        order_note=order_note(summary.execution.order),
        approximate=summary.token_counts.method == "approximate",
        corpus=_dump(summary.corpus),
        plotly_js=Markup(get_plotlyjs()),
    )


def write_report(run_dir: Path, output: Path, score: str | None = None) -> Path:
    write_output(output, render_report(run_dir, score), "report")
    return output
