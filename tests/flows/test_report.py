"""The HTML report: self-contained, escaped, one heatmap cell per (length, depth)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from rotscope import load_summary
from rotscope.backends.fake import FakeBackend, lexical_responder
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report.html import evidence_neighbourhood, render_report
from rotscope.report.terminal import print_summary
from rotscope.types import GenerateRequest

PLANTED = "<script>alert('pwned')</script>"


def _corpus(tmp_path: Path) -> str:
    folder = tmp_path / "corpus"
    folder.mkdir()
    lines = [f"valve {i % 17} checked." for i in range(1500)]
    (folder / "log.txt").write_text("\n".join(lines), encoding="utf-8")
    return str(folder / "*.txt")


def _hostile(request: GenerateRequest) -> str:
    answer = lexical_responder()(request)
    # Every nolima item gets a hostile reply; niah items answer as the string matcher does.
    return PLANTED if "not in the context" in answer else answer


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("report")
    config = build_config(
        {
            "tasks": ["niah", "nolima"],
            "lengths": [200, 400],
            "depths": [0.0, 0.5, 1.0],
            "limit": 2,
            "filler": {"kind": "text", "glob": _corpus(tmp_path)},
        }
    )
    return run_experiment(config, run_dir=tmp_path / "run", backend=FakeBackend("hostile", _hostile))


def test_report_escapes_model_output_everywhere(run_dir: Path) -> None:
    html = render_report(run_dir)
    assert PLANTED not in html
    assert "&lt;script&gt;alert(" in html


def test_report_is_self_contained(run_dir: Path) -> None:
    html = render_report(run_dir)
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=\"?https?:", html)


def test_report_has_one_heatmap_cell_per_length_and_depth(run_dir: Path) -> None:
    html = render_report(run_dir)
    for task in ("niah", "nolima"):
        table = html.split(f'<table class="heatmap" data-task="{task}">', 1)[1].split("</table>", 1)[0]
        cells = set(re.findall(r'data-length="(\d+)" data-depth="([\d.]+)"', table))
        assert cells == {(length, depth) for length in ("200", "400") for depth in ("0.0", "0.5", "1.0")}


def test_report_headline_names_the_definition(run_dir: Path) -> None:
    html = render_report(run_dir)
    headline = html.split('id="headline">', 1)[1].split("</div>", 1)[0]
    assert "Effective length per task" in headline
    assert "(nolima-0.85; 95% bracket: " in headline  # the bracket beside the definition (issue 31)
    assert "base score" in headline


def test_wrong_answers_show_the_evidence_marked(run_dir: Path) -> None:
    html = render_report(run_dir)
    wrong = html.split('<table id="wrong">', 1)[1].split("</table>", 1)[0]
    # Every nolima probe was answered with the planted script, so each is a wrong answer with its needle.
    assert wrong.count('class="wrong-row"') >= 2 * 2 * 3
    assert "<mark>" in wrong


def test_neighbourhood_escapes_context_and_marks_evidence() -> None:
    content = "before <b>bold</b>\nThe needle is here.\nafter & more"
    marked = str(evidence_neighbourhood(content, ["The needle is here."]))
    assert "<mark>The needle is here.</mark>" in marked
    assert "&lt;b&gt;bold&lt;/b&gt;" in marked
    assert "&amp; more" in marked


def test_a_gap_on_too_few_pairs_shows_no_interval(run_dir: Path) -> None:
    # limit 2: each length's gap to the control is paired on 2 instances, under MIN_PAIRS = 5.
    typed = load_summary(run_dir)
    summary = typed.model_dump()
    gaps = [gap for task in summary["tasks"] for gap in task["degradation"]]
    assert gaps and all(gap["too_few"] and gap["ci_low"] is None for gap in gaps)
    assert "too few pairs for an interval" in render_report(run_dir)
    console = Console(record=True, width=200)
    print_summary(typed, console)
    assert "on 2 pairs (too few pairs for an interval)" in console.export_text()
