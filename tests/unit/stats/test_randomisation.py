"""The sign-flip test: exact against brute force, valid by simulation, decided where the old
adjusted t was not."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from rotscope.stats.intervals import adjusted_t_interval
from rotscope.stats.randomisation import (
    EXACT_UP_TO,
    method_name,
    sign_flip_interval,
    sign_flip_p,
    sign_flip_test,
)


def _brute_force_two_sided(values: list[float]) -> float:
    observed = abs(sum(values))
    patterns = list(product((1, -1), repeat=len(values)))
    totals = [abs(sum(s * v for s, v in zip(signs, values, strict=True))) for signs in patterns]
    hits = sum(1 for total in totals if total >= observed - 1e-12)
    return hits / len(patterns)


@pytest.mark.parametrize(
    "values",
    [[0.2, -0.1, 0.3, 0.0, 0.4], [1.0, 1.0, 1.0, -1.0, 0.5, 0.25], [0.0, 0.0, 0.0], [0.3, -0.3]],
)
def test_exact_p_equals_brute_force_enumeration(values: list[float]) -> None:
    assert float(sign_flip_p(np.array(values))) == pytest.approx(_brute_force_two_sided(values))


def test_ten_clusters_that_all_favour_one_side_are_decided() -> None:
    # Issue 48's real example: 10 instances, all favouring one model, 28 discordant items.
    totals = np.array([3, 2, 4, 1, 3, 2, 5, 3, 2, 3], dtype=float)
    result = sign_flip_test(totals, np.full(10, 11.0))
    assert result.p_value == pytest.approx(2 / 1024)
    assert 0 < result.low < result.estimate < result.high
    # The adjusted t interval of the same cluster means reaches zero (a pseudo-pair at +1 and -1).
    low, _ = adjusted_t_interval(totals / 11.0)
    assert float(low) < result.low


def test_one_sided_p_at_a_shifted_null() -> None:
    totals = np.array([0.0] * 6)
    # Every cluster is 0.05 per item above a null of -0.05: all six signs agree.
    sizes = np.full(6, 10.0)
    assert float(sign_flip_p(totals, sizes, null=-0.05, alternative="greater")) == pytest.approx(1 / 64)
    assert float(sign_flip_p(totals, sizes, null=-0.05, alternative="less")) == pytest.approx(1.0)


def test_vectorised_p_equals_one_dataset_at_a_time() -> None:
    rng = np.random.default_rng(3)
    data = rng.normal(0.1, 1.0, size=(7, 9))
    together = sign_flip_p(data, alternative="greater")
    alone = [float(sign_flip_p(row, alternative="greater")) for row in data]
    assert together == pytest.approx(alone)


def test_random_patterns_above_the_exact_limit_are_seeded_and_valid() -> None:
    clusters = EXACT_UP_TO + 6
    assert "seeded" in method_name(clusters) and "exact" in method_name(EXACT_UP_TO)
    rng = np.random.default_rng(5)
    data = rng.standard_t(3, size=(2000, clusters))
    p = sign_flip_p(data)
    assert np.array_equal(p, sign_flip_p(data))
    rate = float((p <= 0.05).mean())
    # Level 0.05 under a symmetric null: within 3 Monte-Carlo standard errors (0.0049).
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 2000)
    assert p.min() > 0


def test_interval_covers_and_contains_the_estimate() -> None:
    rng = np.random.default_rng(11)
    data = rng.normal(0.2, 0.5, size=(400, 12))
    low, high = sign_flip_interval(data, confidence=0.95, bounds=(-3.0, 3.0))
    estimate = data.mean(axis=-1)
    assert np.all(low <= estimate + 1e-9) and np.all(estimate <= high + 1e-9)
    coverage = float(((low <= 0.2) & (high >= 0.2)).mean())
    assert 0.92 <= coverage <= 0.985
