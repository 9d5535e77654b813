"""The release gate's tests and its decision rule, on arrays: one dataset when ``rotscope gate`` judges
two runs, thousands at once when ``rotscope plan`` (``rotscope.gate.sizing``) simulates them.

The data are per cluster (a case: its evidence-absent and evidence-only controls belong to it) and
slice (task x length x position x slice fields): the sums of correct items of the baseline and the
candidate, and how many paired items there are (``count``). An instance is a cluster in a slice;
its items are averaged first, so a multi-item instance counts once, as in ``stats.paired_gap``.

The tests, each one-sided at ``alpha`` (the plan's ``gate.alpha``):

- pooled non-inferiority: the mean over clusters of each cluster's mean paired difference over all
  its items, adjusted t of ``stats.paired_gap``; shown when its lower bound is above ``-margin``;
- pooled FAIL: the same mean's upper bound below ``-margin``, so a drop spread over every slice is
  caught;
- per-slice FAIL: the adjusted t of the slice's instance differences, inferiority (upper bound below
  ``-margin``) Holm-adjusted across the tested slices, so a drop at one position cannot hide in the
  average;
- absolute floor: per slice the exact binomial test of "candidate accuracy below ``floor``" on the
  candidate's instance means, Holm-adjusted across the tested slices.

A slice is tested when it holds at least ``min_instances`` instances; one that holds fewer makes
the verdict INCONCLUSIVE (it is never pooled away), though its items still count in the pooled
tests. FAIL: the pooled FAIL test, a slice's FAIL test or the floor rejects. PASS: no FAIL, every
slice tested, pooled non-inferiority shown and every slice's candidate accuracy at least the floor
on its point estimate. Otherwise INCONCLUSIVE. The FAIL family's error rate at a true loss of
exactly the margin is therefore at most about twice ``alpha`` (pooled and slices), and the PASS
rate there at most ``alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rotscope.stats.accuracy_floor import below_floor_p, floor_upper_bound
from rotscope.stats.intervals import TParts, adjusted_t_parts
from rotscope.stats.multiplicity import holm_array, step_levels_array

PASS, FAIL, INCONCLUSIVE = 0, 1, 3
"""Verdict codes, the gate's exit codes."""
TESTS_VERSION = 2
"""1: per-slice cluster bootstrap, every slice had to show non-inferiority; 2: the tests above."""


@dataclass(frozen=True)
class Rule:
    """The settings the decision reads (``GateConfig``'s)."""

    margin: float
    alpha: float
    floor: float
    min_instances: int


@dataclass(frozen=True)
class Pooled:
    """The pooled tests over some slices, arrays over the datasets."""

    clusters: np.ndarray
    difference: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    p_noninferior: np.ndarray
    p_inferior: np.ndarray
    passes: np.ndarray
    fails: np.ndarray


@dataclass(frozen=True)
class Decision:
    """Every test's result: per dataset (first axis) and slice (last axis)."""

    instances: np.ndarray
    tested: np.ndarray
    baseline_accuracy: np.ndarray
    candidate_accuracy: np.ndarray
    difference: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    p_noninferior: np.ndarray
    p_inferior: np.ndarray
    p_noninferior_holm: np.ndarray
    p_inferior_holm: np.ndarray
    slice_fails: np.ndarray
    floor_p_holm: np.ndarray
    floor_upper: np.ndarray
    floor_fails: np.ndarray
    below_floor: np.ndarray
    pooled: Pooled
    verdict: np.ndarray


def _means(sums: np.ndarray, count: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, sums / np.where(count > 0, count, 1), 0.0)


def pooled_tests(
    baseline: np.ndarray,
    candidate: np.ndarray,
    count: np.ndarray,
    rule: Rule,
    columns: np.ndarray | None = None,
) -> Pooled:
    """The pooled tests over the slices ``columns`` (all when ``None``): each cluster's mean paired
    difference over all its items there, the adjusted t over clusters, one-sided at ``alpha``."""
    chosen = slice(None) if columns is None else columns
    items = count[..., chosen].sum(axis=-1)
    difference = _means((candidate[..., chosen] - baseline[..., chosen]).sum(axis=-1), items)
    present = np.broadcast_to(items > 0, difference.shape)
    parts = adjusted_t_parts(difference, present)
    p_noninferior = parts.p_above(-rule.margin)
    p_inferior = parts.p_below(-rule.margin)
    return Pooled(
        clusters=present.sum(axis=-1),
        difference=np.where(present, difference, 0.0).sum(axis=-1) / np.maximum(present.sum(axis=-1), 1),
        lower=parts.bound(rule.alpha, "lower"),
        upper=parts.bound(rule.alpha, "upper"),
        p_noninferior=p_noninferior,
        p_inferior=p_inferior,
        passes=np.nan_to_num(p_noninferior, nan=1.0) <= rule.alpha,
        fails=np.nan_to_num(p_inferior, nan=1.0) <= rule.alpha,
    )


def decide(baseline: np.ndarray, candidate: np.ndarray, count: np.ndarray, rule: Rule) -> Decision:
    """Every test and the verdict. ``baseline`` and ``candidate`` are [datasets, clusters, slices]
    sums of correct items, ``count`` [clusters, slices] paired items (0: the cluster is not in
    the slice)."""
    present = count > 0
    instances = present.sum(axis=0)
    tested = instances >= rule.min_instances
    base_means, cand_means = _means(baseline, count), _means(candidate, count)
    # slices on the last axis of what the tests read, instances before them
    differences = np.swapaxes(cand_means - base_means, -1, -2)
    parts: TParts = adjusted_t_parts(differences, np.broadcast_to(present.T, differences.shape))
    untested = ~tested
    p_inferior = np.where(untested, np.nan, parts.p_below(-rule.margin))
    p_noninferior = np.where(untested, np.nan, parts.p_above(-rule.margin))
    p_inferior_holm = holm_array(p_inferior)
    p_noninferior_holm = holm_array(p_noninferior)
    upper = np.where(untested, np.nan, parts.bound(step_levels_array(p_inferior, rule.alpha), "upper"))
    lower = np.where(untested, np.nan, parts.bound(step_levels_array(p_noninferior, rule.alpha), "lower"))
    slice_fails = np.nan_to_num(p_inferior_holm, nan=1.0) <= rule.alpha
    successes = cand_means.sum(axis=-2)
    floor_p = np.where(untested, np.nan, below_floor_p(successes, np.broadcast_to(instances, successes.shape),
                                                        rule.floor))  # fmt: skip
    floor_p_holm = holm_array(floor_p)
    floor_upper = np.where(
        untested, np.nan, floor_upper_bound(successes, instances, step_levels_array(floor_p, rule.alpha))
    )
    floor_fails = np.nan_to_num(floor_p_holm, nan=1.0) <= rule.alpha
    with np.errstate(invalid="ignore", divide="ignore"):
        candidate_accuracy = successes / instances
        baseline_accuracy = base_means.sum(axis=-2) / instances
    below_floor = tested & (candidate_accuracy < rule.floor)
    pooled = pooled_tests(baseline, candidate, count, rule)
    fails = pooled.fails | slice_fails.any(axis=-1) | floor_fails.any(axis=-1)
    passes = ~fails & bool(tested.all()) & pooled.passes & ~below_floor.any(axis=-1)
    verdict = np.where(fails, FAIL, np.where(passes, PASS, INCONCLUSIVE))
    return Decision(
        instances=instances,
        tested=tested,
        baseline_accuracy=baseline_accuracy,
        candidate_accuracy=candidate_accuracy,
        difference=candidate_accuracy - baseline_accuracy,
        lower=lower,
        upper=upper,
        p_noninferior=p_noninferior,
        p_inferior=p_inferior,
        p_noninferior_holm=p_noninferior_holm,
        p_inferior_holm=p_inferior_holm,
        slice_fails=slice_fails,
        floor_p_holm=floor_p_holm,
        floor_upper=floor_upper,
        floor_fails=floor_fails,
        below_floor=below_floor,
        pooled=pooled,
        verdict=verdict,
    )
