"""The first screen a person reads in ten seconds (issue 35): in a 100-column log (stdout a pipe, no
COLUMNS) no line is wider than 100 columns and none breaks inside an interval; the effective length is
said once, in the closing sentence; each task's failure categories are named; an ``@N`` offset is one
heat-map row, labelled ``@N tokens``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rotscope
from rotscope.analysis.summary import load_summary
from rotscope.config.experiment import build_config
from rotscope.execution.workflows.runner import run_experiment

ROTSCOPE = Path(sys.executable).parent / "rotscope"
LOG_WIDTH = 100


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("first-screen") / "run"
    config = build_config(
        {
            "model": "fake/curve-600",
            "tasks": ["niah", "join"],
            "lengths": [512, 1024],
            "depths": ["beginning", "@40", "end"],
            "limit": 4,
            "filler": {"kind": "readinglog", "variants": 2},
            "analysis": {"base_lengths": [512]},
            "out": str(out),
        }
    )
    return run_experiment(config)


@pytest.fixture(scope="module")
def screen(run_dir: Path) -> str:
    """``rotscope show`` with its stdout a pipe, as a CI log reads it."""
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(Path(rotscope.__file__).parents[1])
    shown = subprocess.run(
        [str(ROTSCOPE), "show", str(run_dir)], capture_output=True, text=True, env=env, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_log_is_100_columns_and_no_line_breaks_inside_an_interval(screen: str) -> None:
    lines = screen.splitlines()
    assert max(len(line) for line in lines) <= LOG_WIDTH, max(lines, key=len)
    assert any(len(line) > 80 for line in lines)  # 100 columns, not rich's 80 for a pipe
    for line in lines:
        assert line.count("[") == line.count("]"), line
    assert "\x1b[" not in screen  # a log gets no colour codes


def test_the_effective_length_is_said_once(screen: str, run_dir: Path) -> None:
    summary = load_summary(run_dir).model_dump()
    per_task = summary["effective_lengths"]["tasks"]
    flat = " ".join(screen.split())
    assert flat.lower().count("effective length of ") == len(
        per_task
    )  # the sentence, then one per other task
    assert "Effective length per task" not in flat and "Effective length:" not in flat
    for entry in per_task:
        if entry["value"] is not None:
            assert flat.count(f"{entry['value']:,} tokens (nolima") == 1
    # Each base length's accuracy, once in the lines per length (heat-map cells are per depth).
    for task in summary["tasks"]:
        base = task["calibration"]["length"]
        line = next(line for line in task["lengths"] if line["length"] == base)
        shown = (
            f"{line['accuracy']:.2f} [{line['ci_low']:.2f}, {line['ci_high']:.2f}] on {line['instances']} "
        )
        assert shown in flat


def _categories(summary: dict[str, Any], task: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for cell in summary["cells"]:
        if cell["task"] == task:
            for name, count in cell["categories"].items():
                counts[name] = counts.get(name, 0) + count
    return counts


def test_each_tasks_failure_categories_are_named_with_their_counts(screen: str, run_dir: Path) -> None:
    summary = load_summary(run_dir).model_dump()
    lines = [line for line in screen.splitlines() if "failures by category" in line]
    assert len(lines) == len(summary["tasks"])
    for task, line in zip((task["task"] for task in summary["tasks"]), lines, strict=True):
        counts = _categories(summary, task)
        assert counts, task  # the fake model gets some wrong at 1,024 tokens
        assert f"({sum(counts.values())} items)" in line
        for name, count in counts.items():
            assert f"{name} {count}" in line


def test_an_offset_is_one_row_labelled_with_its_tokens(screen: str) -> None:
    labels = re.findall(r"^│\s*([^│]*?)\s*│", screen, re.M)
    rows = [label for label in labels if label]
    assert rows.count("@40 tokens") == 2  # one row in each task's heat map
    assert "@40" not in [label.strip() for label in rows]
    for task_rows in (rows[: len(rows) // 2], rows[len(rows) // 2 :]):
        assert len(task_rows) == len(set(task_rows)) == 3  # beginning, end, @40 tokens
