"""compare's JUnit XML: one test case per pair x length, a `worse` verdict a failure, `too few pairs`
skipped, the counts of each suite equal to its cases, and nothing but names, numbers and verdicts."""

from __future__ import annotations

from xml.etree import ElementTree

from rotscope.compare.junit import comparison_junit
from rotscope.compare.record import Comparison, Pair, PairLength


def _length(length: int, verdict: str, difference: float | None) -> PairLength:
    if difference is None:
        return PairLength(
            length=length,
            first_accuracy=None,
            second_accuracy=None,
            difference=None,
            ci_low=None,
            ci_high=None,
            pairs=2,
            p_value=None,
            p_holm=None,
            verdict=verdict,
        )
    return PairLength(
        length=length,
        first_accuracy=0.9,
        second_accuracy=0.9 + difference,
        difference=difference,
        ci_low=difference - 0.1,
        ci_high=difference + 0.1,
        pairs=16,
        p_value=0.01,
        p_holm=0.03,
        verdict=verdict,
    )


def _comparison() -> Comparison:
    pairs = [
        Pair(
            task="niah",
            first="fake/a",
            second="fake/b",
            sentence="",
            lengths=[
                _length(256, "no difference shown", 0.0),
                _length(1024, "worse", -0.4),
                _length(2048, "too few pairs", None),
            ],
        ),
        Pair(
            task="niah",
            first="fake/a",
            second="fake/c",
            sentence="",
            lengths=[
                _length(256, "better", 0.05),
                _length(1024, "no difference shown", -0.05),
                _length(2048, "worse", -0.3),
            ],
        ),
    ]
    return Comparison(
        comparison_version=1,
        runs=[],
        tasks=["niah"],
        lengths=[256, 1024, 2048],
        confidence=0.95,
        alpha=0.05,
        pair_method="paired t",
        leaderboard=[],
        pairs=pairs,
        rows=[],
    )


def test_each_pair_and_length_is_a_case_and_worse_fails() -> None:
    root = ElementTree.fromstring(comparison_junit(_comparison()).split("\n", 1)[1])
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == int(suite.get("tests", "")) == 6
    failed = [case.get("name") for case in cases if case.find("failure") is not None]
    assert failed == ["fake/b vs fake/a at 1,024 tokens", "fake/c vs fake/a at 2,048 tokens"]
    assert suite.get("failures") == "2" and suite.get("skipped") == "1"
    (skipped,) = [case for case in cases if case.find("skipped") is not None]
    assert skipped.get("name") == "fake/b vs fake/a at 2,048 tokens"
    failure = cases[1].find("failure")
    assert failure is not None and "-0.400 [-0.500, -0.300] on 16 pairs" in failure.get("message", "")


def test_no_failure_when_no_model_is_worse() -> None:
    comparison = _comparison()
    calm = comparison.model_copy(
        update={"pairs": [pair.model_copy(update={"lengths": pair.lengths[:1]}) for pair in comparison.pairs]}
    )
    root = ElementTree.fromstring(comparison_junit(calm).split("\n", 1)[1])
    assert [suite.get("failures") for suite in root.findall("testsuite")] == ["0"]
