"""compare's verdicts since issue 48: the sign-flip test on the one rule's clusters, Holm across all
pairs x lengths of a task, the family named, and the real example of the issue decided."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from rotscope.compare.analysis import rule_note
from rotscope.compare.pairwise import (
    LengthDifference,
    family_verdicts,
    family_words,
    pair_tests,
    previous_verdicts,
    two_sided_p,
)
from rotscope.compare.record import Comparison, Pair, PairLength
from rotscope.compare.table import family_label

QUICK_LENGTHS = (256, 512, 1024)
"""The quick grid's lengths: a 2-model compare of it is a family of 3 tests."""
DEPTHS = 11


def _rows(model: str, correct: dict[int, list[int]], variant_of: Any = None) -> list[dict[str, Any]]:
    """A run's rows: per length, ``correct[length][i]`` of instance i's ``DEPTHS`` items right."""
    rows = []
    for length, counts in correct.items():
        for instance, right in enumerate(counts):
            for depth in range(DEPTHS):
                rows.append(
                    {"task": "t", "case_id": f"c{instance}", "instance_id": f"c{instance}", "control": 0,
                     "length_target": length, "position": f"{depth / 10:.1f}", "depth": depth / 10,
                     "trial": 0, "filler": None, "status": "ok",
                     "haystack_variant": instance if variant_of is None else variant_of(instance),
                     "outcome": "correct" if depth < right else "incorrect", "model": model}
                )  # fmt: skip
    return rows


# The issue's real example: 10 instances, 28 discordant items, every instance favouring one model.
FAVOURED = [DEPTHS] * 10
OTHER = [DEPTHS - 3] * 8 + [DEPTHS - 2] * 2  # 8 x 3 + 2 x 2 = 28 discordant items


def test_the_issues_example_is_decided_after_holm_over_the_quick_grid() -> None:
    """One length holds the example, the quick grid's other two are equal: a 2-model compare is
    a family of 3 tests. The sign-flip p is 2/1024 (every one of 10 clusters one way), 0.0059 after
    Holm: decided; the test before (adjusted t, Holm within the pair) is not."""
    same = [DEPTHS - 1] * 10
    first = _rows("a", {256: same, 512: FAVOURED, 1024: same})
    second = _rows("b", {256: same, 512: OTHER, 1024: same})
    (decided,) = family_verdicts([pair_tests(first, second, "t", QUICK_LENGTHS)])
    middle = decided[1]
    assert middle.p_value == pytest.approx(2 / 1024)
    assert middle.p_holm == pytest.approx(3 * 2 / 1024)
    assert middle.verdict == "worse"
    assert middle.test == "exact sign-flip on 10 clusters"
    assert middle.ci_high is not None and middle.ci_high < 0  # the interval by inversion excludes 0
    assert [entry.verdict for entry in decided] == ["no difference shown", "worse", "no difference shown"]
    assert middle.previous_p is not None and middle.previous_p > 0.05 / 3  # adjusted t: not decided
    assert previous_verdicts(decided)[1] == "no difference shown"


def test_the_example_at_every_length_is_decided_at_each() -> None:
    first = _rows("a", dict.fromkeys(QUICK_LENGTHS, FAVOURED))
    second = _rows("b", dict.fromkeys(QUICK_LENGTHS, OTHER))
    (decided,) = family_verdicts([pair_tests(first, second, "t", QUICK_LENGTHS)])
    assert [entry.verdict for entry in decided] == ["worse"] * 3
    assert [entry.p_holm for entry in decided] == pytest.approx([3 * 2 / 1024] * 3)


def test_three_shared_variants_are_three_clusters_and_cannot_decide() -> None:
    """16 cases in 3 haystack variants: the cases of a variant share its text, so the test has 3
    clusters, whose smallest two-sided p is 2/8: no difference shown, however large."""
    first = _rows("a", {256: [DEPTHS] * 16}, variant_of=lambda i: i % 3)
    second = _rows("b", {256: [0] * 16}, variant_of=lambda i: i % 3)
    (entry,) = pair_tests(first, second, "t", [256])
    assert entry.test == (
        "exact sign-flip on 3 clusters, clustered on 3 haystack variants; "
        "smallest possible p 0.25: no verdict"
    )
    assert entry.p_value == pytest.approx(0.25) and entry.difference == -1.0
    assert family_verdicts([[entry]])[0][0].verdict == "no difference shown"


def _entry(length: int, p: float | None, difference: float) -> LengthDifference:
    return LengthDifference(length, 0.5, 0.5 + difference, difference, -1.0, 1.0, 20, p)


def test_holm_runs_across_every_pair_and_length_of_the_family() -> None:
    family = [
        [_entry(256, 0.004, 0.3), _entry(512, 0.03, -0.2)],
        [_entry(256, None, 0.0), _entry(512, 0.02, 0.1)],
        [_entry(256, 0.2, 0.1), _entry(512, 0.0001, -0.5)],
    ]
    decided = family_verdicts(family)
    tested = [0.004, 0.03, 0.02, 0.2, 0.0001]
    expected = iter(multipletests(tested, method="holm")[1])
    for found in decided:
        for entry in found:
            if entry.p_value is None:
                assert entry.p_holm is None and entry.verdict == "too few pairs"
            else:
                assert entry.p_holm == pytest.approx(next(expected))
    assert [[entry.verdict for entry in found] for found in decided] == [
        ["better", "no difference shown"],
        ["too few pairs", "no difference shown"],
        ["no difference shown", "worse"],
    ]
    # within its own pair the second pair's 0.02 would have been decided: the family is larger
    assert family_verdicts([family[1]])[0][1].verdict == "better"


def test_the_family_is_named_with_its_size() -> None:
    assert family_words(3, 10, 30) == "Holm over 30 tests: 3 pairs x 10 lengths"
    assert family_words(1, 3, 2) == "Holm over 2 tests: 1 pair x 3 lengths, 1 with too few pairs"


def _comparison(family: str | None, tests: tuple[str | None, str | None]) -> Comparison:
    lengths = [
        PairLength(length=length, first_accuracy=0.9, second_accuracy=0.8, difference=-0.1, ci_low=-0.2,
                   ci_high=0.0, pairs=16, p_value=0.01, p_holm=0.02, verdict="no difference shown", test=test)
        for length, test in zip((256, 512), tests, strict=True)
    ]  # fmt: skip
    pairs = [Pair(task="niah", first="A", second="B", lengths=lengths, sentence="")]
    return Comparison(comparison_version=2, runs=[], tasks=["niah"], lengths=[256, 512],
                      confidence=0.95, alpha=0.05, pair_method="", family=family, leaderboard=[],
                      pairs=pairs, rows=[])  # fmt: skip


def test_views_head_the_verdicts_with_their_tests_and_family() -> None:
    new = _comparison("niah: Holm over 2 tests: 1 pair x 2 lengths", ("exact sign-flip on 16 clusters",) * 2)
    assert family_label(new, "niah") == (
        "exact sign-flip on 16 clusters; Holm over 2 tests: 1 pair x 2 lengths, alpha 0.05"
    )
    old = _comparison(None, (None, None))  # a record before issue 48
    assert family_label(old, "niah") == "Holm across each pair's lengths, alpha 0.05"


def test_a_changed_verdict_is_said_once() -> None:
    assert rule_note([]) is None
    note = rule_note(["B vs A at 1K on niah was no difference shown"])
    assert note is not None and note.startswith("1 verdict differ")
    assert "adjusted t on paired instances, Holm within a pair" in note


def test_the_previous_test_is_the_adjusted_t() -> None:
    differences = np.array([3 / 11] * 8 + [2 / 11] * 2)
    assert 0.001 < two_sided_p(list(differences)) < 0.05  # one-length example, before any Holm


def test_junit_names_the_family_beside_the_holm_p() -> None:
    from rotscope.compare.junit import comparison_junit

    new = _comparison("niah: Holm over 2 tests: 1 pair x 2 lengths", ("exact sign-flip on 16 clusters",) * 2)
    assert "p (Holm) 0.02 (exact sign-flip on 16 clusters; Holm over 2 tests: 1 pair x 2 lengths" in (
        comparison_junit(new)
    )
