"""The gate's score t (``gate.margin_test``): its null variance, its level's building blocks and its
bounds by inversion."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rotscope.gate.margin_test import MarginData, bound, null_item_variance, p_value


def _data(means: list[float], loss: float, gain: float, items: float = 1.0) -> MarginData:
    values = np.array(means)
    return MarginData(
        means=values,
        present=np.ones(len(values), dtype=bool),
        items=np.full(len(values), items),
        loss=np.array(loss),
        gain=np.array(gain),
    )


def test_the_null_variance_with_no_discordance_is_the_margin_lost_on_its_own() -> None:
    """No discordant item seen: under "the loss is 0.05" the restricted estimate puts all of it on
    losses, p_loss 0.05 and p_gain 0, so a difference's variance is 0.05 - 0.05**2."""
    assert float(null_item_variance(np.array(0.0), np.array(0.0), np.array(100.0), -0.05)) == pytest.approx(
        0.05 - 0.05**2
    )


def test_the_null_variance_matches_the_restricted_likelihood_maximum() -> None:
    loss, gain, items, margin = 7.0, 3.0, 60.0, 0.1
    grid = np.linspace(1e-6, (1 - margin) / 2 - 1e-6, 200_001)
    rest = items - loss - gain
    likelihood = loss * np.log(grid + margin) + gain * np.log(grid) + rest * np.log(1 - 2 * grid - margin)
    best = grid[np.argmax(likelihood)]
    expected = 2 * best + margin - margin**2
    found = float(null_item_variance(np.array(loss), np.array(gain), np.array(items), -margin))
    assert found == pytest.approx(expected, abs=1e-5)


def test_an_all_concordant_sample_is_non_inferior_only_from_enough_clusters() -> None:
    """Zero spread cannot pass on its own: with one item per cluster, all concordant, the score t is
    sqrt(G * margin / (1 - margin)) (the null's variance), so margin 0.05 needs about 52+ clusters at
    alpha 0.05; the adjusted t it replaced passed from 34, which the data cannot support."""
    for clusters in (30, 60):
        p = float(p_value(_data([0.0] * clusters, 0, 0), -0.05, "above"))
        t = np.sqrt(clusters * 0.05 / 0.95)
        assert p == pytest.approx(float(scipy_stats.t.sf(t, clusters - 1)))
    assert float(p_value(_data([0.0] * 30, 0, 0), -0.05, "above")) > 0.05
    assert float(p_value(_data([0.0] * 60, 0, 0), -0.05, "above")) < 0.05


def test_three_clusters_never_show_non_inferiority_at_five_percent() -> None:
    """The variance about the tested value bounds the score t by sqrt(G - 1): three haystack
    variants cannot show non-inferiority at alpha 0.05 one-sided (t on 2 df needs 2.92)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        means = rng.uniform(-1, 1, 3).tolist()
        assert float(p_value(_data(means, 0, 0, items=20), -0.1, "above")) > 0.05


def test_clusters_that_lost_everything_are_shown_to_fail_from_sixteen() -> None:
    """The FAIL side keeps the sample variance, floored at the null's restricted estimate: 16 cases
    that all went from right to wrong are shown below -0.05 beyond Holm's level for 6 slices. At 8
    the floor (Tango's restricted discordances put the null at p_loss 0.525, p_gain 0.475) leaves
    p = 0.016 where the exact bound is 0.525**8 = 0.006: a slice of 8 cases cannot FAIL at Holm's
    level over 6 slices, which docs/statistics.md states."""
    assert float(p_value(_data([-1.0] * 16, loss=16, gain=0), -0.05, "below")) < 0.05 / 6
    eight = float(p_value(_data([-1.0] * 8, loss=8, gain=0), -0.05, "below"))
    assert 0.05 / 6 < eight < 0.05
    assert float(p_value(_data([-1.0] * 16, loss=16, gain=0), -0.05, "above")) > 0.5


def test_the_bounds_invert_the_tests_and_hold_the_estimate() -> None:
    data = _data([-1.0] * 6 + [0.0] * 40 + [1.0] * 2, loss=6, gain=2)
    lower, upper = float(bound(data, 0.05, "lower")), float(bound(data, 0.05, "upper"))
    estimate = float(data.estimate)
    assert lower < estimate < upper
    assert float(p_value(data, lower, "above")) == pytest.approx(0.05, abs=1e-4)
    assert float(p_value(data, upper, "below")) == pytest.approx(0.05, abs=1e-4)
    assert np.isnan(bound(data, np.nan, "lower"))
