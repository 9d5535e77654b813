"""The sign-flip (randomisation) test on cluster totals of paired differences, and its interval by
test inversion (docs/statistics.md, "Paired tests").

Two conditions (two models, a long and a short length, a depth and the others) read the same
clusters (``rotscope.types.clusters``). Under "no difference" the two results of a cluster could
have come the other way round, so the sign of the cluster's total difference is a fair coin: the
p-value is the share of the 2^G sign patterns whose total is at least as extreme as the one
observed. It is exact at any number of clusters (all patterns are enumerated up to
``EXACT_UP_TO`` clusters; above, ``RANDOM_PATTERNS`` seeded patterns give a valid Monte-Carlo
p-value, (1 + hits) / (1 + patterns)), needs no spread to be estimated, and so decides at sizes
where a t interval with an added pseudo-pair cannot: ten clusters that all favour one model give
2/1024 = 0.002.

The sum of the totals is the statistic: under sign flips the sum of squares is fixed, so the
studentised mean orders the patterns exactly as the sum does, and the test is the studentised one,
asymptotically valid for a mean of zero without symmetry. A margin (H0: the mean is ``null``) is
tested on the totals shifted by ``null`` times the cluster's size; there it rests on the shifted
differences being symmetric about zero, which binary outcomes near a ceiling are not — the
benchmarks (``benchmarks/paired_tests.py``) measure its level where it is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import product
from typing import Literal

import numpy as np

EXACT_UP_TO = 14
"""Clusters up to which every sign pattern is enumerated (2^14 = 16,384 patterns)."""

RANDOM_PATTERNS = 9_999
"""Seeded random sign patterns above ``EXACT_UP_TO`` clusters."""

PATTERN_SEED = 20_261_206
"""The seed of the random patterns: the same data always give the same p-value."""

Alternative = Literal["two-sided", "greater", "less"]

_TOLERANCE = 1e-9
_CELLS_PER_CHUNK = 4_000_000


@cache
def _patterns(clusters: int) -> tuple[np.ndarray, bool]:
    """The sign patterns for ``clusters`` clusters (rows) and whether they are all of them."""
    if clusters <= EXACT_UP_TO:
        return np.array(list(product((1.0, -1.0), repeat=clusters))).reshape(-1, clusters), True
    rng = np.random.default_rng(PATTERN_SEED + clusters)
    return rng.choice(np.array([1.0, -1.0]), size=(RANDOM_PATTERNS, clusters)), False


def method_name(clusters: int) -> str:
    """How the p-value of ``clusters`` clusters is computed, for a verdict to name its test."""
    if clusters <= EXACT_UP_TO:
        return f"exact sign-flip on {clusters} clusters"
    return f"sign-flip on {clusters} clusters ({RANDOM_PATTERNS:,} seeded patterns)"


def sign_flip_p(
    totals: np.ndarray,
    sizes: np.ndarray | None = None,
    *,
    null: float | np.ndarray = 0.0,
    alternative: Alternative = "two-sided",
) -> np.ndarray:
    """The sign-flip p-value of "the mean paired difference is ``null``" against ``alternative``
    ("greater": the mean is above ``null``), from each cluster's total of differences
    (``totals``, clusters on the last axis, vectorised over the leading ones; a cluster absent
    from a dataset has total 0 and size 0) and its number of differences (``sizes``, 1 each when
    ``None``: cluster means). 1 where no cluster is present."""
    totals = np.asarray(totals, dtype=float)
    sizes = (
        np.ones_like(totals)
        if sizes is None
        else np.broadcast_to(np.asarray(sizes, dtype=float), totals.shape)
    )
    shifted = totals - np.asarray(null, dtype=float)[..., None] * sizes
    clusters = shifted.shape[-1]
    flat = shifted.reshape(-1, clusters)
    observed = flat.sum(axis=-1)
    patterns, exact = _patterns(clusters)
    hits = np.empty(flat.shape[0])
    chunk = max(1, _CELLS_PER_CHUNK // len(patterns))
    for start in range(0, flat.shape[0], chunk):
        flipped = flat[start : start + chunk] @ patterns.T
        seen = observed[start : start + chunk, None]
        scale = _TOLERANCE * (1.0 + np.abs(flat[start : start + chunk]).sum(axis=-1, keepdims=True))
        if alternative == "greater":
            extreme = flipped >= seen - scale
        elif alternative == "less":
            extreme = flipped <= seen + scale
        else:
            extreme = np.abs(flipped) >= np.abs(seen) - scale
        hits[start : start + chunk] = extreme.sum(axis=-1)
    p = hits / len(patterns) if exact else (1.0 + hits) / (1.0 + len(patterns))
    return np.minimum(p, 1.0).reshape(shifted.shape[:-1])


@dataclass(frozen=True)
class SignFlipResult:
    """A sign-flip test of "no difference" with its interval by inversion."""

    estimate: float
    """The mean paired difference (all differences, each counted once)."""
    p_value: float
    """Two-sided p-value of "no difference"."""
    low: float
    high: float
    clusters: int
    method: str


def sign_flip_interval(
    totals: np.ndarray,
    sizes: np.ndarray | None = None,
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] = (-1.0, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    """The interval of the mean difference by inverting the one-sided sign-flip tests at
    (1 - ``confidence``) / 2 each: the means ``null`` in ``bounds`` that neither test rejects,
    vectorised like ``sign_flip_p``. Always contains the estimate.

    Exact, without a search: at ``null`` a pattern counts against "greater" exactly when ``null``
    is at least the mean of the clusters it flips (sum of their totals over sum of their sizes),
    so the p-value steps up at those subset means and the lower bound is the one at which enough
    patterns count (an order statistic of the subset means); the upper bound mirrors it."""
    totals = np.asarray(totals, dtype=float)
    sizes_ = (
        np.ones_like(totals)
        if sizes is None
        else np.broadcast_to(np.asarray(sizes, dtype=float), totals.shape)
    )
    level = (1.0 - confidence) / 2.0
    clusters = totals.shape[-1]
    flat_totals = totals.reshape(-1, clusters)
    flat_sizes = sizes_.reshape(-1, clusters)
    patterns, exact = _patterns(clusters)
    flipped = (1.0 - patterns) / 2.0  # 1 where a pattern flips the cluster
    # Patterns counted at every null (p's numerator): the identity's (exact) or the extra 1 (random).
    needed = (
        int(np.floor(level * len(patterns))) + 1
        if exact
        else int(np.floor(level * (1 + len(patterns)) - 1)) + 1
    )
    lowest, highest = bounds
    low = np.empty(flat_totals.shape[0])
    high = np.empty(flat_totals.shape[0])
    chunk = max(1, _CELLS_PER_CHUNK // len(patterns))
    for start in range(0, flat_totals.shape[0], chunk):
        part_totals = flat_totals[start : start + chunk]
        moved_sizes = flat_sizes[start : start + chunk] @ flipped.T
        moved_totals = part_totals @ flipped.T
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(
                moved_sizes > 0, moved_totals / np.where(moved_sizes > 0, moved_sizes, 1.0), np.nan
            )
        always = (~(moved_sizes > 0)).sum(axis=-1)  # a pattern that moves nothing counts at any null
        rank = needed - always  # how many subset means must lie at or below the null
        ordered = np.sort(np.where(np.isnan(means), np.inf, means), axis=-1)
        columns = np.clip(rank - 1, 0, ordered.shape[-1] - 1)
        lower = np.take_along_axis(ordered, columns[:, None], axis=-1)[:, 0]
        low[start : start + chunk] = np.where(rank <= 0, lowest, lower)
        descending = np.sort(np.where(np.isnan(means), -np.inf, means), axis=-1)[:, ::-1]
        upper = np.take_along_axis(descending, columns[:, None], axis=-1)[:, 0]
        high[start : start + chunk] = np.where(rank <= 0, highest, upper)
    shape = totals.shape[:-1]
    return (
        np.clip(low, lowest, highest).reshape(shape),
        np.clip(high, lowest, highest).reshape(shape),
    )


def sign_flip_test(
    totals: np.ndarray, sizes: np.ndarray | None = None, *, confidence: float = 0.95
) -> SignFlipResult:
    """``sign_flip_p`` (two-sided, "no difference") and ``sign_flip_interval`` of one dataset."""
    totals = np.asarray(totals, dtype=float).reshape(-1)
    sizes_ = np.ones_like(totals) if sizes is None else np.asarray(sizes, dtype=float).reshape(-1)
    low, high = sign_flip_interval(totals, sizes_, confidence=confidence)
    return SignFlipResult(
        estimate=float(totals.sum() / max(sizes_.sum(), 1e-12)),
        p_value=float(sign_flip_p(totals, sizes_)),
        low=float(low),
        high=float(high),
        clusters=len(totals),
        method=method_name(len(totals)),
    )
