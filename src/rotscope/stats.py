"""Statistics on independent instances: intervals, paired gaps, effective length, position effects.

An instance is the unit that varies independently (a case in a cell; questions that share one
prompt are one instance). Items of one instance are averaged before any interval is computed,
so repeated trials never shrink an interval by themselves.

The release gate's tests live here too: a cluster bootstrap of paired differences
(``bootstrap_means``), Holm's adjustment (``holm``) and its per-hypothesis levels (``step_levels``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize
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

    ``too_few`` is set, with no interval, when fewer than ``MIN_PAIRS`` instances are shared."""

    estimate: float | None
    low: float | None
    high: float | None
    pairs: int
    method: str
    too_few: bool = False


def paired_gap(
    short: Mapping[str, float],
    long: Mapping[str, float],
    *,
    confidence: float = 0.95,
    min_pairs: int = MIN_PAIRS,
) -> Gap:
    """Paired gap of per-instance means keyed by instance (whole instances are the unit, so items
    of one instance are never treated as independent).

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
    low, high = adjusted_t_interval(differences, confidence)
    return Gap(estimate, float(low), float(high), len(keys), "adjusted t")


def adjusted_t_interval(differences: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The adjusted t interval of ``paired_gap`` for differences in [-1, 1]; vectorised over the
    last axis, so ``benchmarks/gap_coverage.py`` runs the very same code on many datasets."""
    values = np.asarray(differences, dtype=float)
    n = values.shape[-1]
    weight = PSEUDO_PAIR_WEIGHT
    total = n + 2 * weight
    centre = values.sum(axis=-1) / total
    squares = (
        ((values - centre[..., None]) ** 2).sum(axis=-1)
        + weight * (1.0 - centre) ** 2
        + weight * (1.0 + centre) ** 2
    )
    standard_error = np.sqrt(squares / (total - 1) / total)
    half = scipy_stats.t.ppf(0.5 + confidence / 2, total - 1) * standard_error
    return np.clip(centre - half, -1.0, 1.0), np.clip(centre + half, -1.0, 1.0)


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


PSEUDO_INSTANCES = np.array([-1.0, 1.0])
"""One instance lost and one gained, added before resampling (after Agresti and Min's adjustment
for matched proportions): a percentile bootstrap of few instances with no discordant pair would
otherwise be a single point and claim non-inferiority from, say, 7 identical answers."""


def bootstrap_means(differences: np.ndarray, resamples: int, seed: Sequence[int]) -> np.ndarray:
    """Means of ``resamples`` cluster resamples (whole instances drawn with replacement) of the
    per-instance differences, with ``PSEUDO_INSTANCES`` added."""
    sample = np.concatenate([differences, PSEUDO_INSTANCES])
    rng = np.random.default_rng(list(seed))
    draws = rng.integers(0, len(sample), size=(resamples, len(sample)))
    means: np.ndarray = sample[draws].mean(axis=1)
    return means


def holm(p_values: Sequence[float], alpha: float) -> list[float]:
    """Holm-adjusted p-values (statsmodels ``method="holm"``, not its Holm-Sidak default)."""
    if not p_values:
        return []
    _, adjusted, _, _ = multipletests(list(p_values), alpha=alpha, method="holm")
    return [float(p) for p in adjusted]


def step_levels(p_values: Sequence[float], alpha: float) -> list[float]:
    """Holm's per-hypothesis level alpha / (m - rank + 1), rank 1 for the smallest p."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    levels = [0.0] * len(p_values)
    for rank, index in enumerate(order, start=1):
        levels[index] = alpha / (len(p_values) - rank + 1)
    return levels


POWER = 0.8
"""The power a plan's detectable drop is stated at."""


def power_to_fail(
    drop: float, instances: int, slices: int, margin: float, alpha: float, base: float
) -> float:
    """The chance that a gate slice whose true accuracy falls from ``base`` by ``drop`` FAILs.

    A normal approximation of the gate's own test (``rotscope.gate.verdict``): the slice's mean
    paired difference over its instances plus the two pseudo-instances (one lost, one gained), its
    standard error from one scored item per instance with baseline and candidate outcomes taken as
    independent, and Holm's first level alpha / slices (a slice that really dropped has the
    smallest p-value). ``benchmarks/gate_power.py`` runs the gate itself on simulated runs: at one
    slice and a drop of 0.10 from 0.90 it measured 0.05 / 0.09 / 0.14 / 0.26 / 0.49 at 16 / 30 /
    60 / 120 / 250 instances where this gives 0.09 / 0.12 / 0.17 / 0.27 / 0.46, so below about 100
    instances it overstates the power a little (the percentile bootstrap of few discrete values is
    conservative), which only makes a plan's warning milder than the truth."""
    if instances < 1 or slices < 1:
        return 0.0
    candidate = max(base - drop, 0.0)
    variance = base * (1 - base) + candidate * (1 - candidate)
    size = instances + 2  # the two pseudo-instances
    mean = -instances * drop / size
    spread = (instances * (variance + drop**2) + 2) / size - mean**2
    standard_error = math.sqrt(max(spread, 0.0) / size)
    quantile = float(scipy_stats.norm.ppf(1 - alpha / slices))
    return float(scipy_stats.norm.cdf((-margin - mean) / standard_error - quantile))


def detectable_drop(
    instances: int, slices: int, margin: float, alpha: float, base: float, power: float = POWER
) -> float | None:
    """The smallest drop from ``base`` that FAILs with ``power``, or ``None`` when no drop can
    (even a fall to 0 is not caught often enough at these counts)."""

    def shortfall(drop: float) -> float:
        return power_to_fail(drop, instances, slices, margin, alpha, base) - power

    if shortfall(base) < 0:
        return None
    return float(optimize.brentq(shortfall, margin, base, xtol=1e-4))


ASSUMED_BASE = 0.9
"""The baseline accuracy a plan's power is stated at: the low end of the calibration band."""


def plan_power(instances: int, slices: int, margin: float, alpha: float) -> dict[str, float | int | None]:
    """A plan's power at twice its margin and its smallest drop caught with 80% power."""
    return {
        "instances": instances,
        "slices": slices,
        "assumed_base": ASSUMED_BASE,
        "drop": 2 * margin,
        "power_at_drop": power_to_fail(2 * margin, instances, slices, margin, alpha, ASSUMED_BASE),
        "detectable_drop": detectable_drop(instances, slices, margin, alpha, ASSUMED_BASE),
    }
