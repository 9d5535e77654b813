"""Two models on the same items: the paired difference per length, its exact sign-flip test on
clusters, and Holm's correction across every pair x length of a task, which decides each verdict
(docs/statistics.md, "Paired tests (compare)").

Items pair on (case, length, position, trial); an item in error in either run is left out of both.
Each instance (a prompt's case at a length) is averaged over its paired items first, so its items
at several positions are never counted as independent. The instances are then clustered by the
one rule of ``rotscope.types.clusters`` (``analysis.clusters.clusters_of`` on both models' paired
rows): on their case, or on the haystack variant where the cases read more than one and fewer
than there are cases. The sum of each cluster's instance differences is one value of the exact
sign-flip test of "no difference" (``stats.randomisation``); its interval is the test inverted.

``benchmarks/compare_tests.py`` chose this over the adjusted t of ``stats.paired_gap`` with Holm
within a pair (``PREVIOUS_METHOD``, still computed so a view can say where a verdict changed). In
its worlds (``benchmarks/results/compare_tests.md``: 2-5 equal models, n 16-100, baselines
0.30-0.97, 3 shared haystack variants or one per case) this one's family-wise false
"better"/"worse" is at most 0.048, the old one's up to 0.48 for a pair and 0.97 for 5 models with
shared variants; with one haystack per case it finds a 0.10 drop at one length at 16/30/50
instances 24-27%/59-65%/89-91% of the time (the old one 0%/20-24%/71-76%). Three shared variants
are three clusters, whose smallest two-sided p is 0.25: no difference is ever shown there."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from rotscope.analysis.clusters import clusters_of
from rotscope.compare.record import PairLength
from rotscope.position import Position
from rotscope.rows import Row, value
from rotscope.stats.intervals import adjusted_t_parts
from rotscope.stats.multiplicity import holm
from rotscope.stats.paired import MIN_PAIRS
from rotscope.stats.randomisation import method_name, sign_flip_interval, sign_flip_p

ALPHA = 0.05
"""The family-wise error rate of a task's verdicts across all its pairs x lengths (Holm)."""
PAIR_METHOD = (
    "exact sign-flip test of no difference on cluster totals of paired instance differences "
    "(clustered on the case, or on the haystack variant where cases share fewer), two-sided, "
    "interval by inverting it; Holm across all pairs x lengths of a task"
)
PREVIOUS_METHOD = "adjusted t on paired instances, Holm within a pair"
"""The test of a comparison before issue 48: each instance its own cluster, Holm within a pair."""

Verdict = Literal["better", "worse", "no difference shown", "too few pairs"]
"""A length's verdict for the second model of a pair against the first."""


def item_key(row: Row) -> tuple[Any, ...]:
    """What pairs an item of one run with the other's: (case, length, position, trial)."""
    position = Position.from_stored(row["position"], row["depth"]).label
    filler = row.get("filler")
    return (
        row["case_id"],
        int(row["length_target"]),
        f"{filler}/{position}" if filler else position,
        row["trial"],
    )


def _probes(rows: Iterable[Row], task: str) -> dict[tuple[Any, ...], Row]:
    return {item_key(row): row for row in rows if row["task"] == task and not row["control"]}


def _means(pairs: Sequence[tuple[str, float, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Each instance's mean correctness in the first and the second run, over its paired items."""
    first: dict[str, list[float]] = defaultdict(list)
    second: dict[str, list[float]] = defaultdict(list)
    for instance, a, b in pairs:
        first[instance].append(a)
        second[instance].append(b)
    return (
        {key: sum(values) / len(values) for key, values in first.items()},
        {key: sum(values) / len(values) for key, values in second.items()},
    )


def two_sided_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of "the mean paired difference is 0" under the adjusted t of
    ``paired_gap`` (``stats.adjusted_t_parts``: never of zero spread, so all-equal pairs give 1):
    the test before issue 48 (``PREVIOUS_METHOD``)."""
    parts = adjusted_t_parts(np.asarray(differences, dtype=float))
    one_sided = min(float(parts.p_above(0.0)), float(parts.p_below(0.0)))
    return min(1.0, 2.0 * one_sided)


def cluster_totals(
    differences: dict[str, float], cluster_of: dict[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    """Each cluster's total of its instances' differences and its number of instances, in the
    clusters' sorted order (the sign-flip test's input)."""
    totals: dict[str, float] = defaultdict(float)
    sizes: dict[str, int] = defaultdict(int)
    for instance, difference in differences.items():
        totals[cluster_of[instance]] += difference
        sizes[cluster_of[instance]] += 1
    order = sorted(totals)
    return np.array([totals[key] for key in order]), np.array([sizes[key] for key in order], dtype=float)


@dataclass(frozen=True)
class LengthDifference:
    """The second model's accuracy minus the first's at one length, on the items both answered."""

    length: int
    first_accuracy: float | None
    second_accuracy: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    pairs: int
    p_value: float | None
    p_holm: float | None = None
    verdict: Verdict = "too few pairs"
    test: str | None = None
    """The test that gave ``p_value``, with its clusters."""
    previous_p: float | None = None
    """``p_value`` under ``PREVIOUS_METHOD`` (not recorded: a view's note of changed verdicts)."""

    def record(self) -> PairLength:
        """The length's entry of the comparison record."""
        fields = {key: value for key, value in self.__dict__.items() if key != "previous_p"}
        return PairLength(**fields)


def length_difference(pairs: Sequence[tuple[Row, Row]], length: int) -> LengthDifference:
    """One length's paired difference (second minus first) of the paired rows ``pairs`` (both
    scored), tested by the sign-flip test on the clusters of the one rule; untested (``too few
    pairs``) under ``stats.MIN_PAIRS`` instances."""
    a, b = _means([(row["instance_id"], value(row), value(other)) for row, other in pairs])
    differences = {key: b[key] - a[key] for key in sorted(a)}
    entry = LengthDifference(
        length=length,
        first_accuracy=sum(a.values()) / len(a) if a else None,
        second_accuracy=sum(b.values()) / len(b) if b else None,
        difference=sum(differences.values()) / len(differences) if differences else None,
        ci_low=None,
        ci_high=None,
        pairs=len(differences),
        p_value=None,
    )
    if len(differences) < MIN_PAIRS:
        return entry
    clusters = clusters_of([row for pair in pairs for row in pair], "instance_id")
    totals, sizes = cluster_totals(differences, dict(clusters.of))
    low, high = sign_flip_interval(totals, sizes)
    return replace(
        entry,
        ci_low=float(low),
        ci_high=float(high),
        p_value=float(sign_flip_p(totals, sizes)),
        test=named_test(clusters.label(method_name(len(totals))), len(totals)),
        previous_p=two_sided_p(list(differences.values())),
    )


def named_test(label: str, clusters: int) -> str:
    """The test as a verdict names it; where its clusters are too few for any p-value to reach
    ``ALPHA`` (two-sided, the smallest is 2 / 2^clusters: 0.25 for 3), it says so."""
    smallest = 2.0 / 2.0**clusters
    return label if smallest <= ALPHA else f"{label}; smallest possible p {smallest:.3g}: no verdict"


def pair_tests(
    first: Iterable[Row], second: Iterable[Row], task: str, lengths: Sequence[int]
) -> list[LengthDifference]:
    """Per length, the paired difference of one task's probes and its test, before any verdict
    (``family_verdicts`` decides them across the task's family)."""
    left, right = _probes(first, task), _probes(second, task)
    return [
        length_difference(
            [
                (row, other)
                for key, row in left.items()
                if key[1] == length
                and (other := right.get(key)) is not None
                and row["status"] == "ok"
                and other["status"] == "ok"
            ],
            length,
        )
        for length in lengths
    ]


def family_verdicts(
    family: Sequence[Sequence[LengthDifference]], alpha: float = ALPHA
) -> list[list[LengthDifference]]:
    """Each tested length's Holm-adjusted p-value across every tested length of every pair in
    ``family`` (a task's pairs), and its verdict: the second model ``better`` or ``worse`` where
    the adjusted p is at most ``alpha``, else ``no difference shown``; ``too few pairs`` where
    nothing was tested."""
    tested = [
        (i, j) for i, found in enumerate(family) for j, entry in enumerate(found) if entry.p_value is not None
    ]
    adjusted = dict(zip(tested, holm([family[i][j].p_value or 0.0 for i, j in tested], alpha), strict=True))
    result: list[list[LengthDifference]] = []
    for i, found in enumerate(family):
        decided = []
        for j, entry in enumerate(found):
            if entry.p_value is None:
                decided.append(entry)
                continue
            p = adjusted[(i, j)]
            decided.append(replace(entry, p_holm=p, verdict=verdict_of(p, entry.difference, alpha)))
        result.append(decided)
    return result


def verdict_of(p_holm: float, difference: float | None, alpha: float = ALPHA) -> Verdict:
    """``better`` or ``worse`` (the sign of ``difference``) where ``p_holm`` is at most ``alpha``."""
    if p_holm <= alpha and difference is not None and difference != 0:
        return "better" if difference > 0 else "worse"
    return "no difference shown"


def previous_verdicts(found: Sequence[LengthDifference], alpha: float = ALPHA) -> list[Verdict]:
    """A pair's verdicts under ``PREVIOUS_METHOD`` (adjusted t, Holm within the pair)."""
    tested = [entry for entry in found if entry.previous_p is not None]
    adjusted = iter(holm([entry.previous_p or 0.0 for entry in tested], alpha))
    return [
        verdict_of(next(adjusted), entry.difference, alpha) if entry.previous_p is not None else entry.verdict
        for entry in found
    ]


def with_verdicts(found: Sequence[LengthDifference], alpha: float = ALPHA) -> list[LengthDifference]:
    """One pair's lengths decided as a family of their own (``family_verdicts`` of one pair)."""
    return family_verdicts([found], alpha)[0]


def length_differences(
    first: Iterable[Row], second: Iterable[Row], task: str, lengths: Sequence[int], *, alpha: float = ALPHA
) -> list[LengthDifference]:
    """One pair compared alone: ``pair_tests`` decided with Holm across its own lengths (a
    comparison of more runs decides each task's pairs together: ``family_verdicts``)."""
    return with_verdicts(pair_tests(first, second, task, lengths), alpha)


def family_words(pairs: int, lengths: int, tested: int) -> str:
    """The family α holds over, as every view names it: "Holm over 9 tests: 3 pairs x 3 lengths"."""
    plural = {"pairs": "s" if pairs != 1 else "", "lengths": "s" if lengths != 1 else ""}
    words = f"Holm over {tested} tests: {pairs} pair{plural['pairs']} x {lengths} length{plural['lengths']}"
    untested = pairs * lengths - tested
    return words if untested == 0 else f"{words}, {untested} with too few pairs"
