"""A grid whose every prompt is rejected (``depths: ["@5000"]`` at 512 and 1,024 tokens) measures
nothing: the evidence-absent controls are not planned on their own, and a run or a pair stops
with one line of bad input before anything is written or spent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rotscope.backends import create_backend
from rotscope.config.experiment import load_config
from rotscope.plan.workitems import build_plan
from tests.support.cli_helpers import assert_bad_input, invoke

GRID: dict[str, Any] = {
    "name": "far",
    "model": "fake/lexical",
    "tasks": ["niah"],
    "lengths": [512, 1024],
    "depths": ["@5000"],
    "limit": 3,
    "controls": True,
}


def _experiment(folder: Path) -> Path:
    path = folder / "far.yaml"
    path.write_text(yaml.safe_dump(GRID), encoding="utf-8")
    return path


def test_controls_are_not_planned_without_a_placed_case(tmp_path: Path) -> None:
    config = load_config(_experiment(tmp_path))
    plan = build_plan(config, create_backend(config))
    assert plan.items == [] and len(plan.rejected) == 6  # 3 cases x 2 lengths, each beyond its filler


def test_a_run_that_can_measure_nothing_is_one_line_of_bad_input(tmp_path: Path) -> None:
    result = invoke("run", _experiment(tmp_path), "--out", tmp_path / "run")
    line = assert_bad_input(result, "nothing to measure", "@5000")
    assert "6" in line
    assert not (tmp_path / "run").exists()


def test_a_pair_that_can_measure_nothing_is_one_line_of_bad_input(tmp_path: Path) -> None:
    result = invoke(
        "run", _experiment(tmp_path), "--pair", "fake/lexical,fake/lexical-recent", "--out", tmp_path / "p"
    )
    assert_bad_input(result, "nothing to measure")
    assert not (tmp_path / "p").exists()
