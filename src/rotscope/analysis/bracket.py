"""The effective-length bracket of a task's rows: the lengths the effective length is shown to reach
(lower end) and to fall before (upper end), at a stated confidence, by either definition.

Relative (``nolima-F``): each instance's paired margin ``x_L - F * x_base`` (the adaptive search's
statistic, ``stats.threshold_margins``), paired on (case, position) as the gap is. From
``stats.SIGN_FLIP_FROM`` clusters a length is tested by the sign-flip test on the clusters' margin
totals (``stats.sign_flip_margin_tests``: pass and fail decided on its p-values, the bounds shown
by inversion); below, by the gap's adjusted t interval (``stats.margin_bounds``);
``benchmarks/bracket_coverage.py`` chose the rule (docs/statistics.md, "The bracket"). On a
continuous score (``rows.is_continuous``) the sign-flip test from ``stats.SIGN_FLIP_FROM_CONTINUOUS``
clusters (``benchmarks/likelihood_sim.py``; docs/statistics.md, "Scores"). Absolute
(``absolute-S``): the score's one-sided bounds, Wilson on the instances (``stats.score_bounds``);
on a continuous score (``rows.is_continuous``: the gold answer's probability) the cell's adjusted t
on the instances (``stats.instance_score_bounds``), Wilson's variance being a 0/1 value's.
Each length's test clusters by the one rule (``analysis.clusters.clusters_of`` on the rows it
uses): where the instances share fewer haystack variants than there are instances, on the
variants (the sign-flip test on their totals, or the cluster t's bounds,
``stats.cluster_margin_bounds``; ``stats.cluster_score_bounds``, the cell's clustered interval, with
t on about variants - 1 degrees of freedom); the ``method`` names which. Otherwise a length passes
when its lower bound is at or above the threshold (a sole base length passes by definition: its
margin is ``(1 - F) x >= 0``), fails when its upper bound is below it; the ends are
``stats.bracket_indices`` (a fixed-sequence test up the lengths; the fails Bonferroni-split over the
lengths that can fail), each at ``stats.end_confidence``, so both hold at ``BRACKET_CONFIDENCE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rotscope.analysis.clusters import clusters_of
from rotscope.analysis.rejections import matched_means
from rotscope.records.effective import Bracket, BracketEnd, BracketTest
from rotscope.rows import Row, group_by, instance_means, is_continuous
from rotscope.stats.bracket_ends import (
    BRACKET_CONFIDENCE,
    bracket_indices,
    bracket_state,
    cluster_margin_bounds,
    cluster_score_bounds,
    end_confidence,
    instance_score_bounds,
    margin_bounds,
    score_bounds,
    sign_flip_margin_bounds,
    sign_flip_margin_tests,
    threshold_margins,
    uses_sign_flip,
)
from rotscope.stats.randomisation import method_name

RELATIVE_METHOD = (
    "paired margin x_L - {ratio} x base per case ({interval}); lower end: fixed-sequence "
    "test up the lengths; upper end: first length shown to fail, Bonferroni over the lengths that can fail"
)
ABSOLUTE_METHOD = (
    "instance_accuracy at each length ({interval}) against {threshold}; lower end: "
    "fixed-sequence test up the lengths; upper end: first length shown to fail, Bonferroni over the lengths"
)
MARGIN_INTERVAL = "adjusted t, one-sided"
SIGN_FLIP_INTERVAL = "{test}, one-sided, bounds by inversion"
"""The relative test from ``stats.SIGN_FLIP_FROM`` clusters (``stats.sign_flip_margin_tests``)."""
"""The relative test's interval (``stats.margin_bounds``; ``stats.cluster_margin_bounds`` on variants)."""
SCORE_INTERVAL = "Wilson on instances, one-sided"
"""The absolute test's interval on independent instances (``stats.score_bounds``)."""
CLUSTERED_SCORE_INTERVAL = "adjusted t on instance means, one-sided"
"""The absolute test's interval on shared variants (``stats.cluster_score_bounds``, the cell's), and
on a continuous score's instances (``stats.instance_score_bounds``)."""

Labels = dict[int, str]
"""Each tested length's interval, named with its clusters (``Clusters.label``)."""


@dataclass(frozen=True)
class _Margin:
    """One tested length's margin and bounds, before its pass and fail are decided."""

    estimate: float | None
    lower: float | None
    upper: float | None
    fail_upper: float | None
    pairs: int
    by_definition: bool = False
    decided: tuple[bool, bool] | None = None
    """The sign-flip test's pass and fail, decided on its p-values (the bounds only show them)."""

    def passes(self) -> bool:
        if self.decided is not None:
            return self.decided[0]
        return self.by_definition or (self.lower is not None and self.lower >= 0.0)

    def fails(self) -> bool:
        if self.decided is not None:
            return self.decided[1]
        return self.fail_upper is not None and self.fail_upper < 0.0

    def tested(self, length: int, passes: bool, fails: bool) -> BracketTest:
        test = BracketTest(
            length=length,
            passes=passes,
            fails=fails,
            estimate=self.estimate,
            lower=self.lower,
            upper=self.upper,
            fail_upper=self.fail_upper,
            pairs=self.pairs,
        )
        # by_definition is absent, not false, for a length tested on its data (docs/records.md)
        return test.model_copy(update={"by_definition": True}) if self.by_definition else test


_UNTESTED = _Margin(None, None, None, None, 0)


def interval_label(labels: Labels, default: str) -> str:
    """The interval the bracket's tests used: the one label where every length's is the same (the
    usual case: a case keeps its variant at every length), else each length's; ``default`` where
    no length was tested."""
    distinct = sorted(set(labels.values()))
    if not distinct:
        return default
    if len(distinct) == 1:
        return distinct[0]
    return "; ".join(f"{length}: {label}" for length, label in sorted(labels.items()))


def _relative_tests(
    rows: list[Row], lengths: list[int], base_lengths: list[int], ratio: float, one_sided: float, fail: float
) -> tuple[dict[int, _Margin], Labels]:
    by_length = group_by(rows, "length_target")
    base_rows = [row for row in rows if row["length_target"] in base_lengths]
    continuous = is_continuous(rows)
    tests: dict[int, _Margin] = {}
    labels: Labels = {}
    for length in lengths:
        if base_lengths == [length]:
            tests[length] = _Margin(None, None, None, None, 0, by_definition=True)
            continue
        at_rows = by_length.get((length,), [])
        base, at_length, _ = matched_means(base_rows, at_rows)
        keys = sorted(set(base) & set(at_length))
        if not keys:
            tests[length] = _UNTESTED
            continue
        margins = threshold_margins(
            np.array([at_length[key] for key in keys]), np.array([base[key] for key in keys]), ratio
        )
        # Clustered by the one rule (types.clusters): the case, or the haystack variant it shares.
        held = set(keys)
        clusters = clusters_of(row for row in [*base_rows, *at_rows] if row["instance_id"] in held)
        tests[length], labels[length] = margin_test(
            margins,
            [clusters.of[key] for key in keys],
            clusters.unit == "variant",
            one_sided,
            fail,
            continuous,
        )
        labels[length] = clusters.label(labels[length])
    return tests, labels


def margin_test(
    margins: np.ndarray,
    groups: list[str],
    by_variant: bool,
    one_sided: float,
    fail: float,
    continuous: bool = False,
) -> tuple[_Margin, str]:
    """One length's relative test of ``margins`` whose clusters are ``groups`` (each margin's; the
    haystack variants where ``by_variant``), and its interval's name: the sign-flip test on the
    cluster totals from ``stats.SIGN_FLIP_FROM`` clusters (``stats.SIGN_FLIP_FROM_CONTINUOUS`` on a
    ``continuous`` score), else the adjusted t (on the variants: the cluster t)."""
    count = len(set(groups))
    estimate = float(margins.mean())
    if uses_sign_flip(count, continuous):
        passes, fails = (bool(x) for x in sign_flip_margin_tests(margins, groups, one_sided, fail))
        flip_low, flip_high = sign_flip_margin_bounds(margins, groups, one_sided)
        _, flip_fail = sign_flip_margin_bounds(margins, groups, fail)
        label = SIGN_FLIP_INTERVAL.format(test=method_name(count))
        margin = _Margin(estimate, float(flip_low), float(flip_high), float(flip_fail), len(margins),
                         decided=(passes, fails))  # fmt: skip
        return margin, label
    if by_variant:
        low, high = cluster_margin_bounds(margins, groups, one_sided)
        _, fail_high = cluster_margin_bounds(margins, groups, fail)
    else:
        low, high = margin_bounds(margins, one_sided)
        _, fail_high = margin_bounds(margins, fail)
    return _Margin(estimate, float(low), float(high), float(fail_high), len(margins)), MARGIN_INTERVAL


def _absolute_tests(
    rows: list[Row], lengths: list[int], threshold: float, one_sided: float, fail: float
) -> tuple[dict[int, _Margin], Labels]:
    by_length = group_by(rows, "length_target")
    tests: dict[int, _Margin] = {}
    labels: Labels = {}
    continuous = is_continuous(rows)
    for length in lengths:
        at_rows = by_length.get((length,), [])
        means = instance_means(at_rows)
        if not means:
            tests[length] = _UNTESTED
            continue
        k, n = sum(means.values()), len(means)
        clusters = clusters_of(at_rows)
        if clusters.unit == "variant":
            keys = sorted(means)
            values = np.array([means[key] for key in keys])
            groups = [clusters.of[key] for key in keys]
            low, high = (float(bound) for bound in cluster_score_bounds(values, groups, one_sided))
            fail_high = float(cluster_score_bounds(values, groups, fail)[1])
            labels[length] = clusters.label(CLUSTERED_SCORE_INTERVAL)
        elif continuous:  # Wilson's variance is a 0/1 value's: the cell's adjusted t on the instances
            values = np.array([means[key] for key in sorted(means)])
            low, high = (float(bound) for bound in instance_score_bounds(values, one_sided))
            fail_high = float(instance_score_bounds(values, fail)[1])
            labels[length] = clusters.label(CLUSTERED_SCORE_INTERVAL)
        else:
            low, high = score_bounds(k, n, one_sided)
            fail_high = score_bounds(k, n, fail)[1]
            labels[length] = clusters.label(SCORE_INTERVAL)
        tests[length] = _Margin(
            k / n - threshold, low - threshold, high - threshold, fail_high - threshold, n
        )
    return tests, labels


def _near(tests: dict[int, _Margin], lengths: list[int], point: int | None) -> list[int]:
    """The lengths that decide the point estimate (the one it calls effective and the next, where
    it falls) whose margin's interval at the end's confidence holds the threshold: there the point
    could as well have come out one length apart."""
    deciding = []
    if point is not None:
        deciding.append(point)
        deciding += [length for length in lengths if length > point][:1]
    else:
        deciding += lengths[:1]
    near = []
    for length in deciding:
        test = tests[length]
        if test.by_definition:
            continue
        if test.lower is None or (test.upper is not None and test.lower < 0.0 <= test.upper):
            near.append(length)
    return near


def effective_bracket(
    rows: list[Row],
    lengths: Sequence[int],
    point: int | None,
    *,
    base_lengths: Sequence[int],
    ratio: float | None = None,
    threshold: float | None = None,
    confidence: float = BRACKET_CONFIDENCE,
) -> Bracket:
    """The bracket of one definition: relative when ``ratio`` is given (``base_lengths`` form the
    base), else absolute at ``threshold``; ``point`` is that definition's point estimate, for the
    flag ``point_near_threshold``; ``lengths`` are those with a score."""
    lengths = sorted(lengths)
    one_sided = end_confidence(confidence)
    by_definition = ratio is not None and len(base_lengths) == 1 and base_lengths[0] in lengths
    can_fail = max(1, len(lengths) - int(by_definition))
    fail = 1.0 - (1.0 - one_sided) / can_fail
    if ratio is not None:
        tests, labels = _relative_tests(rows, lengths, list(base_lengths), ratio, one_sided, fail)
        method = RELATIVE_METHOD.format(ratio=ratio, interval=interval_label(labels, MARGIN_INTERVAL))
    else:
        assert threshold is not None
        tests, labels = _absolute_tests(rows, lengths, threshold, one_sided, fail)
        method = ABSOLUTE_METHOD.format(threshold=threshold, interval=interval_label(labels, SCORE_INTERVAL))
    passes = [tests[n].passes() for n in lengths]
    fails = [tests[n].fails() for n in lengths]
    low_index, high_index = (int(end) for end in bracket_indices(np.array(passes), np.array(fails)))
    state = bracket_state(low_index, high_index, len(lengths))
    near = _near(tests, lengths, point) if lengths else []
    return Bracket(
        state=state,
        confidence=confidence,
        low=BracketEnd(
            length=lengths[low_index] if low_index >= 0 else None,
            state="passes" if low_index >= 0 else "below-shortest",
            confidence=one_sided,
        ),
        high=BracketEnd(
            length=lengths[high_index] if high_index < len(lengths) else None,
            state="fails" if high_index < len(lengths) else "beyond-longest",
            confidence=one_sided,
        ),
        method=method,
        tests=[
            tests[length].tested(length, p, f) for length, p, f in zip(lengths, passes, fails, strict=True)
        ],
        point_near_threshold=bool(near),
        near_lengths=near,
    )


Unbounded = Literal["no-data", "no-signal"]
"""A definition with nothing to test (``no-data``) or nothing to lose (``no-signal``)."""


def empty_bracket(state: Unbounded, confidence: float = BRACKET_CONFIDENCE) -> Bracket:
    """The bracket of a definition with nothing to test (``no-data``) or nothing to lose
    (``no-signal``)."""
    one_sided = end_confidence(confidence)
    return Bracket(
        state=state,
        confidence=confidence,
        low=BracketEnd(length=None, state=state, confidence=one_sided),
        high=BracketEnd(length=None, state=state, confidence=one_sided),
        method="",
        tests=[],
        point_near_threshold=False,
        near_lengths=[],
    )


def contradicts(point: int | None, bracket: Bracket | Mapping[str, Any]) -> bool:
    """Whether a bracket says what its point estimate denies: a lower end above the point (or any
    lower end where the point is below the shortest length) or an upper end at or below it. On
    balanced lengths it cannot (a pass's mean margin is at least its lower bound, a fail's at most
    its upper bound, and the point scans those means); lengths holding different (case, position)
    pairs can, and a view then states no bound. ``bracket`` is the typed record or, for views that
    still read the summary's dump, its dict."""
    if isinstance(bracket, Bracket):
        state, low, high = bracket.state, bracket.low.length, bracket.high.length
    else:
        state, low, high = bracket["state"], bracket["low"]["length"], bracket["high"]["length"]
    if state in ("no-data", "no-signal"):
        return False
    if point is None:
        return low is not None
    return (low is not None and low > point) or (high is not None and high <= point)
