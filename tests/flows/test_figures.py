"""The figures of a run (report and ``--figures``): titled with model, task and effective length,
lines that differ without colour, a grayscale-safe heatmap; the export's missing extra is one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rotscope import load_summary
from rotscope.config import build_config
from rotscope.execution.workflows.runner import run_experiment
from rotscope.report import figures
from rotscope.report.names import shareable
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("figures")
    config = build_config(
        {
            "model": "fake/lexical-recent",
            "tasks": ["niah", "nolima"],
            "lengths": [200, 400, 800],
            "depths": [0.0, 0.5, 1.0],
            "limit": 3,
            "controls": False,
            "filler": {"kind": "text", "glob": str(nonsense_corpus(root / "corpus") / "*.txt")},
        }
    )
    return run_experiment(config, run_dir=root / "run")


def test_each_task_has_three_figures_titled_with_model_task_and_effective_length(run_dir: Path) -> None:
    drawn = figures.run_figures(shareable(load_summary(run_dir)))
    assert sorted(drawn) == [
        f"{task}-{kind}" for task in ("niah", "nolima") for kind in ("heatmap", "length", "position")
    ]
    for stem, figure in drawn.items():
        title = figure.layout.title.text
        assert title.startswith(f"fake/lexical-recent · {stem.split('-')[0]}: "), title
        assert "effective length " in title
    assert "effective length no signal (nolima-0.85)" in drawn["nolima-length"].layout.title.text


def test_lines_differ_without_colour_and_the_heatmap_is_grayscale_safe(run_dir: Path) -> None:
    drawn = figures.run_figures(shareable(load_summary(run_dir)))
    lines = [trace for trace in drawn["niah-position"].data if trace.mode == "lines+markers"]
    assert len(lines) == 3
    assert len({(trace.line.dash, trace.marker.symbol) for trace in lines}) == 3
    assert (
        len({trace.line.dash for trace in lines}) == 3 and len({trace.marker.symbol for trace in lines}) == 3
    )
    heatmap = drawn["niah-heatmap"].data[0]
    colours = [colour for _, colour in heatmap.colorscale]
    assert colours[0] != colours[-1] and (heatmap.zmin, heatmap.zmax) == (0, 1)
    # Every cell prints its value, so the grid reads without its colours.
    assert all(text.startswith(("0.", "1.")) and "n=3" in text for row in heatmap.text for text in row)


def test_figures_without_kaleido_are_one_line_naming_the_extra(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = figures.importlib.util.find_spec
    monkeypatch.setattr(
        figures.importlib.util, "find_spec", lambda name, *rest: None if name == "kaleido" else real(name)
    )
    result = invoke("report", run_dir, "-o", tmp_path / "r.html", "--figures", tmp_path / "figs")
    assert_bad_input(result, "--figures", "pip install 'rotscope[figures]'")
    assert not (tmp_path / "figs").exists() and not (tmp_path / "r.html").exists()
