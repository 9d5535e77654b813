"""The release gate's tests and its decision rule, on arrays: one dataset when ``rotscope gate`` judges
two runs, thousands at once when ``rotscope plan`` (``rotscope.gate.sizing``) simulates them.

The data are per case (its evidence-absent and evidence-only controls belong to it) and slice
(task x length x position x slice fields): the sums of correct items of the baseline and the
candidate, and how many paired items there are (``count``). The tests cluster by the one rule of
``rotscope.types.clusters`` (docs/statistics.md, "Gate tests"): the case, or the haystack variant
where the cases share fewer variants than there are cases; a cluster's items in a slice are
averaged first, so a multi-item instance counts once, as in ``stats.paired_gap``.

The tests, each one-sided at ``alpha`` (the plan's ``gate.alpha``), are ``margin_test``'s t on the
clusters' mean differences (non-inferiority its score t; the FAIL tests its floored t; chosen over
the adjusted t, a plain cluster t and the sign-flip by ``benchmarks/gate_tests.py``: they keep their
level at the margin near a ceiling and PASS a bit-identical rerun at far fewer cases):

- pooled non-inferiority: the mean over clusters of each cluster's mean paired difference over all
  its items; shown when "the loss is at most the margin" is rejected (lower bound above
  ``-margin``). The only test whose success is called PASS;
- pooled FAIL: the same mean shown below ``-margin``, so a drop spread over every slice is caught;
- per-slice FAIL: the slice's clusters' differences shown below ``-margin``, Holm-adjusted across
  the tested slices. A slice it does not reject is "not shown to fail", which is not "no loss":
  one slice of 30 cases at Holm's level misses most drops of twice the margin
  (``benchmarks/results/gate_tests.md``);
- absolute floor: per slice the exact binomial test of "candidate accuracy below ``floor``" on the
  candidate's cluster means, Holm-adjusted across the tested slices.

A slice is tested when it holds at least ``min_instances`` cases; one that holds fewer makes the
verdict INCONCLUSIVE (it is never pooled away), though its items still count in the pooled tests.
FAIL: the pooled FAIL test, a slice's FAIL test or the floor rejects. PASS: no FAIL, every slice
tested, pooled non-inferiority shown and every slice's candidate accuracy at least the floor on its
point estimate. Otherwise INCONCLUSIVE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rotscope.gate import margin_test
from rotscope.gate.margin_test import MarginData
from rotscope.stats.accuracy_floor import below_floor_p, floor_upper_bound
from rotscope.stats.multiplicity import holm_array, step_levels_array

PASS, FAIL, INCONCLUSIVE = 0, 1, 3
"""Verdict codes, the gate's exit codes."""
TESTS_VERSION = 3
"""1: per-slice cluster bootstrap, every slice had to show non-inferiority; 2: the adjusted t on
cases; 3: the tests above, clustered by the one rule."""


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


def cluster_sums(
    baseline: np.ndarray, candidate: np.ndarray, count: np.ndarray, cluster: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The [datasets, cases, slices] sums and [cases, slices] counts summed into the clusters
    ``cluster`` (each case's cluster number, ``rotscope.types.clusters``'s rule)."""
    groups = int(cluster.max(initial=-1)) + 1
    shape = (groups, count.shape[-1])
    base = np.zeros((*baseline.shape[:-2], *shape))
    cand = np.zeros_like(base)
    summed = np.zeros(shape)
    for group in range(groups):
        mine = cluster == group
        base[..., group, :] = baseline[..., mine, :].sum(axis=-2)
        cand[..., group, :] = candidate[..., mine, :].sum(axis=-2)
        summed[group] = count[mine].sum(axis=0)
    return base, cand, summed


def _means(sums: np.ndarray, count: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, sums / np.where(count > 0, count, 1), 0.0)


def _discordance(baseline: np.ndarray, candidate: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's net discordant items: baseline right where the candidate is not, and back."""
    return np.clip(baseline - candidate, 0.0, None), np.clip(candidate - baseline, 0.0, None)


def pooled_tests(
    baseline: np.ndarray,
    candidate: np.ndarray,
    count: np.ndarray,
    rule: Rule,
    columns: np.ndarray | None = None,
    *,
    bounds: bool = True,
    discordance: tuple[np.ndarray, np.ndarray] | None = None,
) -> Pooled:
    """The pooled tests over the slices ``columns`` (all when ``None``): each cluster's mean paired
    difference over all its items there, ``margin_test`` over clusters, one-sided at ``alpha``.
    The arrays are per cluster (``cluster_sums``); ``discordance`` the cells' net loss and gain
    (from the cases, before they were summed into clusters), else from the clusters' cells."""
    chosen = slice(None) if columns is None else columns
    items = count[..., chosen].sum(axis=-1)
    difference = _means((candidate[..., chosen] - baseline[..., chosen]).sum(axis=-1), items)
    present = np.broadcast_to(items > 0, difference.shape)
    loss, gain = discordance or _discordance(baseline, candidate)
    data = MarginData(
        means=difference,
        present=present,
        items=np.broadcast_to(items, difference.shape),
        loss=loss[..., chosen].sum(axis=(-1, -2)),
        gain=gain[..., chosen].sum(axis=(-1, -2)),
    )
    p_noninferior = margin_test.p_value(data, -rule.margin, "above")
    p_inferior = margin_test.p_value(data, -rule.margin, "below")
    unknown = np.full(p_noninferior.shape, np.nan)
    return Pooled(
        clusters=present.sum(axis=-1),
        difference=data.estimate,
        lower=margin_test.bound(data, rule.alpha, "lower") if bounds else unknown,
        upper=margin_test.bound(data, rule.alpha, "upper") if bounds else unknown,
        p_noninferior=p_noninferior,
        p_inferior=p_inferior,
        passes=np.nan_to_num(p_noninferior, nan=1.0) <= rule.alpha,
        fails=np.nan_to_num(p_inferior, nan=1.0) <= rule.alpha,
    )


def decide(
    baseline: np.ndarray,
    candidate: np.ndarray,
    count: np.ndarray,
    rule: Rule,
    cluster: np.ndarray | None = None,
    *,
    bounds: bool = True,
) -> Decision:
    """Every test and the verdict. ``baseline`` and ``candidate`` are [datasets, cases, slices]
    sums of correct items, ``count`` [cases, slices] paired items (0: the case is not in the
    slice); ``cluster`` each case's cluster number (``rotscope.types.clusters``'s rule: its
    haystack variant where the cases share them; each case its own when ``None``). The slices'
    minimum counts are of cases, every test is on clusters. ``bounds`` False skips the bounds
    (a simulation of verdicts reads none)."""
    present_cases = count > 0
    instances = present_cases.sum(axis=0)
    tested = instances >= rule.min_instances
    case_base, case_cand = _means(baseline, count), _means(candidate, count)
    with np.errstate(invalid="ignore", divide="ignore"):
        candidate_accuracy = case_cand.sum(axis=-2) / instances
        baseline_accuracy = case_base.sum(axis=-2) / instances
    loss, gain = _discordance(baseline, candidate)
    if cluster is not None:
        baseline, candidate, count = cluster_sums(baseline, candidate, count, cluster)
        loss, gain, _ = cluster_sums(loss, gain, present_cases.astype(float), cluster)
    present = count > 0
    base_means, cand_means = _means(baseline, count), _means(candidate, count)
    # slices on the next-to-last axis of what the tests read, clusters last
    data = MarginData(
        means=np.swapaxes(cand_means - base_means, -1, -2),
        present=np.broadcast_to(present.T, np.swapaxes(cand_means, -1, -2).shape),
        items=np.broadcast_to(count.T, np.swapaxes(cand_means, -1, -2).shape),
        loss=loss.sum(axis=-2),
        gain=gain.sum(axis=-2),
    )
    untested = ~tested
    p_inferior = np.where(untested, np.nan, margin_test.p_value(data, -rule.margin, "below"))
    p_noninferior = np.where(untested, np.nan, margin_test.p_value(data, -rule.margin, "above"))
    p_inferior_holm = holm_array(p_inferior)
    p_noninferior_holm = holm_array(p_noninferior)
    if bounds:
        upper = margin_test.bound(data, step_levels_array(p_inferior, rule.alpha), "upper")
        lower = margin_test.bound(data, step_levels_array(p_noninferior, rule.alpha), "lower")
    else:
        upper = lower = np.full(p_inferior.shape, np.nan)
    upper, lower = np.where(untested, np.nan, upper), np.where(untested, np.nan, lower)
    slice_fails = np.nan_to_num(p_inferior_holm, nan=1.0) <= rule.alpha
    clusters = present.sum(axis=0)
    successes = cand_means.sum(axis=-2)
    floor_p = np.where(untested, np.nan, below_floor_p(successes, np.broadcast_to(clusters, successes.shape),
                                                        rule.floor))  # fmt: skip
    floor_p_holm = holm_array(floor_p)
    floor_upper = np.where(
        untested, np.nan, floor_upper_bound(successes, clusters, step_levels_array(floor_p, rule.alpha))
    )
    floor_fails = np.nan_to_num(floor_p_holm, nan=1.0) <= rule.alpha
    below_floor = tested & (candidate_accuracy < rule.floor)
    pooled = pooled_tests(baseline, candidate, count, rule, bounds=bounds, discordance=(loss, gain))
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
