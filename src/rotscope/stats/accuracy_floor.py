"""The exact binomial test against an accuracy floor (a fractional k taken as it is) and its
matching upper confidence bound, vectorised for the gate."""

from __future__ import annotations

import numpy as np
from scipy import special


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
