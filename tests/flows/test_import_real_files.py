"""``rotscope import`` of files as other harnesses really write them: a sigmoid-spaced depth grid
(depths that round alike), reruns in a ``trial`` column, ``True``/``false`` text, lengths that vary
per item binned with ``--bin-lengths``, a ``unit`` and a ``context_window`` column, and two models
in one file (``--model-column``: one folder per model, a session every view reads). The paired gap
equals an independent computation on the raw rows."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from rotscope.stats import paired_gap
from tests.support.cli_helpers import assert_bad_input, invoke

DEPTHS = [round(float(1 / (1 + np.exp(-x))), 4) for x in np.linspace(-4.5, 4.5, 35)]
"""35 sigmoid-spaced depths: 0.011 and 0.0143 both print as 0.01."""
INSTANCES = 8
TRIALS = 2
MODELS = ("org/model-a", "org/model-b")


def _write(path: Path) -> list[dict[str, object]]:
    rng = np.random.default_rng(7)
    rows: list[dict[str, object]] = []
    for model_number, model in enumerate(MODELS):
        for instance in range(INSTANCES):
            for depth_number, depth in enumerate(DEPTHS):
                for trial in range(TRIALS):
                    for condition, (low, high) in (("focused", (67, 874)), ("full", (108_707, 114_947))):
                        p = 0.9 if condition == "focused" else 0.6 - 0.2 * model_number
                        right = bool(rng.random() < p)
                        rows.append(
                            {
                                "item_id": f"q{instance}-{depth_number}",
                                "instance_id": f"doc{instance}",
                                "length_tokens": int(rng.integers(low, high + 1)),
                                "depth": depth,
                                "trial": trial,
                                "correct": ("True" if right else "false")
                                if trial
                                else ("true" if right else "FALSE"),
                                "model": model,
                                "unit": "tokens",
                                "context_window": 131_072,
                            }
                        )
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


def test_a_real_harness_file_of_two_models_imports_and_pairs(tmp_path: Path) -> None:
    rows = _write(tmp_path / "study.csv")
    out = tmp_path / "study"
    result = invoke(
        "import",
        tmp_path / "study.csv",
        "--out",
        out,
        "--bin-lengths",
        "1000,120000",
        "--model-column",
        "model",
    )
    assert result.exit_code == 0, result.output
    session = json.loads((out / "session.json").read_text(encoding="utf-8"))
    assert session["subjects"] == [["org-model-a", "org/model-a"], ["org-model-b", "org/model-b"]]
    summary = json.loads(invoke("show", out / "org-model-b", "--json").stdout)
    assert summary["model"] == "org/model-b"
    assert "lengths binned to 1,000, 120,000" in summary["imported"]["note"]
    assert summary["imported"]["binned_lengths"] == [1000, 120000]
    depths = {cell["depth"] for cell in summary["cells"] if cell["length"] == 120_000}
    assert len(depths) == len(set(DEPTHS)) == 35
    # The gap, by an independent computation: per-instance means at each binned length, paired.
    means: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["model"] == "org/model-b":
            length = 1000 if int(str(row["length_tokens"])) <= 1000 else 120_000
            means[length][str(row["instance_id"])].append(
                1.0 if str(row["correct"]).lower() == "true" else 0.0
            )
    short = {key: float(np.mean(values)) for key, values in means[1000].items()}
    long = {key: float(np.mean(values)) for key, values in means[120_000].items()}
    expected = paired_gap(short, long)
    (task,) = summary["tasks"]
    (gap,) = task["degradation"]
    assert gap["gap"] == pytest.approx(expected.estimate, abs=1e-12)
    assert gap["pairs"] == INSTANCES
    compared = invoke("compare", out, "--json")
    assert compared.exit_code == 0, compared.output
    assert all(not cell.get("categories") for cell in summary["cells"])  # an outcome is no category
    screen = invoke("show", out / "org-model-a").stdout
    assert "failures by category" not in screen and "some calls unpriced" not in screen
    assert "token counts: as imported, in tokens (not counted by rotscope)" in screen
    assert "lengths binned to 1,000, 120,000" in screen


def test_a_rerun_without_a_trial_column_and_a_bad_unit_are_named(tmp_path: Path) -> None:
    header = "item_id,instance_id,length_tokens,depth,correct"
    (tmp_path / "rerun.csv").write_text(f"{header}\nq1,d1,100,0.011,1\nq1,d1,100,0.011,0\n", encoding="utf-8")
    assert_bad_input(invoke("import", tmp_path / "rerun.csv", "--out", tmp_path / "a"), "need a trial column")
    (tmp_path / "close.csv").write_text(f"{header}\nq1,d1,100,0.011,1\nq1,d1,100,0.014,0\n", encoding="utf-8")
    assert invoke("import", tmp_path / "close.csv", "--out", tmp_path / "b").exit_code == 0
    (tmp_path / "unit.csv").write_text(f"{header},unit\nq1,d1,100,0.5,1,pages\n", encoding="utf-8")
    assert_bad_input(
        invoke("import", tmp_path / "unit.csv", "--out", tmp_path / "c"), "line 2, column unit: 'pages'"
    )
    (tmp_path / "long.csv").write_text(f"{header}\nq1,d1,5000,0.5,1\n", encoding="utf-8")
    assert_bad_input(
        invoke("import", tmp_path / "long.csv", "--out", tmp_path / "d", "--bin-lengths", "1000"),
        "above the last --bin-lengths edge 1,000",
    )
    assert_bad_input(
        invoke("import", tmp_path / "long.csv", "--out", tmp_path / "e", "--bin-lengths", "9,3"), "ascending"
    )
    for folder in "acde":
        assert not (tmp_path / folder).exists()


def test_base_lengths_reproduce_a_published_effective_length(tmp_path: Path) -> None:
    # A NoLiMa-style table whose base is 2K (no 250/500/1K rows): base 0.9, 0.85 x base = 0.765;
    # 4K holds 0.8 (above) and 8K 0.5 (below), so the effective length is 4K, as published.
    truth = {2000: 0.9, 4000: 0.8, 8000: 0.5}
    lines = ["item_id,instance_id,length_tokens,depth,correct"]
    for length, share in truth.items():
        right = round(share * 40)
        lines += [f"q{i},d{i},{length},0.5,{int(i < right)}" for i in range(40)]
    (tmp_path / "table.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke("import", tmp_path / "table.csv", "--out", tmp_path / "run", "--base-lengths", "2000")
    assert result.exit_code == 0, result.output
    (task,) = json.loads(invoke("show", tmp_path / "run", "--json").stdout)["tasks"]
    relative = task["effective_length"]
    assert relative["base_lengths"] == [2000] and relative["base_score"] == pytest.approx(0.9)
    assert relative["value"] == 4000
    assert_bad_input(
        invoke("import", tmp_path / "table.csv", "--out", tmp_path / "bad", "--base-lengths", "1000"),
        "--base-lengths: no row at length 1,000",
    )
    assert not (tmp_path / "bad").exists()
