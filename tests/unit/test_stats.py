"""Wilson intervals on independent instances, and NoLiMa's effective length."""

from __future__ import annotations

import math

import pytest

import rotscope
from rotscope.stats import base_score, effective_length, wilson

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


# NoLiMa, Table 3, GPT-4o: base score 99.3; scores by length 1K..32K.
GPT4O = {1000: 98.1, 2000: 98.0, 4000: 95.7, 8000: 89.2, 16000: 81.6, 32000: 69.7}


def test_effective_length_on_nolima_gpt4o_row() -> None:
    # Threshold 0.85 x 99.3 = 84.4: 8K (89.2) passes, 16K (81.6) is the first below it.
    assert effective_length(GPT4O, base=99.3) == 8000


def test_effective_length_is_none_when_the_shortest_fails() -> None:
    assert effective_length({1000: 0.5, 2000: 0.9}, base=1.0) is None


def test_effective_length_stops_at_the_first_failure() -> None:
    # 4K recovers, but the scan stops at 2K, the first length below 0.85.
    assert effective_length({1000: 0.9, 2000: 0.5, 4000: 0.9}, base=1.0) == 1000


def test_effective_length_all_pass_is_the_longest() -> None:
    assert effective_length({1000: 1.0, 2000: 0.95, 4000: 0.9}, base=1.0) == 4000


def test_score_equal_to_threshold_passes() -> None:
    # "falls below" is strict; 0.5 and 0.25 are exact in binary floating point.
    assert effective_length({1000: 0.5, 2000: 0.25}, base=1.0, ratio=0.5) == 1000


def test_effective_length_scans_in_length_order_not_insertion_order() -> None:
    scores = {4000: 0.2, 1000: 1.0, 2000: 0.9}
    assert effective_length(scores, base=1.0) == 2000


def test_base_defaults_to_mean_at_250_500_1000() -> None:
    scores = {250: 1.0, 500: 0.8, 1000: 0.6, 2000: 0.6, 4000: 0.5}
    # base = (1.0 + 0.8 + 0.6) / 3 = 0.8, threshold 0.68: 1000 (0.6) is the first below.
    assert base_score(scores) == pytest.approx(0.8)
    assert effective_length(scores) == 500
    # Had the base been the shortest length's 1.0 (threshold 0.85), 500 would fail.
    assert effective_length(scores, base=1.0) == 250


def test_base_uses_only_the_base_lengths_that_were_tested() -> None:
    assert base_score({500: 0.9, 1000: 0.7, 8000: 0.1}) == pytest.approx(0.8)


def test_base_without_base_lengths_is_the_shortest_length_not_a_pool() -> None:
    # Issue 31: never the mean of every length up to 1,250 (0.8 here), which pools the lengths
    # being judged; the shortest tested length alone.
    assert base_score({256: 1.0, 512: 0.6, 2048: 0.2}) == pytest.approx(1.0)


def test_base_without_short_lengths_is_the_shortest() -> None:
    assert base_score({2048: 0.7, 4096: 0.3}) == pytest.approx(0.7)


def test_custom_base_lengths() -> None:
    scores = {100: 0.2, 200: 1.0, 400: 0.9}
    assert effective_length(scores, base_lengths=(200,)) is None  # 100 is below 0.85
    assert effective_length({200: 1.0, 400: 0.9, 800: 0.8}, base_lengths=(200,)) == 400


def test_effective_length_of_nothing_is_none() -> None:
    assert effective_length({}) is None


def test_readme_example() -> None:
    # base = mean at lengths <= 1K = 0.99; threshold 0.8415: 2000 (0.9) passes, 4000 (0.7) fails.
    assert rotscope.stats.effective_length({1000: 0.99, 2000: 0.9, 4000: 0.7}) == 2000
