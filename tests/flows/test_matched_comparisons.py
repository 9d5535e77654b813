"""Rejections are listed in the cells they would have filled, a cell whose prompts were all
rejected is shown (not dropped), and the gap between lengths pairs on (case, position): a depth one
length lacks cannot mix into it (issue 15, item 6)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from rich.console import Console

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.prompt.builder import PlacementError, PromptBuilder
from rotscope.records.summary import Summary
from rotscope.report.html import render_report
from rotscope.report.terminal import print_summary
from rotscope.tasks.needles import load_needle_cases
from rotscope.types import Case, GenerateRequest, Layout, RenderedPrompt
from tests.support.cli_helpers import valve_corpus

CASES = 12


NEEDLES: dict[str, Case] = {case.evidence[0].text: case for case in load_needle_cases("niah")}


def _right_only_near_the_end(request: GenerateRequest) -> str:
    """Answers when the needle is in the second half of the context: right at depth 1, wrong at 0."""
    user = request.messages[-1]["content"]
    context = user.split("<context>", 1)[1].split("</context>", 1)[0]
    lines = [line.strip() for line in context.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if line in NEEDLES and index >= len(lines) / 2:
            return NEEDLES[line].oracle.answer
    return "Zorblat Quimby"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reject: Any) -> dict[str, Any]:
    render = PromptBuilder.render

    def rejecting(self: PromptBuilder, case: Case, layout: Layout) -> RenderedPrompt:
        if not case.control and reject(case, layout):
            raise PlacementError(f"case {case.case_id}: no room at length {layout.length_tokens}")
        return render(self, case, layout)

    monkeypatch.setattr(PromptBuilder, "render", rejecting)
    config = build_config(
        {
            "name": "matched",
            "model": "fake/lexical",
            "tasks": ["niah"],
            "lengths": [200, 400],
            "depths": [0.0, 1.0],
            "limit": CASES,
            "filler": {"kind": "text", "glob": str(valve_corpus(tmp_path / "corpus") / "*.txt")},
        }
    )
    backend = FakeBackend("scripted", _right_only_near_the_end)
    summary = load_summary(run_experiment(config, run_dir=tmp_path / "run", backend=backend)).model_dump()
    schema = json.loads(
        resources.files("rotscope").joinpath("schemas", "summary.schema.json").read_text(encoding="utf-8")
    )
    jsonschema.validate(summary, schema, cls=jsonschema.Draft202012Validator)
    return summary


def _depth_0_at_400(case: Case, layout: Layout) -> bool:
    return layout.length_tokens == 400 and layout.depth == 0


def _cell(summary: dict[str, Any], length: int, depth: float) -> dict[str, Any]:
    (found,) = [c for c in summary["cells"] if c["length"] == length and c["depth"] == depth]
    return found


def test_the_scripted_model_reads_only_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _run(tmp_path, monkeypatch, lambda case, layout: False)
    accuracy = {(c["length"], c["depth"]): c["accuracy"] for c in summary["cells"]}
    assert accuracy == {(200, 0.0): 0.0, (200, 1.0): 1.0, (400, 0.0): 0.0, (400, 1.0): 1.0}
    ((gap,),) = [task["degradation"] for task in summary["tasks"]]
    assert gap["gap"] == 0.0 and gap["unmatched"] == 0 and gap["pairs"] == CASES
    assert summary["effective_length"]["unbalanced_lengths"] == []


def test_a_fully_rejected_cell_is_shown_and_the_gap_stays_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every depth-0 prompt at 400 is rejected. Paired on case only, 400 would score 1.0 (depth 1
    alone) against 0.5 at 200 (both depths): a +0.5 'improvement' that is only a change of depths."""
    summary = _run(
        tmp_path, monkeypatch, lambda case, layout: layout.length_tokens == 400 and layout.depth == 0
    )
    rejected = _cell(summary, 400, 0.0)
    assert rejected["all_rejected"] and rejected["n"] == 0 and rejected["accuracy"] is None
    assert rejected["rejected"] == CASES and len(rejected["rejected_cases"]) == CASES
    assert not _cell(summary, 400, 1.0)["all_rejected"] and _cell(summary, 400, 1.0)["rejected"] == 0
    ((gap,),) = [task["degradation"] for task in summary["tasks"]]
    assert gap["gap"] == 0.0, "the gap compares depth 1 with depth 1 only"
    assert gap["unmatched"] == CASES and gap["pairs"] == CASES
    assert summary["items"]["rejected_prompts"] == CASES
    assert {(r["length"], r["depth"]) for r in summary["rejections"]} == {(400, 0.0)}
    # the effective length says its 400 score stands on other depths than the 200 one
    assert summary["effective_length"]["unbalanced_lengths"] == [{"length": 400, "missing": CASES}]


def test_partial_rejections_are_counted_per_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = {f"niah-{n:02d}" for n in range(1, CASES + 1, 2)}
    summary = _run(
        tmp_path, monkeypatch, lambda case, layout: layout.length_tokens == 400 and case.case_id in odd
    )
    for depth in (0.0, 1.0):
        cell = _cell(summary, 400, depth)
        assert cell["rejected_cases"] == sorted(odd) and not cell["all_rejected"]
        assert cell["instances"] == CASES - len(odd)
    assert _cell(summary, 200, 0.0)["rejected"] == 0
    ((gap,),) = [task["degradation"] for task in summary["tasks"]]
    assert gap["pairs"] == CASES - len(odd) and gap["unmatched"] == 2 * len(odd)


def test_show_and_report_mark_rejected_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = _run(
        tmp_path, monkeypatch, lambda case, layout: layout.length_tokens == 400 and layout.depth == 0
    )
    console = Console(record=True, width=200)
    print_summary(Summary.model_validate(summary), console)
    shown = console.export_text()
    assert f"rejected ({CASES})" in shown and f"({CASES} unmatched left out)" in shown
    assert f"length 400 lacks {CASES} (case, position) pairs" in " ".join(shown.split())
    report = render_report(tmp_path / "run")
    assert "every prompt of this cell was rejected by the verifier" in report
    assert f"{CASES} (case, position) pairs held by one length only" in report
