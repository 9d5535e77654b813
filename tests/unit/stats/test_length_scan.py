"""NoLiMa's effective length and its base (``stats.length_scan``)."""

from __future__ import annotations

import pytest

import rotscope
from rotscope.stats.length_scan import base_score, effective_length

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
