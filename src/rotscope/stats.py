"""Statistics on independent instances: intervals, paired gaps, effective length, position effects.

An instance is the unit that varies independently (a case in a cell; questions that share one
prompt are one instance). Items of one instance are averaged before any interval is computed,
so repeated trials never shrink an interval by themselves.

The release gate's tests are built from the pieces here: the adjusted t of ``paired_gap`` in parts
(``adjusted_t_parts``), Holm's adjustment and per-hypothesis levels (``holm_array``,
``step_levels_array``) and the exact binomial test against an accuracy floor (``below_floor_p``),
all vectorised so that a simulation runs the very same code on thousands of datasets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import special
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

IntervalMethod = Literal["wilson", "clopper-pearson"]
_STATSMODELS_METHOD = {"wilson": "wilson", "clopper-pearson": "beta"}
SATURATED_POINT = 0.95
"""Above this control-length accuracy a probe is saturated: the reference band is 90-95%."""
TOO_HARD_POINT = 0.90
"""Below this control-length accuracy a probe is too hard for the reference band."""
BASE_LENGTHS = (250, 500, 1000)
"""NoLiMa's base: the mean score at these lengths, those of them that were tested."""


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


def choose_base_lengths(tested: Sequence[int], base_lengths: Sequence[int] = BASE_LENGTHS) -> list[int]:
    """The ``base_lengths`` that were tested (NoLiMa's rule); else the shortest tested length.

    The base is never a pool of the lengths being judged: a 256/512/1,024 grid has base [256], not
    the three lengths whose loss the effective length measures."""
    lengths = sorted(tested)
    return [length for length in base_lengths if length in lengths] or lengths[:1]


def base_score(scores: Mapping[int, float], base_lengths: Sequence[int] = BASE_LENGTHS) -> float:
    """Mean score at the base lengths (see ``choose_base_lengths``)."""
    chosen = choose_base_lengths(list(scores), base_lengths)
    return sum(scores[length] for length in chosen) / len(chosen)


def _last_passing(scores: Mapping[int, float], threshold: float) -> int | None:
    effective: int | None = None
    for length in sorted(scores):
        if scores[length] < threshold:
            break
        effective = length
    return effective


def effective_length(
    scores: Mapping[int, float],
    *,
    base: float | None = None,
    base_lengths: Sequence[int] = BASE_LENGTHS,
    ratio: float = 0.85,
) -> int | None:
    """NoLiMa's effective length: scanning up from the shortest tested length, the longest length
    before the first whose score falls below ``ratio * base``; ``None`` when the shortest already does.

    ``base`` defaults to the mean score at ``base_lengths`` (those that were tested; else the
    shortest length, see ``choose_base_lengths``).
    """
    if not scores:
        return None
    if base is None:
        base = base_score(scores, base_lengths)
    return _last_passing(scores, ratio * base)


EffectiveState = Literal["value", "below-shortest", "at-least-longest", "no-signal", "no-data"]


def scan_effective(scores: Mapping[int, float], threshold: float) -> tuple[int | None, EffectiveState]:
    """The scan of ``effective_length`` with what its value means: ``value`` (a length below the
    threshold follows it), ``at-least-longest`` (nothing tested fell below: the longest tested length,
    a lower limit), ``below-shortest`` (the shortest length already falls below; value ``None``),
    ``no-data`` (no scores)."""
    if not scores:
        return None, "no-data"
    value = _last_passing(scores, threshold)
    if value is None:
        return None, "below-shortest"
    return value, "at-least-longest" if value == max(scores) else "value"


def absolute_effective_length(scores: Mapping[int, float], threshold: float) -> int | None:
    """RULER-style: scanning up, the longest length before the first score below ``threshold``."""
    return _last_passing(scores, threshold)


def calibration(point: float | None) -> str:
    """Where the control length's accuracy (a point estimate) stands against the reference band of
    90-95%: ``saturated`` above 0.95, ``too hard`` below 0.90, ``in band`` from 0.90 to 0.95
    inclusive. The verdict is on the point, as the band is; its interval is reported beside it
    (16 instances cannot place a lower bound above 0.95, so a verdict on the bound could never
    say saturated)."""
    if point is None:
        return "no data"
    if point > SATURATED_POINT:
        return "saturated"
    if point < TOO_HARD_POINT:
        return "too hard"
    return "in band"


BandVerdict = Literal["in band", "below the band", "above the band", "overlaps the band", "no data"]


def band_verdict(low: float | None, high: float | None) -> BandVerdict:
    """Where the control length's accuracy stands against the reference band, read from its
    interval: ``in band`` when the interval lies inside 0.90-0.95, ``below``/``above the band``
    when it lies wholly outside, ``overlaps the band`` otherwise (the data cannot say which). The
    point verdict (``calibration``) is what picks the lead; this is what a view may state."""
    if low is None or high is None:
        return "no data"
    if high < TOO_HARD_POINT:
        return "below the band"
    if low > SATURATED_POINT:
        return "above the band"
    if low >= TOO_HARD_POINT and high <= SATURATED_POINT:
        return "in band"
    return "overlaps the band"


MIN_PAIRS = 5
"""Fewer instances than this in both conditions give no interval ("too few pairs"): at 5 pairs the
adjusted t interval already spans about half of [-1, 1] (``benchmarks/gap_coverage.py``), and a
gap measured on fewer cannot be told from noise."""

PSEUDO_PAIR_WEIGHT = 0.5
"""Weight of each of the two pseudo-differences, +1 and -1, added to the paired differences before
the t interval (Agresti and Min's half a pair in each discordant cell): one pseudo-instance in all,
so a sample whose differences are all equal still has a spread and the interval never has zero
width."""


@dataclass(frozen=True)
class Gap:
    """Mean paired difference (long minus short) over instances present in both, with its interval.

    ``too_few`` is set, with no interval, when fewer than ``MIN_PAIRS`` instances are shared.
    ``clusters`` is how many clusters the interval's standard error counts (the pairs, unless
    ``paired_gap`` was given coarser clusters)."""

    estimate: float | None
    low: float | None
    high: float | None
    pairs: int
    method: str
    too_few: bool = False
    clusters: int | None = None


def paired_gap(
    short: Mapping[str, float],
    long: Mapping[str, float],
    *,
    confidence: float = 0.95,
    min_pairs: int = MIN_PAIRS,
    clusters: Mapping[str, Any] | None = None,
) -> Gap:
    """Paired gap of per-instance means keyed by instance (whole instances are the unit, so items
    of one instance are never treated as independent). ``clusters`` maps each key to a coarser
    cluster its instance shares a cause with (a haystack variant): the interval is then
    ``cluster_t_interval`` on those clusters, which is the adjusted t below when every key is its
    own cluster.

    The estimate is the mean of the paired differences. The interval is an adjusted t interval:
    the differences plus the pseudo-differences +1 and -1 weighted ``PSEUDO_PAIR_WEIGHT`` each
    (n + 1 observations in all), centred on their mean n/(n + 1) times the estimate, with their
    sample standard deviation and n degrees of freedom, clipped to [-1, 1]. It is never of zero
    width and always contains the estimate; ``benchmarks/gap_coverage.py`` shows its coverage of
    clustered binary data is at least nominal from 10 pairs on, where the cluster bootstrap it
    replaces covered 0.48 to 0.83 at 5 to 10 pairs."""
    keys = sorted(set(short) & set(long))
    if not keys:
        return Gap(None, None, None, 0, "none", too_few=True)
    differences = np.array([long[key] - short[key] for key in keys], dtype=float)
    estimate = float(differences.mean())
    if len(keys) < min_pairs:
        return Gap(estimate, None, None, len(keys), "too few pairs", too_few=True)
    labels = [key if clusters is None else clusters.get(key, key) for key in keys]
    if len(set(labels)) < len(keys):
        low, high = cluster_t_interval(differences, labels, bounds=(-1.0, 1.0), confidence=confidence)
        return Gap(
            estimate, float(low), float(high), len(keys), "cluster adjusted t", clusters=len(set(labels))
        )
    low, high = adjusted_t_interval(differences, confidence)
    return Gap(estimate, float(low), float(high), len(keys), "adjusted t", clusters=len(keys))


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


def sign_test(differences: Sequence[float]) -> float:
    """Two-sided exact sign test p-value on paired differences (zeros dropped)."""
    positive = sum(1 for d in differences if d > 0)
    negative = sum(1 for d in differences if d < 0)
    if positive + negative == 0:
        return 1.0
    return float(scipy_stats.binomtest(positive, positive + negative, 0.5).pvalue)


def benjamini_hochberg(p_values: Sequence[float], alpha: float = 0.05) -> tuple[list[bool], list[float]]:
    """Rejections and adjusted p-values under Benjamini-Hochberg (explicitly ``fdr_bh``)."""
    if not p_values:
        return [], []
    reject, adjusted, _, _ = multipletests(list(p_values), alpha=alpha, method="fdr_bh")
    return [bool(r) for r in reject], [float(p) for p in adjusted]


def holm(p_values: Sequence[float], alpha: float) -> list[float]:
    """Holm-adjusted p-values (``holm_array``; equal to statsmodels' ``method="holm"``, not its
    Holm-Sidak default). ``alpha`` is accepted for symmetry with ``benjamini_hochberg``."""
    if not p_values:
        return []
    return [float(p) for p in holm_array(np.asarray(p_values, dtype=float))]


def holm_array(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values along the last axis, vectorised over the leading ones (a
    simulation adjusts thousands of datasets at once). NaN marks a hypothesis not tested: it stays
    NaN and does not count in the family's size."""
    p = np.asarray(p_values, dtype=float)
    tested = ~np.isnan(p)
    size = tested.sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(tested, p, np.inf), axis=-1, kind="stable")
    ranked = np.take_along_axis(np.where(tested, p, np.inf), order, axis=-1)
    rank = np.arange(p.shape[-1])
    finite = np.isfinite(ranked)
    scaled = np.where(finite, np.minimum(1.0, (size - rank) * np.where(finite, ranked, 0.0)), 0.0)
    stepped = np.maximum.accumulate(scaled, axis=-1)
    adjusted = np.empty_like(stepped)
    np.put_along_axis(adjusted, order, stepped, axis=-1)
    return np.where(tested, adjusted, np.nan)


def step_levels(p_values: Sequence[float], alpha: float) -> list[float]:
    """Holm's per-hypothesis level alpha / (m - rank + 1), rank 1 for the smallest p."""
    return [float(level) for level in step_levels_array(np.asarray(p_values, dtype=float), alpha)]


def step_levels_array(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """``step_levels`` along the last axis (NaN: not tested, no level)."""
    p = np.asarray(p_values, dtype=float)
    tested = ~np.isnan(p)
    size = tested.sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(tested, p, np.inf), axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.broadcast_to(np.arange(p.shape[-1]), p.shape).copy(), axis=-1)
    levels = alpha / np.maximum(size - ranks, 1)
    return np.where(tested, levels, np.nan)


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


def below_floor_p(successes: np.ndarray, instances: np.ndarray, floor: float) -> np.ndarray:
    """One-sided p-value of "accuracy is below ``floor``": the chance of at most ``successes`` in
    ``instances`` binomial trials at the floor, P(Bin(n, floor) <= k), with the regularised
    incomplete beta so a fractional k (instances that average several items) is taken as it is. A
    [0, 1] variable with mean f has variance at most f(1 - f), so averaged instances keep it
    valid. A floor of 0 can never be missed (p = 1)."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(instances, dtype=float)
    if floor <= 0.0:
        return np.ones(np.broadcast(k, n).shape)
    if floor >= 1.0:
        return np.where(k < n, 0.0, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tail = special.betainc(np.maximum(n - k, 1e-12), k + 1, 1 - floor)
    return np.asarray(np.where(n <= 0, np.nan, np.where(k >= n, 1.0, tail)))


def floor_upper_bound(successes: np.ndarray, instances: np.ndarray, level: np.ndarray | float) -> np.ndarray:
    """The one-sided upper confidence bound at ``level`` matching ``below_floor_p`` (Clopper-Pearson
    with a fractional k): the floor at which that p-value equals ``level``."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(instances, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        upper = 1 - special.betaincinv(np.maximum(n - k, 1e-12), k + 1, np.asarray(level))
    return np.asarray(np.where(n <= 0, np.nan, np.where(k >= n, 1.0, np.clip(upper, 0.0, 1.0))))
