"""The effective-length bracket on the likelihood score (issue 49): rows through
``rows.on_score(rows, "likelihood")`` carry the gold answer's probability, continuous in [0, 1]; the
absolute definition and the base's interval take the cell's adjusted t there, not Wilson (whose
variance is a 0/1 value's), and accuracy's rows keep Wilson."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from rotscope.analysis.cells import length_cell
from rotscope.analysis.tasks import effective_lengths
from rotscope.rows import Row, is_continuous, on_score
from rotscope.stats.bracket_ends import (
    SIGN_FLIP_FROM,
    SIGN_FLIP_FROM_CONTINUOUS,
    end_confidence,
    instance_score_bounds,
    margin_bounds,
    score_bounds,
)

LENGTHS = (256, 512, 1024)


def _rows(probabilities: dict[int, list[float]]) -> list[Row]:
    rows = [
        {"task": "niah", "case_id": f"c{case:02d}", "instance_id": f"c{case:02d}", "item": 0,
         "length_target": length, "depth": 0.5, "position": None, "status": "ok",
         "outcome": "correct" if p > 0.5 else "incorrect", "category": None if p > 0.5 else "wrong",
         "judge_verdict": None, "answer_logprob": math.log(p), "haystack_variant": None}
        for length, values in probabilities.items()
        for case, p in enumerate(values)
    ]  # fmt: skip
    return cast(list[Row], rows)


def _effective(rows: list[Row]) -> Any:
    per_length = {n: length_cell(n, [r for r in rows if r["length_target"] == n]) for n in LENGTHS}
    return effective_lengths(per_length, rows)


def _spread(centre: float, n: int) -> list[float]:
    return list(np.round(np.linspace(centre - 0.04, centre + 0.04, n), 6))


def test_only_rows_on_the_likelihood_score_are_continuous() -> None:
    rows = _rows({256: [0.8, 0.7]})
    assert not is_continuous(rows)
    assert is_continuous(on_score(rows, "likelihood"))
    assert not is_continuous(on_score(rows, "accuracy"))


def test_the_absolute_bracket_on_the_likelihood_takes_the_adjusted_t_on_instances() -> None:
    curve = {256: _spread(0.95, 60), 512: _spread(0.95, 60), 1024: _spread(0.40, 60)}
    effective = _effective(on_score(_rows(curve), "likelihood"))
    absolute = next(d for d in effective.definitions if d.definition.startswith("absolute"))
    assert "adjusted t on instance means" in absolute.bracket.method
    one_sided = end_confidence()
    low = float(instance_score_bounds(np.array(curve[256]), one_sided)[0])
    assert math.isclose(absolute.bracket.tests[0].lower + 0.856, low, abs_tol=1e-9)
    # 0.95 +- 0.04 on 60 instances: the adjusted t passes 256 and 512, Wilson on k = 57 would not
    # hold 512's mean (0.95) apart from a 0/1 value's variance as tightly
    wilson_low = score_bounds(sum(curve[256]), 60, one_sided)[0]
    assert low > wilson_low
    assert (absolute.bracket.state, absolute.bracket.low.length, absolute.bracket.high.length) == (
        "value",
        512,
        1024,
    )


def test_accuracy_rows_keep_wilson_and_the_base_interval_names_its_method() -> None:
    curve = {256: [0.9] * 20, 512: [0.9] * 20, 1024: [0.2] * 20}
    on_accuracy = _effective(_rows(curve))
    absolute = next(d for d in on_accuracy.definitions if d.definition.startswith("absolute"))
    assert "Wilson on instances" in absolute.bracket.method
    assert on_accuracy.base_ci_method is not None and "Wilson" in on_accuracy.base_ci_method
    on_likelihood = _effective(on_score(_rows(curve), "likelihood"))
    assert on_likelihood.base_ci_method is not None and "adjusted t" in on_likelihood.base_ci_method
    assert on_likelihood.base_ci is not None and on_likelihood.base_ci[0] < 0.9 < on_likelihood.base_ci[1]


def test_the_relative_bracket_places_a_drop_of_the_probability() -> None:
    # every instance keeps its probability to 512 and loses most of it at 1,024: 20 clusters, the
    # sign-flip test on the margins p_L - 0.85 p_base, continuous, places the drop at 1,024
    curve = {256: _spread(0.75, 20), 512: _spread(0.74, 20), 1024: _spread(0.20, 20)}
    effective = _effective(on_score(_rows(curve), "likelihood"))
    assert (effective.bracket.state, effective.bracket.low.length, effective.bracket.high.length) == (
        "value",
        512,
        1024,
    )


def test_a_continuous_score_of_8_clusters_decides_by_the_sign_flip_test() -> None:
    # 8 cases, each its own cluster: below SIGN_FLIP_FROM, above SIGN_FLIP_FROM_CONTINUOUS. Every
    # case's margin at 512 is positive and at 1,024 negative: the sign-flip p is 1/256 each way,
    # below the end's 0.025 and the fail's 0.0125, so the likelihood places the drop at 1,024.
    assert SIGN_FLIP_FROM_CONTINUOUS <= 8 < SIGN_FLIP_FROM
    curve = {256: _spread(0.75, 8), 512: _spread(0.74, 8), 1024: _spread(0.20, 8)}
    effective = _effective(on_score(_rows(curve), "likelihood"))
    bracket = effective.bracket
    assert "sign-flip on 8 clusters" in bracket.method
    assert (bracket.state, bracket.low.length, bracket.high.length) == ("value", 512, 1024)


def test_accuracy_at_8_clusters_keeps_the_adjusted_t() -> None:
    # The same 8 cases on accuracy: 8/8, 8/8, 0/8. The adjusted t with its pseudo-pair decides as it
    # did before the continuous threshold: its bounds are stats.margin_bounds' on the 0/1 margins.
    curve = {256: _spread(0.75, 8), 512: _spread(0.74, 8), 1024: _spread(0.20, 8)}
    effective = _effective(on_score(_rows(curve), "accuracy"))
    bracket = effective.bracket
    assert "adjusted t" in bracket.method and "sign-flip" not in bracket.method
    one_sided = end_confidence()
    low, _ = margin_bounds(np.full(8, 1.0 - 0.85), one_sided)
    at_512 = next(test for test in bracket.tests if test.length == 512)
    assert math.isclose(at_512.lower, float(low), abs_tol=1e-12)
    assert at_512.passes == (float(low) >= 0.0)
    # the pseudo-pair keeps a perfect model's margin of 0.15 from passing on 8 instances
    assert not at_512.passes
    assert bracket.low.length is None or bracket.low.length == 256


def test_at_6_clusters_a_continuous_score_can_pass_a_length_but_not_fail_one_of_two() -> None:
    # 6 clusters: the smallest sign-flip p is 1/64 = 0.016, under the end's 0.025 (512 passes) but
    # over the fail's 0.0125, split over the two lengths that can fail (1,024 is not shown to fail)
    curve = {256: _spread(0.75, 6), 512: _spread(0.74, 6), 1024: _spread(0.20, 6)}
    bracket = _effective(on_score(_rows(curve), "likelihood")).bracket
    assert "sign-flip on 6 clusters" in bracket.method
    assert (bracket.state, bracket.low.length, bracket.high.length) == ("at-least", 512, None)
