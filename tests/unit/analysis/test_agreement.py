"""The rank correlation of the two scores over a task's cells (``analysis.agreement.spearman``):
Spearman's rho with ties at their mean rank, as scipy computes it, and none where there is no
ranking to correlate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from rotscope.analysis.agreement import spearman


@pytest.mark.parametrize("seed", range(5))
def test_spearman_is_scipys_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    accuracy = list(rng.integers(0, 4, size=9) / 4)  # cell accuracies of 4 items: many ties
    probability = list(rng.random(9))
    expected = spearmanr(accuracy, probability).statistic
    assert spearman(accuracy, probability) == pytest.approx(expected)


def test_the_same_order_is_one_and_the_reverse_minus_one() -> None:
    assert spearman([0.2, 0.5, 0.9], [0.1, 0.4, 0.8]) == 1.0
    assert spearman([0.2, 0.5, 0.9], [0.8, 0.4, 0.1]) == -1.0


@pytest.mark.parametrize(
    ("first", "second"),
    [([0.1, 0.2], [0.3, 0.4]), ([1.0, 1.0, 1.0], [0.2, 0.5, 0.9]), ([0.1, 0.5, 0.9], [0.7, 0.7, 0.7])],
)
def test_no_ranking_gives_none(first: list[float], second: list[float]) -> None:
    assert spearman(first, second) is None
