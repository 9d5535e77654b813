"""An anytime-valid confidence sequence for a mean in [0, 1]: bounds that stay valid however often
they are looked at and whenever sampling stops, which a fixed-sample interval does not.

The hedged-capital betting sequence of Waudby-Smith and Ramdas (2023, "Estimating means of bounded
random variables by betting", JRSS-B, section 4): for each candidate mean ``m`` two capital
processes ``K_t(m) = prod(1 ± λ_i (x_i - m))`` bet on the mean being above or below ``m`` with
predictable bets ``λ_i`` (the paper's predictable plug-in, truncated at 3/4 of the largest bet
that keeps the capital positive); ``m`` leaves the set once either capital reaches ``2 / alpha``
(Ville's inequality for each side at ``alpha / 2``). The sets are intersected over time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_M_GRID = 2000
"""Candidate means tested when the sequence is inverted into bounds (resolution 0.0005)."""
_MS = (np.arange(_M_GRID) + 0.5) / _M_GRID
_TRUNCATION = 0.75
"""A bet is at most this share of the largest one that keeps the capital positive (the paper
uses 1/2 or 3/4; 3/4 decides clear lengths in fewer instances)."""


def confidence_sequence(values: Sequence[float], alpha: float) -> tuple[float, float]:
    """``(lower, upper)`` after ``values`` (each in [0, 1], in the order observed) at level
    ``1 - alpha``; ``(0, 1)`` before any value."""
    log_up = np.zeros(_M_GRID)
    log_down = np.zeros(_M_GRID)
    rejected = np.zeros(_M_GRID, dtype=bool)
    limit = math.log(2.0 / alpha)
    total, squares, mean = 0.0, 0.25, 0.5
    for i, x in enumerate(values, start=1):
        variance = squares / i
        bet = math.sqrt(2.0 * limit / (variance * i * math.log(1.0 + i)))
        log_up += np.log1p(np.minimum(bet, _TRUNCATION / _MS) * (x - _MS))
        log_down += np.log1p(-np.minimum(bet, _TRUNCATION / (1.0 - _MS)) * (x - _MS))
        rejected |= (log_up >= limit) | (log_down >= limit)
        squares += (x - mean) ** 2
        total += x
        mean = (0.5 + total) / (i + 1)
    kept = _MS[~rejected]
    if kept.size == 0:  # every mean rejected (a vanishing chance): the sample mean alone
        point = total / max(len(values), 1)
        return point, point
    half = 0.5 / _M_GRID
    return max(0.0, float(kept[0]) - half), min(1.0, float(kept[-1]) + half)
