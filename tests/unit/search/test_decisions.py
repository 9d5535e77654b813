"""The adaptive effective-length search (``rotscope.search.decisions``): its confidence sequence keeps
its coverage under optional stopping, the bisection brackets a known cliff with fewer calls than
a grid, a budget stop is inconclusive, a dip is flagged and the lengths around it tested."""

from __future__ import annotations

import itertools
import random

import pytest

from rotscope.backends.curve import LogisticCurve
from rotscope.search.confseq import confidence_sequence
from rotscope.search.decisions import SearchSettings, Step, Threshold, fixed_grid_calls, log_grid, run_search


def test_log_grid_spans_the_range_at_the_resolution() -> None:
    grid = log_grid(1000, 128000, 1.25)
    assert grid[0] == 1000 and grid[-1] == 128000
    assert max(b / a for a, b in itertools.pairwise(grid)) <= 1.25 + 1e-3
    fine = log_grid(1000, 128000, 1.25, 2)
    assert len(fine) == 2 * (len(grid) - 1) + 1


@pytest.mark.parametrize("mean", [0.3, 0.85])
def test_confidence_sequence_covers_at_every_look(mean: float) -> None:
    """The bounds are intersected over time, so a sequence that ever excluded the true mean still
    excludes it at the end: the share of runs excluding it at n=150 is the share that ever did."""
    rng = random.Random(7)
    alpha, runs, missed = 0.1, 200, 0
    for _ in range(runs):
        values = [sum(rng.random() < mean for _ in range(3)) / 3 for _ in range(150)]
        lower, upper = confidence_sequence(values, alpha)
        missed += not lower <= mean <= upper
        assert upper - lower < 0.35
    assert missed / runs <= alpha


def test_confidence_sequence_before_any_value_is_the_unit_interval() -> None:
    assert confidence_sequence([], 0.05) == (0.0, 1.0)


@pytest.mark.parametrize("definition", ["nolima", "nolima-x", "ruler-0.8", "absolute-1.5"])
def test_bad_definitions_are_refused(definition: str) -> None:
    with pytest.raises(ValueError):
        Threshold.parse(definition)


def settings(**changes: object) -> SearchSettings:
    values: dict[str, object] = {
        "lengths": tuple(log_grid(1000, 128000, 1.25, 2)),
        "resolution": 1.25,
        "base_length": 500,
        "threshold": Threshold.parse("nolima-0.85"),
        "calls_per_instance": 3,
        "cap": 256,
    }
    values.update(changes)
    return SearchSettings(**values)  # type: ignore[arg-type]


def cliff(at: int, below: float = 1.0, above: float = 0.0):  # type: ignore[no-untyped-def]
    def measure(step: Step) -> list[float]:
        return [below if step.length <= at else above] * step.count

    return measure


def test_a_cliff_is_bracketed_at_the_resolution_with_a_fraction_of_the_grid() -> None:
    plan = settings()
    result = run_search(plan, cliff(20000))
    assert result.verdict == "decided", result.reason
    low, high = result.bracket
    assert low is not None and high is not None
    assert low <= 20000 < high and high / low <= 1.25 + 1e-3
    grid = fixed_grid_calls(
        settings(lengths=tuple(log_grid(1000, 128000, 1.25))), max(result.instances_at_decided())
    )
    assert result.calls <= 0.4 * grid


def test_the_range_ends_decide_too() -> None:
    assert run_search(settings(), cliff(10**9)).bracket == (128000, None)
    assert run_search(settings(), cliff(700)).bracket == (None, 1000)


def test_a_budget_stop_is_inconclusive_and_more_budget_continues_the_same_search() -> None:
    full = run_search(settings(), cliff(20000))
    stopped = run_search(settings(max_calls=full.calls // 2), cliff(20000))
    assert stopped.verdict == "inconclusive" and stopped.calls <= full.calls // 2
    assert stopped.stopped_by == ("max_calls",) and full.stopped_by == ()
    assert stopped.decisions == full.decisions[: len(stopped.decisions)]
    again = run_search(settings(max_calls=full.calls), cliff(20000))
    assert again.decisions == full.decisions and again.verdict == "decided"


def test_a_length_at_the_threshold_stays_undecided_at_the_cap() -> None:
    result = run_search(settings(cap=32), cliff(20000, below=1.0, above=0.85))
    assert result.verdict == "undecided"
    assert max(d.instances for d in result.decisions) == 32


def test_a_longer_length_scoring_above_a_failed_one_is_flagged_and_the_lengths_between_tested() -> None:
    grid = log_grid(1000, 128000, 1.25, 2)

    def dip(step: Step) -> list[float]:
        if step.length == 500:
            return [1.0] * step.count
        score = 0.0 if step.length < grid[22] else 0.6 if step.length == grid[22] else 0.0
        return [1.0 if step.length < 3000 else score] * step.count

    result = run_search(settings(), dip)
    assert result.non_monotone, [(d.length, d.state) for d in result.decisions]
    shorter, longer = result.non_monotone[0]
    tested = {d.length for d in result.decisions}
    assert all(length in tested for length in grid if shorter < length < longer)


def test_the_search_brackets_a_scripted_curve() -> None:
    curve = LogisticCurve(8000, slope=6.0, spread=0.5)
    truth = curve.effective_length(500, 0.85)

    def measure(step: Step) -> list[float]:
        return [sum(curve.correct(f"i{i}", step.length, d) for d in range(3)) / 3
                for i in range(step.start, step.start + step.count)]  # fmt: skip

    result = run_search(settings(resolution=2.0, lengths=tuple(log_grid(1000, 128000, 2.0, 2))), measure)
    assert result.verdict == "decided", result.reason
    low, high = result.bracket
    assert low is not None and high is not None and low <= truth < high


def test_the_fixed_grid_measures_the_base_only_for_a_relative_definition() -> None:
    lengths = tuple(log_grid(1000, 8000, 2.0))  # 1000, 2000, 4000, 8000
    relative = settings(lengths=lengths)
    absolute = settings(lengths=lengths, threshold=Threshold.parse("absolute-0.5"))
    assert fixed_grid_calls(relative, 16) == 5 * 16 * 3
    assert fixed_grid_calls(absolute, 16) == 4 * 16 * 3
