"""The gate's test of a mean paired difference against a margin, on cluster means (docs/statistics.md,
"Gate tests"; chosen by ``benchmarks/gate_tests.py``).

H0: the mean of the clusters' mean differences (candidate - baseline) is ``threshold``. The
statistic is Student's t on ``G - 1`` degrees of freedom with three changes that keep its level
near a ceiling, where the differences are mostly 0 with a few -1 (a skewed, discrete law); the
first and third for non-inferiority only (``p_value``'s "above"), the FAIL tests ("below") keep the
sample variance, floored, which kept their level in the same simulations and lets a slice whose
every case lost everything FAIL from a handful of cases:

- the variance is taken about ``threshold``, not the sample mean (a score test's variance: large
  exactly when the data lie far on the side to be shown);
- it is at least the variance the null implies for independent items: per item
  ``p_loss + p_gain - threshold**2`` at the restricted maximum-likelihood discordances (Tango's
  score test for paired proportions), so clusters that happen to show no loss cannot pass on a
  spread of zero (the pseudo-pair of ``stats.adjusted_t_parts`` did this at a fixed cost that
  blocked a bit-identical rerun below 34 cases at margin 0.05);
- Johnson's (1978) correction for the skewness of the differences.

The discordances are each cell's net loss and gain (baseline minus candidate correct items where
positive, and the reverse): exact with one item per case and slice, a lower bound with several
trials, where the sample variance carries the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as scipy_stats

METHOD = "score t (variance about the margin, floored at the null's, skew-corrected)"
"""The non-inferiority test's name in the record and views."""
FAIL_METHOD = "t (sample variance floored at the null's)"
"""The FAIL tests' name."""

_STEPS = 30


@dataclass(frozen=True)
class MarginData:
    """What the test reads, arrays over leading axes (datasets, slices) with clusters last:
    each cluster's mean difference, whether it is present, its items; and per dataset the net
    discordant items (``loss``: baseline right, candidate wrong) of the clusters' items."""

    means: np.ndarray
    present: np.ndarray
    items: np.ndarray
    loss: np.ndarray
    gain: np.ndarray

    @property
    def clusters(self) -> np.ndarray:
        return np.asarray(self.present.sum(axis=-1))

    @property
    def estimate(self) -> np.ndarray:
        total = np.where(self.present, self.means, 0.0).sum(axis=-1)
        return np.asarray(total / np.maximum(self.clusters, 1))


def null_item_variance(
    loss: np.ndarray, gain: np.ndarray, items: np.ndarray, threshold: np.ndarray | float
) -> np.ndarray:
    """Per item, the variance of a paired difference (candidate - baseline in -1, 0, 1) when its
    mean is ``threshold``, at the restricted maximum-likelihood discordances given ``loss`` and
    ``gain`` discordant items among ``items``."""
    margin = np.clip(-np.asarray(threshold, dtype=float), -0.999, 0.999)
    flipped = margin < 0
    # the likelihood is symmetric in (loss, gain) <-> (gain, loss), margin <-> -margin
    first = np.where(flipped, gain, loss).astype(float)
    second = np.where(flipped, loss, gain).astype(float)
    margin = np.abs(margin)
    total = np.maximum(np.asarray(items, dtype=float), 1.0)
    rest = np.maximum(total - first - second, 0.0)
    linear = first * (1 - margin) + second * (1 - 3 * margin) - 2 * rest * margin
    constant = second * margin * (1 - margin)
    gain_p = (linear + np.sqrt(linear**2 + 8 * total * constant)) / (4 * total)
    return np.asarray(np.clip(2 * gain_p + margin - margin**2, 0.0, 1.0))


def t_statistic(
    data: MarginData, threshold: np.ndarray | float, *, centred: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The t of the mean against ``threshold`` and its degrees of freedom (NaN with fewer than 2
    clusters). ``centred``: the variance about ``threshold`` with the skew correction (the test of
    non-inferiority); else the sample variance, floored at the null's, uncorrected (the FAIL tests:
    centring caps |t| at sqrt(G - 1), so 8 cases that all lose everything could not FAIL a slice)."""
    g = data.clusters.astype(float)
    threshold = np.asarray(threshold, dtype=float)
    null = threshold[..., None] if threshold.ndim else threshold
    filled = np.where(data.present, data.means, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=-1) / g
        centre = null if centred else mean[..., None]
        about_null = np.where(data.present, (filled - centre) ** 2, 0.0).sum(axis=-1) / (g * (g - 1))
        per_item = null_item_variance(data.loss, data.gain, data.items.sum(axis=-1), threshold)
        inverse_items = np.where(data.present, 1.0 / np.maximum(data.items, 1.0), 0.0).sum(axis=-1)
        variance = np.maximum(about_null, per_item * inverse_items / g**2)
        third = np.where(data.present, (filled - mean[..., None]) ** 3, 0.0).sum(axis=-1) / g
        third = third if centred else np.zeros_like(third)
        spread = variance * g
        raw = mean - threshold
        shift = raw + third / (6 * spread * g) + third * raw**2 / (3 * spread**2)
        t = shift / np.sqrt(variance)
        # no spread at all (every cluster exactly at a threshold of 0): the side of the mean decides
        t = np.where(variance > 0, t, np.where(raw == 0, 0.0, np.sign(raw) * np.inf))
    few = g < 2
    return np.where(few, np.nan, t), np.where(few, np.nan, g - 1)


def p_value(data: MarginData, threshold: np.ndarray | float, side: Literal["above", "below"]) -> np.ndarray:
    """One-sided p of "the mean is above (below) ``threshold``": small when shown."""
    t, df = t_statistic(data, threshold, centred=side == "above")
    with np.errstate(invalid="ignore"):
        p = scipy_stats.t.sf(t, df) if side == "above" else scipy_stats.t.cdf(t, df)
    return np.asarray(p)


def bound(data: MarginData, level: np.ndarray | float, side: Literal["lower", "upper"]) -> np.ndarray:
    """The one-sided bound at ``level`` by inverting the test: the lower bound is the largest
    threshold that "above" still rejects (bisection on [-1, 1], 30 steps); NaN
    where the level is NaN or there are fewer than 2 clusters."""
    level = np.broadcast_to(np.asarray(level, dtype=float), data.estimate.shape)
    estimate = np.clip(np.nan_to_num(data.estimate), -1.0, 1.0)
    inside = estimate.copy()
    outside = np.full_like(estimate, -1.0 if side == "lower" else 1.0)
    test: Literal["above", "below"] = "above" if side == "lower" else "below"
    with np.errstate(invalid="ignore"):
        rejected_at_end = p_value(data, outside, test) <= level
        for _ in range(_STEPS):
            middle = (inside + outside) / 2
            rejects = p_value(data, middle, test) <= level
            outside = np.where(rejects, middle, outside)
            inside = np.where(rejects, inside, middle)
    # where even the end of the range is not rejected, the bound is that end
    value = np.where(rejected_at_end, outside, -1.0 if side == "lower" else 1.0)
    return np.asarray(np.where(np.isnan(level) | (data.clusters < 2), np.nan, value))
