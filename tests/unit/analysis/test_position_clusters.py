"""The position effect clusters by the one rule (issue 48): cases that share three haystack texts
are three clusters, so a middle that is bad in the texts is not flagged as the model's; cases with a
haystack each are their own clusters and a clear middle is flagged, with an exact test."""

from __future__ import annotations

from typing import cast

import pytest

from rotscope.analysis.clusters import clusters_of
from rotscope.analysis.tasks import cluster_sign_flip, position_effect
from rotscope.rows import Row

DEPTHS = [0.0, 0.5, 1.0]


def _rows(cases: int, variants: int, wrong_middle: int) -> list[Row]:
    """Each case right at both ends; the first ``wrong_middle`` cases wrong in the middle."""
    rows = [
        {"task": "niah", "instance_id": f"c{i:02d}", "case_id": f"c{i:02d}", "length_target": 1000,
         "depth": depth, "status": "ok",
         "outcome": "incorrect" if depth == 0.5 and i < wrong_middle else "correct",
         "haystack_variant": i % variants}
        for i in range(cases) for depth in DEPTHS
    ]  # fmt: skip
    return cast(list[Row], rows)


def test_three_shared_haystacks_are_three_clusters_and_flag_nothing() -> None:
    # 12 cases all wrong in the middle: a sign test on cases would give 2^-11; on 3 variant
    # clusters the smallest two-sided p-value is 2 / 2^3 = 0.25.
    (effect,) = position_effect(_rows(12, 3, 12), DEPTHS)
    assert effect.worst_depth == 0.5
    assert effect.flagged_depths == []
    assert effect.middle_vs_ends is not None
    assert effect.middle_vs_ends.p_value == pytest.approx(0.25)
    assert effect.method == "exact sign-flip on 3 clusters, clustered on 3 haystack variants"
    assert (effect.clusters, effect.cluster_on) == (3, "variant")
    assert effect.note is not None and effect.note.startswith(
        "3 clusters: the smallest two-sided p-value is 0.25"
    )


def test_a_haystack_per_case_flags_a_clear_middle_with_the_exact_sign_test() -> None:
    # 12 cases, each its own haystack and cluster: 12 of 12 worse in the middle, p = 2 / 2^12.
    (effect,) = position_effect(_rows(12, 12, 12), DEPTHS)
    assert effect.flagged_depths == [0.5]
    assert effect.middle_vs_ends is not None
    assert effect.middle_vs_ends.p_value == pytest.approx(2 / 2**12)
    assert effect.method == "exact sign-flip on 12 clusters"
    assert (effect.clusters, effect.cluster_on, effect.note) == (12, "instance", None)


def test_cluster_sign_flip_sums_the_cases_of_a_cluster() -> None:
    rows = _rows(6, 3, 0)
    clusters = clusters_of(rows, "case_id")
    # Variant totals: 0 -> c00 + c03 = 2, 1 -> c01 + c04 = 2, 2 -> c02 + c05 = -1; observed sum 3.
    # Of the 8 sign patterns, |sum| >= 3 where the two 2s agree (5, 3, -3, -5): 4 of 8.
    differences = {"c00": 1.0, "c03": 1.0, "c01": 1.0, "c04": 1.0, "c02": -1.0, "c05": 0.0}
    assert cluster_sign_flip(differences, clusters) == pytest.approx(0.5)
    # Each case its own cluster (one haystack per case): the sign test, 5 nonzero, 4 positive.
    own = clusters_of(_rows(6, 6, 0), "case_id")
    assert cluster_sign_flip(differences, own) == pytest.approx(12 / 32)
    assert cluster_sign_flip({}, own) == 1.0
