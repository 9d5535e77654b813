"""Intervals on independent instances: a proportion's (Wilson, Clopper-Pearson), a cell's
(cluster-robust adjusted t on instance means) and the paired gap's adjusted t, in parts for the
gate's vectorised tests (``TParts``).

An instance is the unit that varies independently (a case in a cell; questions that share one
prompt are one instance). Items of one instance are averaged before any interval is computed,
so repeated trials never shrink an interval by themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as scipy_stats
from statsmodels.stats.proportion import proportion_confint

IntervalMethod = Literal["wilson", "clopper-pearson"]
_STATSMODELS_METHOD = {"wilson": "wilson", "clopper-pearson": "beta"}


def proportion_interval(
    k: float, n: float, confidence: float = 0.95, method: IntervalMethod = "wilson"
) -> tuple[float, float]:
    """Interval for ``k`` successes in ``n`` independent instances (statsmodels, never Wald)."""
    if n <= 0:
        return (0.0, 1.0)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method=_STATSMODELS_METHOD[method])
    # Floating point leaves 0.9999999999999999 where the bound is exactly 1 (k = n).
    return (float(np.clip(round(low, 12), 0.0, 1.0)), float(np.clip(round(high, 12), 0.0, 1.0)))


def wilson(k: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` independent instances.

    ``k`` may be fractional when each instance contributes its mean over repeated items, so
    that 270/270 items over 30 instances is judged as 30/30, not 270/270.
    """
    return proportion_interval(k, n, confidence, "wilson")


PSEUDO_PAIR_WEIGHT = 0.5
"""Weight of each of the two pseudo-differences, +1 and -1, added to the paired differences before
the t interval (Agresti and Min's half a pair in each discordant cell): one pseudo-instance in all,
so a sample whose differences are all equal still has a spread and the interval never has zero
width."""


def mean_interval(
    means: Mapping[str, float], clusters: Mapping[str, Any] | None = None, confidence: float = 0.95
) -> tuple[float, float]:
    """The interval of a cell: ``cluster_t_interval`` of the instance means (in [0, 1]) with one
    pseudo-instance at each bound (``CELL_PSEUDO_WEIGHT``), clustered on ``clusters`` (each
    instance its own where ``None``); (0, 1) without instances. Wilson on the instance means,
    the interval before, under-covers just below the ceiling and over-covers means pooled over
    depths (``benchmarks/cluster_coverage.py``)."""
    keys = sorted(means)
    if not keys:
        return (0.0, 1.0)
    values = np.array([means[key] for key in keys], dtype=float)
    labels = [key if clusters is None else clusters.get(key, key) for key in keys]
    low, high = cluster_t_interval(
        values, labels, bounds=(0.0, 1.0), confidence=confidence, weight=CELL_PSEUDO_WEIGHT
    )
    # Floating point leaves 0.9999999999999999 where the bound is exactly 1.
    return (float(np.clip(round(float(low), 12), 0.0, 1.0)), float(np.clip(round(float(high), 12), 0.0, 1.0)))


def adjusted_t_interval(differences: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The adjusted t interval of ``paired_gap`` for differences in [-1, 1]; vectorised over the
    last axis, so ``benchmarks/gap_coverage.py`` runs the very same code on many datasets."""
    parts = adjusted_t_parts(differences)
    level = (1 - confidence) / 2
    return parts.bound(level, "lower"), parts.bound(level, "upper")


CELL_PSEUDO_WEIGHT = 1.0
"""Weight of each of the two pseudo-instances (one all wrong, one all right) a cell's interval adds
to its instance means (``cluster_t_interval``): twice the paired gap's ``PSEUDO_PAIR_WEIGHT``, as
half a pseudo-instance each leaves binary instances under-covered just below the ceiling
(``benchmarks/cluster_coverage.py`` chose it, by simulation and exact binomial coverage)."""


def cluster_t_interval(
    values: np.ndarray,
    clusters: Sequence[Any] | np.ndarray,
    *,
    bounds: tuple[float, float],
    confidence: float = 0.95,
    weight: float = PSEUDO_PAIR_WEIGHT,
) -> tuple[np.ndarray, np.ndarray]:
    """A cluster-robust adjusted t interval for the mean of per-instance ``values`` within
    ``bounds`` (instance means in [0, 1], paired differences in [-1, 1]) whose instances share a
    cause within a cluster (a haystack variant, a prompt); vectorised over the leading axes of
    ``values`` (``clusters`` labels the last axis), so ``benchmarks/cluster_coverage.py`` runs the
    very same code on many datasets.

    Two pseudo-instances at the two bounds, each of weight ``weight``, join the data (a sample
    whose values are all equal still has a spread: the interval never has zero width). The centre
    is the pooled mean; the standard error is cluster-robust (the squared residual totals of the
    clusters, the pseudo-instances' weighted, times G'/(G' - 1), where G' = G + 2 x weight /
    (instances per cluster) counts the pseudo-instances as the share of a cluster they are); the
    quantile is Student's t with G' - 1 degrees of freedom, so three clusters give a wide
    interval, as they should. With every instance its own cluster this is the adjusted t interval
    of ``paired_gap`` (``adjusted_t_interval``). Always contains the mean of ``values``.
    """
    data = np.asarray(values, dtype=float)
    labels = np.unique(np.asarray(clusters), return_inverse=True)[1].reshape(-1)
    count = data.shape[-1]
    groups = int(labels.max()) + 1
    membership = np.zeros((count, groups))
    membership[np.arange(count), labels] = 1.0
    sizes = membership.sum(axis=0)
    totals = data @ membership
    return cluster_t_from_totals(totals, sizes, bounds=bounds, confidence=confidence, weight=weight)


def cluster_t_from_totals(
    totals: np.ndarray,
    sizes: np.ndarray,
    *,
    bounds: tuple[float, float],
    confidence: float = 0.95,
    weight: float = PSEUDO_PAIR_WEIGHT,
) -> tuple[np.ndarray, np.ndarray]:
    """``cluster_t_interval`` from each cluster's total of values (``totals``, clusters on the last
    axis) and its number of instances (``sizes``): what a store's grouped counts give without one
    value per instance in memory (``monitor.rates``)."""
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    count = float(sizes.sum())
    groups = sizes.shape[-1]
    lowest, highest = bounds
    total = count + 2 * weight
    centre = (totals.sum(axis=-1) + weight * (lowest + highest)) / total
    squares = ((totals - sizes * centre[..., None]) ** 2).sum(axis=-1) + weight * (
        (lowest - centre) ** 2 + (highest - centre) ** 2
    )
    effective = groups + 2 * weight * groups / count
    standard_error = np.sqrt(squares / total**2 * effective / (effective - 1))
    half = scipy_stats.t.ppf(0.5 + confidence / 2, effective - 1) * standard_error
    return np.clip(centre - half, lowest, highest), np.clip(centre + half, lowest, highest)


@dataclass(frozen=True)
class TParts:
    """The adjusted t of ``paired_gap`` in parts, arrays over any leading axes: its centre, standard
    error and degrees of freedom (NaN where there are no values)."""

    centre: np.ndarray
    standard_error: np.ndarray
    df: np.ndarray

    def bound(self, level: np.ndarray | float, side: Literal["lower", "upper"]) -> np.ndarray:
        """The one-sided bound at ``level`` (clipped to [-1, 1])."""
        with np.errstate(invalid="ignore"):
            half = scipy_stats.t.ppf(1 - np.asarray(level), self.df) * self.standard_error
        value = self.centre - half if side == "lower" else self.centre + half
        return np.asarray(np.clip(value, -1.0, 1.0))

    def p_above(self, threshold: float) -> np.ndarray:
        """One-sided p-value of "the mean is above ``threshold``" (small when shown)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(scipy_stats.t.sf((self.centre - threshold) / self.standard_error, self.df))

    def p_below(self, threshold: float) -> np.ndarray:
        """One-sided p-value of "the mean is below ``threshold``" (small when shown)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(scipy_stats.t.cdf((self.centre - threshold) / self.standard_error, self.df))


def adjusted_t_parts(values: np.ndarray, present: np.ndarray | None = None) -> TParts:
    """``adjusted_t_interval``'s centre, standard error and degrees of freedom along the last axis;
    ``present`` (same shape, boolean) marks the values that exist, so rows of unequal size share
    one array."""
    values = np.asarray(values, dtype=float)
    mask = np.ones(values.shape, dtype=bool) if present is None else np.asarray(present, dtype=bool)
    filled = np.where(mask, values, 0.0)
    n = mask.sum(axis=-1)
    weight = PSEUDO_PAIR_WEIGHT
    total = n + 2 * weight
    centre = filled.sum(axis=-1) / total
    squares = (
        np.where(mask, (filled - centre[..., None]) ** 2, 0.0).sum(axis=-1)
        + weight * (1.0 - centre) ** 2
        + weight * (1.0 + centre) ** 2
    )
    standard_error = np.sqrt(squares / (total - 1) / total)
    empty = n == 0
    return TParts(
        np.where(empty, np.nan, centre),
        np.where(empty, np.nan, standard_error),
        np.where(empty, np.nan, total - 1),
    )
