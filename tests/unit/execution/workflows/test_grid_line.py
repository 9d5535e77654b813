"""The planning line names the grid's depths only for the tasks that use them: reasoning places its
items at layouts of its own (end, middle, ...), so a run of it alone does not list depths it never
uses."""

from __future__ import annotations

from pathlib import Path

from rotscope.config.experiment import build_config
from rotscope.execution.workflows.planned import grid_line
from tests.support.cli_helpers import invoke


def test_reasoning_alone_lists_no_depths() -> None:
    line = grid_line(build_config({"model": "fake/lexical", "tasks": ["reasoning"], "lengths": [512]}))
    assert "depths" not in line
    assert "reasoning: at layouts of its own" in line


def test_depths_kept_for_the_tasks_that_use_them() -> None:
    config = build_config(
        {"model": "fake/lexical", "tasks": ["niah", "reasoning"], "lengths": [512], "depths": [0.5]}
    )
    assert "depths 0.5 (reasoning: at layouts of its own)" in grid_line(config)


def test_a_depth_grid_is_listed_as_before() -> None:
    config = build_config({"model": "fake/lexical", "tasks": ["niah"], "lengths": [512], "depths": [0.5]})
    assert grid_line(config).endswith("depths 0.5; 1 trial(s)")


def test_plan_names_layouts_not_positions_for_reasoning(tmp_path: Path) -> None:
    config = tmp_path / "cre.yaml"
    config.write_text(
        "model: fake/lexical\ntasks: [reasoning]\nlengths: [512]\n"
        "reasoning: {items: 5, fillers: [questions_only], layouts: [end, middle]}\n",
        encoding="utf-8",
    )
    result = invoke("plan", str(config), "-o", str(tmp_path / "plan.json"))
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())  # whatever width the console wraps at
    assert "lengths [512], reasoning at layouts of its own," in printed
    assert "positions" not in printed.split("work items")[1].split("repetition")[0]
