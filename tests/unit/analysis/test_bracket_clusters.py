"""The effective-length bracket, the base's interval and the no-signal check cluster on the haystack
variant where the cases share fewer variants than there are cases, as the cells and the gaps do
(issue 31): three shared variants must not let the instance-level bounds claim a pass, a fail or
no signal that the variants cannot support; elsewhere the instances stay the clusters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rotscope.analysis.bracket import interval_label
from rotscope.analysis.cells import length_cell
from rotscope.analysis.tasks import effective_lengths
from rotscope.stats.bracket_ends import (
    cluster_margin_bounds,
    cluster_score_bounds,
    end_confidence,
    margin_bounds,
    sign_flip_margin_bounds,
)
from rotscope.stats.intervals import mean_interval

CASES = 30
ONE_SIDED = end_confidence()


def _rows(right: dict[int, list[bool]], variants: list[int | None]) -> list[dict[str, Any]]:
    return [
        {"task": "niah", "case_id": f"c{case:02d}", "instance_id": f"c{case:02d}", "item": 0,
         "length_target": length, "depth": 0.5, "position": None, "status": "ok",
         "outcome": "correct" if ok else "incorrect", "category": None if ok else "wrong",
         "judge_verdict": None, "haystack_variant": variants[case]}
        for length, outcomes in right.items()
        for case, ok in enumerate(outcomes)
    ]  # fmt: skip


def _effective(rows: list[dict[str, Any]]) -> dict[str, Any]:
    lengths = sorted({row["length_target"] for row in rows})
    per_length = {n: length_cell(n, [r for r in rows if r["length_target"] == n]) for n in lengths}
    return effective_lengths(per_length, rows)


def _test(bracket: dict[str, Any], length: int) -> dict[str, Any]:
    return next(test for test in bracket.tests if test.length == length)


SHARED = [case % 3 for case in range(CASES)]
UNKNOWN: list[int | None] = [None] * CASES
OWN = list(range(CASES))


def _all(value: bool) -> list[bool]:
    return [value] * CASES


def test_three_shared_variants_do_not_show_a_pass_the_instances_would() -> None:
    # 30/30 at the base, 29/30 at 512: 30 independent margins show 512 passing 0.85 x base; the one
    # miss sits in variant 0, and three variants cannot show it.
    at_512 = [case != 0 for case in range(CASES)]
    right = {256: _all(True), 512: at_512, 1024: _all(False)}
    alone = _effective(_rows(right, UNKNOWN)).bracket
    assert _test(alone, 512).passes and alone.low.length == 512
    shared = _effective(_rows(right, SHARED)).bracket
    assert not _test(shared, 512).passes and shared.low.length == 256
    margins = np.array(at_512, dtype=float) - 0.85
    lower, upper = cluster_margin_bounds(margins, SHARED, ONE_SIDED)
    assert (_test(shared, 512).lower, _test(shared, 512).upper) == pytest.approx((float(lower), float(upper)))
    assert "adjusted t, one-sided, clustered on 3 haystack variants" in shared.method
    assert "(no haystack variant recorded)" in alone.method


def test_three_shared_variants_do_not_show_a_fail_the_instances_would() -> None:
    # 20/30 at 1,024, every miss in variant 0: Wilson on 30 instances shows 1,024 below 0.856;
    # the variants (0, 1, 1) cannot.
    at_1024 = [case % 3 != 0 for case in range(CASES)]
    right = {256: _all(True), 512: _all(True), 1024: at_1024}
    alone = _effective(_rows(right, UNKNOWN)).definitions[1].bracket
    assert _test(alone, 1024).fails and alone.high.length == 1024
    shared = _effective(_rows(right, SHARED)).definitions[1].bracket
    assert not _test(shared, 1024).fails and shared.high.length is None
    fail = 1 - (1 - ONE_SIDED) / 3
    _, high = cluster_score_bounds(np.array(at_1024, dtype=float), SHARED, fail)
    assert _test(shared, 1024).fail_upper == pytest.approx(float(high) - 0.856)
    assert "adjusted t on instance means, one-sided, clustered on 3 haystack variants" in shared.method
    assert "Wilson on instances, one-sided" in alone.method


def test_the_base_interval_and_no_signal_cluster_on_shared_variants() -> None:
    # 8/30 at the base, all in variant 0: Wilson on 30 cases puts the upper bound below 0.5 (no
    # signal); the variants (0.8, 0, 0) leave it open, so the relative definition has a value.
    base = [case % 3 == 0 and case < 24 for case in range(CASES)]
    assert sum(base) == 8
    right = {256: base, 512: base, 1024: base}
    alone = _effective(_rows(right, UNKNOWN))
    assert alone.state == "no-signal" and alone.base_ci[1] < 0.5
    assert alone.base_ci_method == "Wilson on case means (no haystack variant recorded)"
    shared = _effective(_rows(right, SHARED))
    means = {f"c{case:02d}": float(ok) for case, ok in enumerate(base)}
    expected = mean_interval(means, {f"c{case:02d}": f"variant {SHARED[case]}" for case in range(CASES)})
    assert shared.base_ci == pytest.approx(list(expected))
    assert shared.base_ci[1] >= 0.5 and shared.state != "no-signal"
    assert shared.base_ci_method == "adjusted t on case means, clustered on 3 haystack variants"


def test_a_variant_per_case_keeps_the_instance_bounds() -> None:
    rng = np.random.default_rng(31)
    right = {length: list(rng.random(CASES) < p) for length, p in ((256, 0.95), (512, 0.9), (1024, 0.6))}
    own, alone = _effective(_rows(right, OWN)), _effective(_rows(right, UNKNOWN))
    for mine, theirs in zip(own.definitions, alone.definitions, strict=True):
        if mine.bracket is None:  # a definition that is a number (longscore, auc-L): no bracket
            assert theirs.bracket is None
            continue
        assert theirs.bracket is not None and mine.bracket.tests == theirs.bracket.tests
    assert own.base_ci == alone.base_ci and own.base_ci_method == "Wilson on case means"
    margins = np.array(right[512], dtype=float) - 0.85 * np.array(right[256], dtype=float)
    # 30 cases, each its own cluster: the sign-flip test (stats.SIGN_FLIP_FROM) on the case margins
    lower, _ = sign_flip_margin_bounds(margins, [f"c{case:02d}" for case in range(CASES)], ONE_SIDED)
    assert _test(own.bracket, 512).lower == pytest.approx(float(lower))
    assert "clustered" not in own.bracket.method and "sign-flip on 30 clusters" in own.bracket.method


def test_each_length_is_named_where_their_clusters_differ() -> None:
    same = {512: "a, clustered on 3 haystack variants", 1024: "a, clustered on 3 haystack variants"}
    assert interval_label(same, "a") == "a, clustered on 3 haystack variants"
    assert interval_label({}, "a") == "a"
    assert interval_label({1024: "a", 512: "a, clustered on 2 haystack variants"}, "a") == (
        "512: a, clustered on 2 haystack variants; 1024: a"
    )


def test_cluster_bounds_on_own_clusters_are_the_instance_bounds() -> None:
    margins = np.array([0.15, -0.85, 0.15, 0.15, -0.85, 0.15, 0.15])
    own = cluster_margin_bounds(margins, list(range(len(margins))), ONE_SIDED)
    assert np.allclose(own, margin_bounds(margins, ONE_SIDED))
    means = np.array([1.0, 0.0, 1.0, 1.0, 0.5])
    low, high = cluster_score_bounds(means, list(range(len(means))), ONE_SIDED)
    expected = mean_interval(dict(zip("abcde", means, strict=True)), confidence=2 * ONE_SIDED - 1)
    assert (float(low), float(high)) == pytest.approx(expected)
