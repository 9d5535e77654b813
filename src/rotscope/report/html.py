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

# Transitional (issue 47): this view reads the summary's dump, the report's typed helpers take its
# records, so each call of one validates its part (``Record.model_validate_json``) until it goes typed.
from rotscope.records.cells import Cell
from rotscope.records.effective import Bracket, Definition
from rotscope.records.run import CellOver
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.cells import depth_label, row_key
from rotscope.report.effective import base_lengths_text, bracket_text, near_text, no_scores_text
from rotscope.report.figures import length_figure, position_figure
from rotscope.report.names import shareable_data, without_paths
from rotscope.report.sentence import one_sentence
from rotscope.report.wording import headline_entries, headline_intro, order_note, token_count_line
from rotscope.store import RunStore

NEIGHBOURHOOD_CHARS = 240
WRONG_OUTCOMES = ("incorrect", "abstained")


def heatmap_rows(summary: dict[str, Any], task: str) -> dict[str, Any]:
    """The depth x length grid of one task as rows of cells (``None`` where nothing ran)."""
    cells = [cell for cell in summary["cells"] if cell["task"] == task]
    lengths = sorted({cell["length"] for cell in cells})
    keys = [row_key(Cell.model_validate_json(json.dumps(cell))) for cell in cells]
    rows = sorted(set(keys))
    lookup = {(key, cell["length"]): cell for key, cell in zip(keys, cells, strict=True)}
    return {
        "task": task,
        "lengths": lengths,
        "rows": [(key[2], [lookup.get((key, length)) for length in lengths]) for key in rows],
    }


def _figure_html(figure: go.Figure) -> Markup:
    figure.update_layout(margin={"l": 50, "r": 20, "t": 40, "b": 40}, height=340, template="plotly_white")
    return Markup(figure.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))


def accuracy_by_length(summary: dict[str, Any]) -> Markup:
    return _figure_html(length_figure(summary))


def accuracy_by_position(summary: dict[str, Any], task: str) -> Markup:
    return _figure_html(position_figure(summary, task))


def failure_mix(summary: dict[str, Any]) -> Markup:
    categories = sorted({name for cell in summary["cells"] for name in cell["categories"]})
    labels = [
        f"{cell['task']} {cell['length']:,} @ {depth_label(Cell.model_validate_json(json.dumps(cell)))}"
        for cell in summary["cells"]
    ]
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
        summary = shareable_data(build_summary(store, run_dir).model_dump())
        # an imported folder holds no prompts to show a wrong answer in
        wrong = [] if summary.get("imported") else wrong_answers(store)
        meta = store.meta()
    environment = Environment(
        loader=PackageLoader("rotscope.report", "templates"), autoescape=select_autoescape(default=True)
    )
    environment.filters["depth_label"] = lambda cell: depth_label(
        CellOver.model_validate_json(json.dumps(cell))
    )
    environment.globals.update(
        bracket_text=lambda bracket: bracket_text(Bracket.model_validate_json(json.dumps(bracket))),
        near_text=lambda entry: near_text(Definition.model_validate_json(json.dumps(entry))),
        base_lengths_text=base_lengths_text,
        no_scores_text=lambda analysis: no_scores_text(
            TaskAnalysis.model_validate_json(json.dumps(analysis))
        ),
    )
    typed = Summary.model_validate_json(json.dumps(summary))
    tasks = [analysis["task"] for analysis in summary["tasks"]]
    return environment.get_template("report.html.j2").render(
        summary=summary,
        heatmaps=[heatmap_rows(summary, task) for task in tasks],
        by_length=accuracy_by_length(summary) if tasks else "",
        by_position=[accuracy_by_position(summary, task) for task in tasks],
        mix=failure_mix(summary) if summary["cells"] else "",
        wrong=wrong,
        meta=meta,
        config_json=json.dumps(without_paths(meta.get("config")), indent=2),
        headline_intro=headline_intro(typed.effective_lengths),
        headline_entries=headline_entries(typed.effective_lengths),
        sentence=one_sentence(typed),
        token_counts=token_count_line(typed),
        order_note=order_note(summary["execution"]["order"]),
        approximate=(summary.get("token_counts") or {}).get("method") == "approximate",
        plotly_js=Markup(get_plotlyjs()),
    )


def write_report(run_dir: Path, output: Path) -> Path:
    write_output(output, render_report(run_dir), "report")
    return output
