"""Wilson intervals on independent instances (``stats.intervals``)."""

from __future__ import annotations

import math

import pytest

import rotscope
from rotscope.stats.intervals import wilson

Z95 = 1.959963984540054  # two-sided 95% normal quantile


def _wilson_by_hand(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The textbook Wilson score interval, written out independently of statsmodels."""
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_30_of_30() -> None:
    low, high = wilson(30, 30)
    # For k = n the lower bound is n / (n + z^2) = 30 / 33.8415 = 0.8865.
    assert low == pytest.approx(0.8865, abs=1e-4)
    assert low == pytest.approx(30 / (30 + Z95**2), abs=1e-9)
    assert high == pytest.approx(1.0)


def test_wilson_0_of_30_mirrors_30_of_30() -> None:
    low, high = wilson(0, 30)
    assert low == pytest.approx(0.0, abs=1e-12)
    assert high == pytest.approx(1 - 30 / (30 + Z95**2), abs=1e-9)


@pytest.mark.parametrize(("k", "n"), [(1, 2), (7, 10), (15, 40), (1.5, 3), (2 / 3, 2), (29.5, 30)])
def test_wilson_matches_the_formula(k: float, n: float) -> None:
    assert wilson(k, n) == pytest.approx(_wilson_by_hand(k, n), abs=1e-9)


def test_wilson_fractional_k_by_hand() -> None:
    # 1.5 of 3 instances: p = 0.5, so the interval is symmetric around 0.5 with
    # half-width z / (1 + z^2/3) * sqrt(1/12 + z^2/36) = 0.3747.
    low, high = wilson(1.5, 3)
    assert (low + high) / 2 == pytest.approx(0.5, abs=1e-9)
    assert high - 0.5 == pytest.approx(0.3747, abs=1e-4)


def test_wilson_fractional_k_lies_between_integer_neighbours() -> None:
    low_1, _ = wilson(1, 3)
    low_mid, _ = wilson(1.5, 3)
    low_2, _ = wilson(2, 3)
    assert low_1 < low_mid < low_2


def test_instances_not_items_give_the_width() -> None:
    # 270/270 items over 30 instances is judged as 30/30, which is wider than 270/270.
    assert wilson(30, 30)[0] < wilson(270, 270)[0]


def test_wilson_no_instances_is_uninformative() -> None:
    assert wilson(0, 0) == (0.0, 1.0)


def test_wilson_confidence_level_widens_the_interval() -> None:
    low_95, high_95 = wilson(7, 10)
    low_99, high_99 = wilson(7, 10, confidence=0.99)
    assert low_99 < low_95 and high_99 > high_95
    assert (low_99, high_99) == pytest.approx(_wilson_by_hand(7, 10, z=2.5758293035489), abs=1e-9)


def test_wilson_is_exposed_through_the_package() -> None:
    assert rotscope.stats.wilson(30, 30) == wilson(30, 30)
