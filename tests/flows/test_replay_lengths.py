"""Replayed recordings are their own instances at their own lengths: no length curve, effective
length or gap is computed from three unrelated recordings, and the planning line says what replay
does instead of naming lengths it never uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rotscope.analysis.summary import load_summary
from rotscope.analysis.tasks import NO_CURVE
from tests.support.cli_helpers import invoke

RECORDED = Path(__file__).resolve().parents[2] / "examples" / "replay" / "recorded.jsonl"
POSITIONS = ["beginning", "early-middle", "midpoint", "late-middle", "end"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], str]:
    folder = tmp_path_factory.mktemp("replay-lengths")
    config = folder / "replay.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "model": "fake/lexical-recent",
                "tasks": ["replay"],
                "replay": str(RECORDED),
                "depths": POSITIONS,
            }
        ),
        encoding="utf-8",
    )
    result = invoke("run", config, "--out", folder / "run")
    assert result.exit_code == 0, result.output
    shown = invoke("show", folder / "run")
    assert shown.exit_code == 0, shown.output
    return result.output, load_summary(folder / "run").model_dump(), shown.output


def test_three_recordings_give_no_length_curve(replayed: tuple[str, dict[str, Any], str]) -> None:
    _, summary, shown = replayed
    (analysis,) = summary["tasks"]
    assert len(analysis["lengths"]) == 3  # each recording at its own length, shown as it is
    assert analysis["degradation"] == []
    for effective in (analysis["effective_length"], summary["effective_length"]):
        assert (effective["value"], effective["state"], effective["no_curve"]) == (None, "no-data", NO_CURVE)
    assert summary["effective_lengths"]["tasks"][0]["no_curve"] == NO_CURVE
    flat = " ".join(shown.split())  # a log wraps at 100 columns between words
    assert "unmatched" not in flat and NO_CURVE in flat


def test_the_planning_line_names_what_replay_does(replayed: tuple[str, dict[str, Any], str]) -> None:
    output, _, _ = replayed
    (planning,) = [line for line in output.splitlines() if line.startswith("planning ")]
    assert "replay: each recording at its own length" in planning
    assert "lengths " not in planning  # the grid's default lengths are not used by replay
