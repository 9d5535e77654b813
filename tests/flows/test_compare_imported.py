"""rotscope compare on imported folders: two models' results on the same 300 questions at a short
and a long length, generated here with a known truth (model B as good as A at the short length,
0.3 worse at the long one), compare with that pairwise verdict and the paired difference of an
independent computation; a folder with a length the other lacks is narrowed to the shared cells
(its leaderboard entry built from them alone); a run folder with no cell in common is refused."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from rotscope.stats.randomisation import sign_flip_test
from tests.support.cli_helpers import assert_bad_input, invoke, nonsense_corpus

QUESTIONS = 300
PER_INSTANCE = 3
SHORT, LONG, EXTRA = 1_000, 32_768, 8_192
P_SHORT, P_LONG_A, P_LONG_B = 0.9, 0.9, 0.6
"""The truth: no difference at the short length, B 0.3 below A at the long one."""


def _draw(seed: int, p: float) -> np.ndarray:
    return (np.random.default_rng(seed).random(QUESTIONS) < p).astype(int)


def _write(path: Path, model: str, outcomes: dict[int, np.ndarray]) -> Path:
    lines = ["item_id,instance_id,length_tokens,position,correct,model\n"]
    for question in range(QUESTIONS):
        for length, drawn in outcomes.items():
            lines.append(f"q{question},doc{question // PER_INSTANCE},{length},,{drawn[question]},{model}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _means(outcomes: np.ndarray) -> dict[str, float]:
    found: dict[str, list[int]] = defaultdict(list)
    for question, outcome in enumerate(outcomes):
        found[f"doc{question // PER_INSTANCE}"].append(int(outcome))
    return {instance: float(np.mean(values)) for instance, values in found.items()}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("compare-imported")
    drawn = {
        "a": {SHORT: _draw(1, P_SHORT), LONG: _draw(2, P_LONG_A)},
        "b": {SHORT: _draw(3, P_SHORT), LONG: _draw(4, P_LONG_B)},
        # C answers nothing at a length A never measured, and like A elsewhere
        "c": {SHORT: _draw(5, P_SHORT), EXTRA: np.zeros(QUESTIONS, dtype=int), LONG: _draw(6, P_LONG_A)},
    }
    for name, outcomes in drawn.items():
        source = _write(root / f"{name}.csv", f"model-{name}", outcomes)
        result = invoke("import", source, "--out", root / name.upper())
        assert result.exit_code == 0, result.output
    result = invoke("compare", root / "A", root / "B", "--json")
    assert result.exit_code == 0, result.output
    return {"root": root, "drawn": drawn, "comparison": json.loads(result.stdout)}


def test_two_imported_models_get_the_verdict_of_the_known_truth(imported: dict[str, Any]) -> None:
    comparison, drawn = imported["comparison"], imported["drawn"]
    assert [run["imported"] for run in comparison["runs"]] == [True, True]
    (pair,) = comparison["pairs"]
    assert (pair["first"], pair["second"]) == ("model-a", "model-b")
    by_length = {entry["length"]: entry for entry in pair["lengths"]}
    assert by_length[LONG]["verdict"] == "worse"
    assert by_length[SHORT]["verdict"] == "no difference shown"
    assert pair["sentence"] == "model-a better than model-b at 32,768; no difference shown at 1,000"
    for length in (SHORT, LONG):  # the paired difference of an independent computation
        first, second = _means(drawn["a"][length]), _means(drawn["b"][length])
        # no haystack variant in an imported run: each instance its own cluster (issue 48: the
        # sign-flip test inverted, where the adjusted t of paired_gap was before)
        expected = sign_flip_test(np.array([second[key] - first[key] for key in sorted(first, key=str)]))
        entry = by_length[length]
        assert entry["pairs"] == QUESTIONS // PER_INSTANCE
        assert entry["difference"] == pytest.approx(expected.estimate, abs=1e-12)
        assert (entry["ci_low"], entry["ci_high"]) == pytest.approx((expected.low, expected.high), abs=1e-9)
        assert entry["test"].startswith(f"sign-flip on {expected.clusters} clusters")
    assert by_length[LONG]["ci_high"] < 0 < by_length[SHORT]["ci_high"]
    board = comparison["leaderboard"]
    assert [entry["model"] for entry in board] == ["model-a", "model-b"]
    assert all(entry["imported"] for entry in board)
    assert comparison["positions"] == ["unknown"]


def test_every_view_names_the_imported_models(imported: dict[str, Any]) -> None:
    root = imported["root"]
    terminal = invoke("compare", root / "A", root / "B")
    assert terminal.exit_code == 0, terminal.output
    assert "imported from another harness" in terminal.stdout and "model-a" in terminal.stdout
    markdown = invoke("compare", root / "A", root / "B", "--markdown")
    assert "| model-a (imported) |" in markdown.stdout
    assert "positions unknown" in markdown.stdout


def test_an_extra_length_is_left_out_of_the_leaderboard(imported: dict[str, Any]) -> None:
    root = imported["root"]
    alone = json.loads(invoke("show", root / "C", "--json").stdout)
    (task,) = alone["tasks"]
    assert task["effective_length"]["value"] == SHORT  # on its own grid: it fails at 8K
    result = invoke("compare", root / "A", root / "C", "--json")
    assert result.exit_code == 0, result.output
    comparison = json.loads(result.stdout)
    assert comparison["lengths"] == [SHORT, LONG]
    entry = next(entry for entry in comparison["leaderboard"] if entry["model"] == "model-c")
    assert [line["length"] for line in entry["lengths"]] == [SHORT, LONG]
    assert entry["effective_length"]["value"] == LONG  # on the shared cells: 8K never counted
    assert entry["worst_position"]["accuracy"] > 0.8
    # issue 51: the left-out length and C's effective length on its own grid are said, not lost
    (run_c,) = [run for run in comparison["runs"] if run["model"] == "model-c"]
    assert run_c["left_out_lengths"] == [EXTRA]
    assert run_c["own_effective"]["imported"]["value"] == SHORT
    assert [run["left_out_lengths"] for run in comparison["runs"] if run["model"] == "model-a"] == [[]]
    terminal = invoke("compare", root / "A", root / "C")
    flat = " ".join(terminal.stdout.split())
    assert "model-c left out 8,192 (on its own grid: effective length 1,000 on imported)" in flat


def test_a_run_folder_with_no_cell_in_common_is_refused(imported: dict[str, Any]) -> None:
    root = imported["root"]
    corpus = nonsense_corpus(root / "corpus", lines=40)
    config = {
        "name": "tiny",
        "model": "fake/lexical",
        "tasks": ["niah"],
        "lengths": [200],
        "depths": ["end"],
        "limit": 2,
        "controls": False,
        "filler": {"kind": "text", "glob": str(corpus / "*.txt")},
    }
    (root / "tiny.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert invoke("run", root / "tiny.yaml", "--out", root / "run").exit_code == 0
    assert_bad_input(invoke("compare", root / "A", root / "run"), "share no cell", "imported")
