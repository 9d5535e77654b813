"""The ends of an effective-length bracket from per-length decisions (``stats.bracket_indices``: a
fixed-sequence lower end, the first fail above it) and what they let one say
(``stats.bracket_state``); the paired margin and its one-sided bounds (issue 31, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from rotscope.stats.bracket_ends import (
    SIGN_FLIP_FROM,
    SIGN_FLIP_FROM_CONTINUOUS,
    bracket_indices,
    bracket_state,
    end_confidence,
    margin_bounds,
    threshold_margins,
    uses_sign_flip,
)
from rotscope.stats.intervals import adjusted_t_interval

T, F = True, False


@pytest.mark.parametrize(
    ("passes", "fails", "ends", "state"),
    [
        ([T, T, F], [F, F, T], (1, 2), "value"),
        ([T, F, F], [F, F, F], (0, 3), "at-least"),
        # Fixed sequence: a length after the first that is not shown to pass never counts.
        ([T, F, T], [F, F, F], (0, 3), "at-least"),
        ([T, T, T], [F, F, F], (2, 3), "at-least-longest"),
        ([F, F, F], [T, T, T], (-1, 0), "below-shortest"),
        ([F, F, F], [F, T, T], (-1, 1), "below"),
        ([F, F, F], [F, F, F], (-1, 3), "cannot-bound"),
        # The upper end is the first fail above the lower end.
        ([T, F, F, F], [F, F, T, T], (0, 2), "value"),
    ],
)
def test_the_ends_and_their_state(
    passes: list[bool], fails: list[bool], ends: tuple[int, int], state: str
) -> None:
    low, high = bracket_indices(np.array(passes), np.array(fails))
    assert (int(low), int(high)) == ends
    assert bracket_state(int(low), int(high), len(passes)) == state


def test_the_ends_are_vectorised_over_datasets() -> None:
    passes = np.array([[T, T, F], [T, F, F], [F, F, F]])
    fails = np.array([[F, F, T], [F, F, F], [T, T, T]])
    low, high = bracket_indices(passes, fails)
    assert low.tolist() == [1, 0, -1] and high.tolist() == [2, 3, 0]


def test_no_lengths_is_no_data() -> None:
    assert bracket_state(-1, 0, 0) == "no-data"


def test_each_end_holds_at_half_the_joint_error() -> None:
    assert end_confidence(0.95) == pytest.approx(0.975)
    assert end_confidence(0.9) == pytest.approx(0.95)


def test_the_margin_is_paired_and_its_bounds_are_the_gaps_t_interval_one_sided() -> None:
    scores = np.array([1.0, 0.0, 1.0, 1.0, 0.5])
    base = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
    margins = threshold_margins(scores, base, 0.85)
    assert margins.tolist() == pytest.approx([0.15, -0.85, 1.0, 0.15, -0.35])
    lower, upper = margin_bounds(margins, 0.975)
    expected = adjusted_t_interval(margins, 0.95)
    assert (float(lower), float(upper)) == pytest.approx((float(expected[0]), float(expected[1])))
    # A one-sided bound at a higher confidence lies further out.
    wider_lower, wider_upper = margin_bounds(margins, 0.99)
    assert wider_lower < lower and wider_upper > upper


def test_cluster_totals_sum_each_label_in_the_order_of_the_labels_as_text() -> None:
    from rotscope.stats.bracket_ends import cluster_totals

    totals, sizes = cluster_totals(np.array([[1.0, 2.0, 4.0, 8.0]]), ["c10", "c2", "c10", "c1"])
    assert totals.tolist() == [[8.0, 5.0, 2.0]] and sizes.tolist() == [1.0, 2.0, 1.0]


def test_the_sign_flip_margin_tests_decide_one_dataset_as_a_stack_of_them() -> None:
    from rotscope.stats.bracket_ends import sign_flip_margin_bounds, sign_flip_margin_tests

    rng = np.random.default_rng(5)
    margins = rng.choice([0.15, 1.0, -0.85, 0.0], size=(40, 13), p=[0.7, 0.05, 0.15, 0.1])
    groups = [f"c{i}" for i in range(13)]
    passes, fails = sign_flip_margin_tests(margins, groups, 0.975, 0.9875)
    for d in range(40):
        one = sign_flip_margin_tests(margins[d], groups, 0.975, 0.9875)
        assert (bool(one[0]), bool(one[1])) == (passes[d], fails[d])
        lower, upper = sign_flip_margin_bounds(margins[d], groups, 0.975)
        assert lower <= margins[d].mean() <= upper
        if abs(float(lower)) > 1e-3:  # the inversion's bound agrees with the decision (to its tolerance)
            assert bool(passes[d]) == (float(lower) > 0.0)
    # 13 cases all at the perfect margin: p = 1 / 2^13 passes; all lost: fails
    perfect = sign_flip_margin_tests(np.full(13, 0.15), groups, 0.975, 0.9875)
    lost = sign_flip_margin_tests(np.full(13, -0.85), groups, 0.975, 0.9875)
    assert (bool(perfect[0]), bool(perfect[1]), bool(lost[0]), bool(lost[1])) == (True, False, False, True)


def test_a_continuous_score_turns_to_the_sign_flip_test_sooner() -> None:
    assert SIGN_FLIP_FROM_CONTINUOUS < SIGN_FLIP_FROM
    # its one-sided level 0.025 is reachable: the smallest p on K clusters is 1 / 2^K
    assert 1 - end_confidence() >= 0.5**SIGN_FLIP_FROM_CONTINUOUS
    for clusters in range(2, 20):
        assert uses_sign_flip(clusters) == (clusters >= SIGN_FLIP_FROM)
        assert uses_sign_flip(clusters, continuous=True) == (clusters >= SIGN_FLIP_FROM_CONTINUOUS)
