"""Effective length states, the conservative definition at the built-in case count, the base
lengths of a 256/512/1,024 grid, instance accuracy beside item accuracy, calibration verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from rotscope.analysis.cells import length_cell
from rotscope.analysis.tasks import effective_lengths, task_analysis
from rotscope.stats.intervals import mean_interval
from rotscope.stats.length_scan import BASE_LENGTHS, choose_base_lengths

GRID = (256, 512, 1024, 2048)


def _row(case: int, length: int, correct: bool, item: int = 0, status: str = "ok") -> dict[str, Any]:
    return {
        "task": "niah",
        "case_id": f"niah-{case:02d}",
        "instance_id": f"niah-{case:02d}@{length}",
        "item": item,
        "length_target": length,
        "depth": 0.5,
        "position": None,
        "status": status,
        "outcome": "correct" if correct else "incorrect",
        "category": None if correct else "wrong",
        "judge_verdict": None,
    }


def _rows(right: dict[int, int], cases: int = 16) -> list[dict[str, Any]]:
    """``right[length]`` of ``cases`` cases right at each length, one item per instance."""
    return [_row(case, length, case < right[length]) for length in right for case in range(cases)]


def _effective(rows: list[dict[str, Any]], base_lengths: tuple[int, ...] = BASE_LENGTHS) -> dict[str, Any]:
    lengths = sorted({row["length_target"] for row in rows})
    per_length = {n: length_cell(n, [r for r in rows if r["length_target"] == n]) for n in lengths}
    return effective_lengths(per_length, rows, base_lengths)


def test_perfect_model_on_16_cases_has_a_conservative_effective_length() -> None:
    # 16/16: one-sided 95% Wilson lower bound 16 / (16 + 1.645^2) = 0.8553 >= 0.85 x 1.0.
    # (The two-sided bound of before, 16 / (16 + 1.96^2) = 0.8064, could not reach 0.85.)
    effective = _effective(_rows(dict.fromkeys(GRID, 16)))
    assert (effective.value, effective.state) == (2048, "at-least-longest")
    assert (effective.conservative, effective.conservative_state) == (2048, "at-least-longest")
    assert "one-sided 95% Wilson lower bound" in effective.conservative_definition
    assert effective.score == "instance_accuracy"


def test_conservative_fails_where_the_point_passes() -> None:
    # 16/16 at the base, 15/16 at 2,048: point 0.9375 >= 0.85 passes; its one-sided lower bound
    # 0.726 < 0.85 fails, so the conservative value stops at 1,024.
    effective = _effective(_rows({256: 16, 512: 16, 1024: 16, 2048: 15}))
    assert (effective.value, effective.state) == (2048, "at-least-longest")
    assert (effective.conservative, effective.conservative_state) == (1024, "value")


def test_low_base_is_no_signal_not_the_longest_length() -> None:
    # 2/16 everywhere: base 0.125, its 95% upper bound 0.360 < 0.5 -> no signal (the old code
    # returned 2,048: nothing fell below 0.85 x 0.125).
    effective = _effective(_rows(dict.fromkeys(GRID, 2)))
    assert effective.base_ci[1] == pytest.approx(0.3604, abs=1e-3)
    assert (effective.value, effective.state) == (None, "no-signal")
    assert effective.conservative_state == "no-signal"


def test_zero_base_is_no_signal_and_shortest_failure_is_below_shortest() -> None:
    assert _effective(_rows(dict.fromkeys(GRID, 0))).state == "no-signal"
    # Base lengths 256/512/1,024 (set in analysis.base_lengths) at 4, 16, 16 of 16 (base 0.75): 256 at
    # 0.25 < 0.6375 fails first. (The default base of this grid is 256 alone, which cannot fail.)
    effective = _effective(_rows({256: 4, 512: 16, 1024: 16, 2048: 16}), (256, 512, 1024))
    assert (effective.value, effective.state) == (None, "below-shortest")


def test_a_failure_inside_the_grid_is_a_value() -> None:
    effective = _effective(_rows({256: 16, 512: 16, 1024: 16, 2048: 8}))
    assert (effective.value, effective.state) == (1024, "value")


def test_no_rows_is_no_data() -> None:
    assert _effective([]).state == "no-data"


def test_the_base_of_a_grid_without_nolimas_lengths_is_its_shortest_length() -> None:
    # Issue 31: never the pool of every length up to 1,250 (lengths being judged).
    assert choose_base_lengths([256, 512, 1024]) == [256]
    assert choose_base_lengths(list(GRID)) == [256]
    assert choose_base_lengths([250, 500, 1000, 2000]) == [250, 500, 1000]
    assert choose_base_lengths([500, 1000, 2000]) == [500, 1000]
    assert choose_base_lengths([256, 512, 1024, 2048], (256, 512)) == [256, 512]
    assert _effective(_rows(dict.fromkeys(GRID, 16))).base_lengths == [256]


def test_instance_accuracy_on_an_unbalanced_cell() -> None:
    # Instance 0: 3 items right; instance 1: 1 item wrong (its other two items errored).
    rows = [_row(0, 256, True, item) for item in range(3)] + [_row(1, 256, False, 0)]
    rows += [_row(1, 256, False, item, status="error") for item in (1, 2)]
    found = length_cell(256, rows)
    assert found.accuracy == 3 / 4  # items: correct / (n - errors)
    assert found.instance_accuracy == 1 / 2  # the mean of the instance means 1.0 and 0.0
    assert (found.ci_low, found.ci_high) == mean_interval({"0": 1.0, "1": 0.0})


@pytest.mark.parametrize(
    ("right", "cases", "verdict"),
    [(12, 12, "saturated"), (16, 16, "saturated"), (15, 16, "in band"), (14, 16, "too hard")],
)
def test_calibration_verdicts(right: int, cases: int, verdict: str) -> None:
    rows = _rows({256: right, 2048: right}, cases)
    calibration = task_analysis("niah", rows).calibration
    assert calibration.verdict == verdict
    assert calibration.instance_accuracy == right / cases
    means = {f"{i}": float(i < right) for i in range(cases)}
    assert (calibration.ci_low, calibration.ci_high) == mean_interval(means)
