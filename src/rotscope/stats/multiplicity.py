"""Multiple comparisons: Benjamini-Hochberg, and Holm's adjusted p-values and per-hypothesis
levels (vectorised over leading axes for the gate's simulations)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from statsmodels.stats.multitest import multipletests


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
