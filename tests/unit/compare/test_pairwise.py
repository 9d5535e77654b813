"""The pairwise verdicts: Holm's correction across a pair's lengths (equal to statsmodels'), the
verdict rule, the pairing of items, and by simulation with a known truth that identical models are
called different at most about alpha of the time while a large difference is found."""

from __future__ import annotations

from typing import Any

import numpy as np
from statsmodels.stats.multitest import multipletests

from rotscope.compare.pairwise import (
    LengthDifference,
    item_key,
    length_differences,
    two_sided_p,
    with_verdicts,
)


def _entry(length: int, p: float | None, difference: float) -> LengthDifference:
    return LengthDifference(length, 0.5, 0.5 + difference, difference, -1.0, 1.0, 20, p)


def test_holm_adjusts_across_the_tested_lengths_as_statsmodels_does() -> None:
    raw = [0.01, 0.04, 0.03, None]
    found = with_verdicts([_entry(256 * (i + 1), p, 0.3) for i, p in enumerate(raw)], alpha=0.05)
    expected = multipletests([0.01, 0.04, 0.03], alpha=0.05, method="holm")[1]
    assert [entry.p_holm for entry in found[:3]] == list(expected)
    assert [entry.verdict for entry in found] == [
        "better",
        "no difference shown",
        "no difference shown",
        "too few pairs",
    ]
    assert found[3].p_holm is None


def test_the_sign_of_the_difference_says_which_model_is_better() -> None:
    found = with_verdicts([_entry(100, 0.001, -0.4), _entry(200, 0.001, 0.4), _entry(300, 0.9, 0.0)])
    assert [entry.verdict for entry in found] == ["worse", "better", "no difference shown"]


def test_equal_pairs_give_no_evidence() -> None:
    assert two_sided_p([0.0] * 30) == 1.0
    assert two_sided_p([1.0] * 30) < 1e-6


def _rows(model: str, chance: np.ndarray, rng: np.random.Generator, length: int) -> list[dict[str, Any]]:
    rows = []
    for instance, p in enumerate(chance):
        for position in ("beginning", "end"):
            rows.append(
                {"task": "t", "case_id": f"c{instance}", "instance_id": f"c{instance}", "control": 0,
                 "length_target": length, "position": position, "depth": 0.0, "trial": 0, "filler": None,
                 "status": "ok", "outcome": "correct" if rng.random() < p else "incorrect", "model": model}
            )  # fmt: skip
    return rows


def test_items_pair_on_case_length_position_and_trial() -> None:
    rng = np.random.default_rng(0)
    first = _rows("a", np.ones(8), rng, 100)
    second = _rows("b", np.zeros(8), rng, 100)
    second[0]["status"] = "error"  # left out of both runs: that instance keeps its other item
    assert item_key(first[0]) == item_key(second[0]) == ("c0", 100, "beginning", 0)
    (entry,) = length_differences(first, second, "t", [100])
    assert entry.pairs == 8 and entry.difference == -1.0 and entry.verdict == "worse"


def test_identical_models_are_rarely_called_different_and_a_large_gap_is_found() -> None:
    """Known truth: 30 instances, each with its own chance (shared by both models) at 3 lengths.
    Equal models: a verdict other than "no difference shown" at any length in at most about alpha
    of the datasets (Holm controls the family-wise rate). The second model 0.4 worse: found."""
    rng = np.random.default_rng(36)
    false_alarms = found = 0
    datasets = 100  # the rates themselves: benchmarks/compare_tests.py (2,000 datasets a setting)
    for _ in range(datasets):
        first: list[dict[str, Any]] = []
        same: list[dict[str, Any]] = []
        worse: list[dict[str, Any]] = []
        for length in (100, 200, 400):
            chance = rng.uniform(0.5, 1.0, 30)
            first += _rows("a", chance, rng, length)
            same += _rows("b", chance, rng, length)
            worse += _rows("c", chance - 0.4, rng, length)
        verdicts = [e.verdict for e in length_differences(first, same, "t", [100, 200, 400])]
        false_alarms += any(verdict != "no difference shown" for verdict in verdicts)
        found += all(e.verdict == "worse" for e in length_differences(first, worse, "t", [100, 200, 400]))
    assert false_alarms / datasets <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / datasets)
    assert found / datasets >= 0.9
