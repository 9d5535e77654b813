"""Issue 51, item 5: the effective length under every published definition, on an imported run
whose per-length scores are known, each checked against a hand computation."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_helpers import assert_bad_input, invoke

# Ten documents, one question each, at depth 0.5; correct (1) or not per length.
FALLING = {250: [1] * 10, 1000: [1] * 9 + [0], 4000: [1] * 6 + [0] * 4, 8000: [1] * 3 + [0] * 7}


def _import(folder: Path, name: str, pattern: dict[int, list[int]]) -> Path:
    source = folder / f"{name}.csv"
    with source.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "instance_id", "length_tokens", "depth", "correct", "model"])
        for length, outcomes in pattern.items():
            for index, correct in enumerate(outcomes):
                writer.writerow([f"q{index}", f"d{index}", length, 0.5, correct, name])
    out = folder / name
    result = invoke("import", source, "--out", out)
    assert result.exit_code == 0, result.output
    return out


def _definitions(run: Path) -> dict[str, dict[str, Any]]:
    result = invoke("show", run, "--json")
    assert result.exit_code == 0, result.output
    (task,) = json.loads(result.stdout)["tasks"]
    return {entry["definition"]: entry for entry in task["effective_length"]["definitions"]}


@pytest.fixture
def falling(tmp_path: Path) -> Path:
    return _import(tmp_path, "m-a", FALLING)


def test_five_definitions_in_order_each_with_a_source(falling: Path) -> None:
    found = _definitions(falling)
    assert list(found) == ["nolima-0.85", "absolute-0.856", "longscore", "auc-8000", "within-noise"]
    assert all(entry["source"] for entry in found.values())
    # The primary stays first and the top-level copy is unchanged (no source key there).
    result = json.loads(invoke("show", falling, "--json").stdout)
    assert "source" not in result["tasks"][0]["effective_length"]


def test_longscore_is_the_mean_relative_drop_from_the_base(falling: Path) -> None:
    longscore = _definitions(falling)["longscore"]
    # Base: mean at 250 and 1,000 = (1.0 + 0.9) / 2; beyond: 4,000 (0.6) and 8,000 (0.3).
    base = (1.0 + 0.9) / 2
    expected = ((0.6 - base) / base + (0.3 - base) / base) / 2
    assert longscore["measure"] == pytest.approx(expected)
    assert longscore["state"] == "value" and longscore["value"] is None
    assert "250, 1000" in longscore["note"]
    low, high = longscore["interval"]
    assert low < expected < high < 0  # a drop shown on ten documents
    assert "delta method" in longscore["interval_method"]


def test_auc_is_the_trapezoid_on_log2_length_over_the_span(falling: Path) -> None:
    auc = _definitions(falling)["auc-8000"]
    xs = [math.log2(length) for length in FALLING]
    ys = [0.0 + sum(v) / len(v) for v in FALLING.values()]
    area = sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(3)) / (xs[-1] - xs[0])
    assert area == pytest.approx(3.85 / 5)  # 2 x 0.95 + 2 x 0.75 + 1 x 0.45 over 5 doublings
    assert auc["measure"] == pytest.approx(area)
    low, high = auc["interval"]
    assert low < area < high


def test_within_noise_stops_before_the_first_length_shown_worse(falling: Path) -> None:
    within = _definitions(falling)["within-noise"]
    # 4,000: paired gap to the base per document: 0 (x6), -1 (x3), -0.5 (x1): mean -0.35, shown worse.
    assert (within["value"], within["state"]) == (1000, "value")
    bracket = within["bracket"]
    assert (bracket["low"]["length"], bracket["high"]["length"]) == (1000, 4000)
    tests = {test["length"]: test for test in bracket["tests"]}
    assert tests[4000]["estimate"] == pytest.approx(-0.35) and tests[4000]["fails"]
    assert tests[1000]["by_definition"]  # a base length is within noise by definition


def test_the_length_definitions_agree_with_their_thresholds(falling: Path) -> None:
    found = _definitions(falling)
    # NoLiMa: 0.85 x 0.95 = 0.8075; 1,000 (0.9) passes, 4,000 (0.6) falls. RULER: 0.856, same.
    assert found["nolima-0.85"]["value"] == 1000
    assert found["absolute-0.856"]["value"] == 1000


def test_show_definitions_prints_a_table_within_100_columns(falling: Path) -> None:
    result = invoke("show", falling, "--definitions")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert lines[0].startswith("imported: base 0.950 at 250, 1,000")
    rows = {line.split()[0]: line for line in lines[2:]}
    assert "-0.526" in rows["longscore"] and "Yang et al. 2025" in rows["longscore"]
    assert "0.770" in rows["auc-8000"]
    assert "first shown worse: 4,000" in rows["within-noise"]


def test_show_definitions_with_json_is_refused(falling: Path) -> None:
    assert_bad_input(invoke("show", falling, "--definitions", "--json"), "choose one")


def test_compare_definition_auc_reorders_a_pair(tmp_path: Path) -> None:
    # A holds perfectly to 4,000 and collapses at 8,000: NoLiMa 4,000, area 0.90.
    # B slips to 0.8 at 4,000 and holds there: NoLiMa 1,000, area (2 + 1.8 + 0.8) / 5 = 0.92.
    first = _import(tmp_path, "m-a", {250: [1] * 10, 1000: [1] * 10, 4000: [1] * 10, 8000: [0] * 10})
    second = _import(tmp_path, "m-b", {250: [1] * 10, 1000: [1] * 10, 4000: [1] * 8 + [0] * 2,
                                       8000: [1] * 8 + [0] * 2})  # fmt: skip

    def order(*extra: str) -> tuple[list[str], Any]:
        result = invoke("compare", first, second, "--json", *extra)
        assert result.exit_code == 0, result.output
        comparison = json.loads(result.stdout)
        return [entry["label"] for entry in comparison["leaderboard"]], comparison["ranked_by"]

    assert order() == (["m-a", "m-b"], None)
    assert order("--definition", "auc-8000") == (["m-b", "m-a"], "auc-8000")
    assert order("--definition", "auc") == (["m-b", "m-a"], "auc")
    assert order("--definition", "nolima-0.85") == (["m-a", "m-b"], "nolima-0.85")


def test_compare_definition_unknown_is_one_line(tmp_path: Path) -> None:
    first = _import(tmp_path, "m-a", FALLING)
    second = _import(tmp_path, "m-b", FALLING)
    assert_bad_input(invoke("compare", first, second, "--definition", "nope"), "no definition 'nope'")
