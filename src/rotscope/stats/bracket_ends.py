"""The ends of an effective-length bracket: each end's one-sided confidence, the paired margins
over a relative threshold and their bounds (clustered or not), and the ends and their state from
per-length decisions (vectorised, so a simulation runs the very same code on many datasets)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from rotscope.stats.intervals import (
    CELL_PSEUDO_WEIGHT,
    adjusted_t_interval,
    cluster_t_interval,
    proportion_interval,
)
from rotscope.stats.randomisation import sign_flip_interval, sign_flip_p

BRACKET_CONFIDENCE = 0.95
"""The joint confidence of an effective-length bracket: each end holds at one-sided
``1 - (1 - BRACKET_CONFIDENCE) / 2`` (a union bound over the two ends)."""

BracketState = Literal[
    "value", "at-least", "at-least-longest", "below", "below-shortest", "cannot-bound", "no-signal", "no-data"
]
"""``value``: both ends inside the tested lengths; ``at-least``: a lower end, nothing shown to fail
above it; ``at-least-longest``: every length passes up to the longest; ``below``: no lower end, an
upper end above the shortest; ``below-shortest``: the shortest length is shown to fail;
``cannot-bound``: neither end (no honest bound from these data)."""


def end_confidence(confidence: float = BRACKET_CONFIDENCE) -> float:
    """The one-sided confidence of each end of a bracket of joint ``confidence``."""
    return 1.0 - (1.0 - confidence) / 2.0


def threshold_margins(scores: np.ndarray, base: np.ndarray | float, ratio: float) -> np.ndarray:
    """Each instance's paired margin over a relative threshold, ``x - ratio * b``, for an instance
    scoring ``x`` at a length and ``b`` at the base (the statistic the adaptive search tests, there
    rescaled into [0, 1]); it lies in [-ratio, 1], so ``adjusted_t_interval`` applies."""
    return np.asarray(scores, dtype=float) - ratio * np.asarray(base, dtype=float)


def margin_bounds(margins: np.ndarray, one_sided: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided bounds at ``one_sided`` each of the mean paired margin (vectorised over the last
    axis): the adjusted t interval of ``paired_gap`` at two-sided ``2 * one_sided - 1``."""
    return adjusted_t_interval(margins, 2.0 * one_sided - 1.0)


def score_bounds(k: float, n: float, one_sided: float) -> tuple[float, float]:
    """One-sided bounds at ``one_sided`` each of an absolute score: the cell interval's method
    (``proportion_interval``) at two-sided ``2 * one_sided - 1``."""
    return proportion_interval(k, n, 2.0 * one_sided - 1.0)


def cluster_margin_bounds(
    margins: np.ndarray, clusters: Sequence[Any] | np.ndarray, one_sided: float
) -> tuple[np.ndarray, np.ndarray]:
    """``margin_bounds`` clustered on ``clusters`` (labels of the last axis: the haystack variant
    each pair's instance shares): ``cluster_t_interval`` on [-1, 1] with the paired gap's
    pseudo-pair, at two-sided ``2 * one_sided - 1``; with every margin its own cluster it is
    ``margin_bounds``. Vectorised over the leading axes."""
    return cluster_t_interval(margins, clusters, bounds=(-1.0, 1.0), confidence=2.0 * one_sided - 1.0)


def cluster_score_bounds(
    means: np.ndarray, clusters: Sequence[Any] | np.ndarray, one_sided: float
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided bounds at ``one_sided`` each of an absolute score whose instances share clusters
    (a haystack variant): the cell interval's clustered method (``mean_interval``: instance means
    in [0, 1], ``CELL_PSEUDO_WEIGHT``) at two-sided ``2 * one_sided - 1``. Vectorised over the
    leading axes of ``means`` (``clusters`` labels the last)."""
    low, high = cluster_t_interval(
        means, clusters, bounds=(0.0, 1.0), confidence=2.0 * one_sided - 1.0, weight=CELL_PSEUDO_WEIGHT
    )
    # As mean_interval: floating point leaves 0.9999999999999999 where the bound is exactly 1.
    return np.clip(np.round(low, 12), 0.0, 1.0), np.clip(np.round(high, 12), 0.0, 1.0)


def instance_score_bounds(means: np.ndarray, one_sided: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided bounds at ``one_sided`` each of an absolute score that is continuous in [0, 1]
    (the gold answer's probability, ``rows.on_score``), each instance its own cluster: the cell's
    interval (``cluster_score_bounds``, the adjusted t on instance means with a pseudo-instance at
    0 and at 1). ``score_bounds`` is Wilson's, whose variance p(1 - p) is a 0/1 value's: valid for
    a continuous score, whose variance is at most that, but wide. Vectorised over the leading axes."""
    return cluster_score_bounds(means, np.arange(np.shape(means)[-1]), one_sided)


SIGN_FLIP_FROM = 16
"""Clusters from which a length's relative test is the sign-flip test on the clusters' margin
totals (``sign_flip_margin_tests``) rather than the adjusted t: chosen by
``benchmarks/bracket_coverage.py`` (docs/statistics.md, "The bracket"). The sign-flip test of a
margin assumes the margins symmetric about their mean, which binary outcomes are not: on a curve
just under the threshold its lower end passed a failing length 0.061 of the time at 10 clusters
and 0.037 at 12 (nominal 0.025 each end), at most 0.026 from 16; there it places a cliff far more
often than the adjusted t, whose pseudo-pair alone keeps a perfect model from passing below 15."""


SIGN_FLIP_FROM_CONTINUOUS = 6
"""``SIGN_FLIP_FROM`` for a continuous score (``rows.is_continuous``: the gold answer's probability),
chosen by ``benchmarks/likelihood_sim.py --part flip`` (docs/statistics.md, "Scores"): the fewest
clusters at which the sign-flip test's one-sided 0.025 can be reached (1/64), and the likelihood's
relative bracket covered at its stated 0.95 from there in every setting studied. A continuous
margin is far less skewed than a 0/1 one (mostly +0.15 with a tail at -0.85), which is what held
accuracy at 16; below its threshold the adjusted t's pseudo-pair (+1 and -1, a 0/1 device) is most
of a continuous margin's variance and keeps it from deciding."""


def uses_sign_flip(clusters: int, continuous: bool = False) -> bool:
    """Whether a relative test on ``clusters`` clusters is the sign-flip test: from
    ``SIGN_FLIP_FROM`` clusters, or ``SIGN_FLIP_FROM_CONTINUOUS`` on a ``continuous`` score."""
    return clusters >= (SIGN_FLIP_FROM_CONTINUOUS if continuous else SIGN_FLIP_FROM)


def cluster_totals(values: np.ndarray, clusters: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's total of ``values`` (the last axis labelled by ``clusters``; vectorised over
    the leading axes) and its size, the clusters in the order of their labels as text: above
    ``stats.randomisation.EXACT_UP_TO`` clusters the seeded sign patterns make the p-value depend
    on that order, so one order for every caller (the labels ``c0``, ``c1``, ``c10`` and ``0``,
    ``1``, ``10`` sort alike)."""
    values = np.asarray(values, dtype=float)
    labels = list(clusters)
    order = sorted(dict.fromkeys(labels), key=str)
    onehot = np.zeros((len(labels), len(order)))
    onehot[np.arange(len(labels)), [order.index(label) for label in labels]] = 1.0
    return values @ onehot, onehot.sum(axis=0)


def sign_flip_margin_tests(
    margins: np.ndarray, clusters: Sequence[Any] | np.ndarray, one_sided: float, fail: float
) -> tuple[np.ndarray, np.ndarray]:
    """A length's pass and fail by the sign-flip test on the clusters' margin totals (vectorised
    over the leading axes): it passes when "the mean margin is at most 0" is rejected at
    ``1 - one_sided``, fails when "at least 0" is rejected at ``1 - fail``."""
    totals, sizes = cluster_totals(margins, clusters)
    passes = sign_flip_p(totals, sizes, alternative="greater") <= 1.0 - one_sided
    fails = sign_flip_p(totals, sizes, alternative="less") <= 1.0 - fail
    return np.asarray(passes), np.asarray(fails)


def sign_flip_margin_bounds(
    margins: np.ndarray, clusters: Sequence[Any] | np.ndarray, one_sided: float
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided bounds at ``one_sided`` each of the mean margin by inverting the sign-flip test
    (``stats.sign_flip_interval``, to about 1e-4), for a view to show beside the decision of
    ``sign_flip_margin_tests``."""
    totals, sizes = cluster_totals(margins, clusters)
    return sign_flip_interval(totals, sizes, confidence=2.0 * one_sided - 1.0, bounds=(-1.0, 1.0))


def bracket_indices(passes: np.ndarray, fails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ends of an effective-length bracket from per-length decisions (vectorised over all but
    the last axis, the lengths in ascending order).

    Lower end: a fixed-sequence test up the lengths: the index of the last length before the first
    one not shown to pass (-1 when the shortest is not). Each length is tested at the end's full
    level, and the family-wise error stays at that level: a false pass needs every earlier length
    passed, and the first truly failing length passes with at most that chance.
    Upper end: the first length above the lower end shown to fail (the number of lengths when none
    is); the caller tests the fails at a level split over the lengths that can fail (Bonferroni),
    so no truly passing length is shown to fail with more than the end's chance."""
    passes = np.asarray(passes, dtype=bool)
    fails = np.asarray(fails, dtype=bool)
    count = passes.shape[-1]
    leading = np.cumprod(passes, axis=-1).sum(axis=-1)
    low = leading - 1
    above = np.arange(count) > low[..., None]
    candidates = fails & above
    high = np.where(candidates.any(axis=-1), candidates.argmax(axis=-1), count)
    return low, high


def bracket_state(low: int, high: int, count: int) -> BracketState:
    """What a bracket's ends (``bracket_indices`` of ``count`` lengths) let one say."""
    if count == 0:
        return "no-data"
    if low == count - 1:
        return "at-least-longest"
    if high == 0:
        return "below-shortest"
    if low >= 0:
        return "value" if high < count else "at-least"
    return "below" if high < count else "cannot-bound"
