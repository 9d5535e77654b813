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
from rotscope.stats.bracket_ends import end_confidence, instance_score_bounds, score_bounds

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
