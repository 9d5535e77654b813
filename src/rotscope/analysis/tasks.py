"""Per-task analysis of a run: effective length by both definitions, calibration at the control
length, degradation as the paired gap to it, and the position effect (or a family's own analysis)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from rotscope.analysis.bracket import effective_bracket, empty_bracket
from rotscope.analysis.cells import length_cell
from rotscope.analysis.clusters import Clusters, clusters_of
from rotscope.analysis.definitions import more_definitions, source_of
from rotscope.analysis.rejections import matched_means, unbalanced_lengths
from rotscope.records.cells import LengthCell
from rotscope.records.effective import Definition, EffectiveLength, TaskData
from rotscope.records.tasks import (
    Calibration,
    Degradation,
    MiddleVsEnds,
    PositionEffect,
    TaskAnalysis,
    TopError,
)
from rotscope.rows import Row, group_by, instance_means, is_continuous, scored
from rotscope.stats.band import SATURATED_POINT, TOO_HARD_POINT, band_verdict, calibration
from rotscope.stats.intervals import mean_interval, proportion_interval
from rotscope.stats.length_scan import BASE_LENGTHS, base_score, choose_base_lengths, scan_effective
from rotscope.stats.multiplicity import benjamini_hochberg
from rotscope.stats.paired import paired_gap
from rotscope.stats.randomisation import method_name, sign_flip_p
from rotscope.tasks import TASKS

NOLIMA_RATIO = 0.85
RULER_THRESHOLD = 0.856
CONSERVATIVE_CONFIDENCE = 0.95
"""One-sided: a length passes conservatively when its one-sided 95% Wilson lower bound (the lower
end of the two-sided 90% interval) clears the threshold."""
NO_SIGNAL_CEILING = 0.5
"""The relative definition needs a base to lose: a base of 0, or one whose 95% upper bound is
below 0.5 (the model is shown to miss most answers already at the base lengths), has no signal."""
SCORE: Final = "instance_accuracy"
"""The per-length score the effective length scans (each length cell's ``instance_accuracy``)."""
CONSERVATIVE = (
    f"one-sided {CONSERVATIVE_CONFIDENCE:.0%} Wilson lower bound of instance_accuracy at each length"
)
PAIRED_METHOD = "adjusted t on paired instance differences"
"""What a gap's interval is (``stats.paired_gap``), named in its ``method``."""
NO_SIGNAL = f"base score 0 or its 95% upper bound below {NO_SIGNAL_CEILING}"
BASE_WILSON = "Wilson on case means"
BASE_CLUSTERED = "adjusted t on case means"
"""What ``base_ci`` is (named with its clusters in ``base_ci_method``): Wilson on the cases, or the
cell's interval (``stats.mean_interval``) where the cases share fewer haystack variants."""
CONSERVATIVE_DEPRECATED = (
    "deprecated: 'conservative' compares each length's lower bound with the base's own point (at the base "
    "it reports the base's noise against itself); read 'bracket' instead; removed in the next version"
)


def _lower_bounds(rows: list[Row]) -> dict[int, float]:
    """Per length, the one-sided lower bound of the instance means' accuracy."""
    lows: dict[int, float] = {}
    for (length,), group in group_by(rows, "length_target").items():
        means = instance_means(group)
        if means:
            confidence = 1 - 2 * (1 - CONSERVATIVE_CONFIDENCE)
            lows[length] = proportion_interval(sum(means.values()), len(means), confidence)[0]
    return lows


def _base_interval(base_rows: list[Row]) -> tuple[list[float], str, dict[str, float]]:
    """The base's 95% interval (each case once over the base lengths), what it is, and the case
    means: Wilson on the cases, or, where they share fewer haystack variants than there are cases,
    the cell's interval clustered on the variant (``stats.mean_interval``); on a continuous score
    (``rows.is_continuous``) the cell's interval on the cases, Wilson's variance being a 0/1 value's."""
    per_case = instance_means(base_rows, "case_id")
    clusters = clusters_of(base_rows, "case_id")
    if clusters.unit == "variant":
        return list(mean_interval(per_case, clusters.of)), clusters.label(BASE_CLUSTERED), per_case
    if is_continuous(base_rows):
        return list(mean_interval(per_case)), clusters.label(BASE_CLUSTERED), per_case
    return (
        list(proportion_interval(sum(per_case.values()), len(per_case))),
        clusters.label(BASE_WILSON),
        per_case,
    )


def _no_data() -> EffectiveLength:
    """The effective length of rows with no score (empty, all errors, all rejected): every key a
    view reads, each saying so."""
    definitions = [
        Definition(definition=definition, value=None, state="no-data", conservative=None,
                   conservative_state="no-data", bracket=empty_bracket("no-data"), point_near_threshold=False)
        for definition in (f"nolima-{NOLIMA_RATIO}", f"absolute-{RULER_THRESHOLD}")
    ]  # fmt: skip
    return EffectiveLength(
        **definitions[0].model_dump(),
        score=SCORE,
        no_signal=NO_SIGNAL,
        base_score=None,
        base_lengths=[],
        base_ci=None,
        base_ci_method=None,
        unbalanced_lengths=[],
        conservative_deprecated=CONSERVATIVE_DEPRECATED,
        definitions=[*map(_sourced, definitions), *more_definitions({}, [], [], 0.0, False)],
    )


def effective_lengths(
    per_length: dict[int, LengthCell], rows: list[Row], base_lengths: Sequence[int] = BASE_LENGTHS
) -> EffectiveLength:
    """Effective length by both definitions on ``instance_accuracy`` (the centre of each length's
    interval), each value with its ``state`` and its ``bracket`` (``analysis.bracket``: the lengths
    it is shown to reach and to fall before); the deprecated ``conservative`` scan of one-sided
    lower bounds is kept beside them for one version. The base interval counts each case once over
    the base lengths; a base without signal (``NO_SIGNAL``) gives the relative definition no value."""
    points = {
        length: cell.instance_accuracy
        for length, cell in per_length.items()
        if cell.instance_accuracy is not None
    }
    lows = {length: low for length, low in _lower_bounds(rows).items() if length in points}
    if not points:
        return _no_data()
    base = base_score(points, base_lengths)
    chosen = choose_base_lengths(list(points), base_lengths)
    base_ci, base_ci_method, per_case = _base_interval(
        [row for row in rows if row["length_target"] in chosen]
    )
    signal = base > 0 and bool(per_case) and base_ci[1] >= NO_SIGNAL_CEILING
    relative, state = scan_effective(points, NOLIMA_RATIO * base) if signal else (None, "no-signal")
    conservative, conservative_state = (
        scan_effective(lows, NOLIMA_RATIO * base) if signal else (None, "no-signal")
    )
    absolute, absolute_state = scan_effective(points, RULER_THRESHOLD)
    absolute_low, absolute_low_state = scan_effective(lows, RULER_THRESHOLD)
    scored_lengths = sorted(points)
    relative_bracket = (
        effective_bracket(rows, scored_lengths, relative, base_lengths=chosen, ratio=NOLIMA_RATIO)
        if signal
        else empty_bracket("no-signal")
    )
    absolute_bracket = effective_bracket(rows, scored_lengths, absolute, base_lengths=chosen,
                                         threshold=RULER_THRESHOLD)  # fmt: skip
    nolima = Definition(
        definition=f"nolima-{NOLIMA_RATIO}",
        value=relative,
        state=state,
        bracket=relative_bracket,
        point_near_threshold=relative_bracket.point_near_threshold,
        conservative=conservative,
        conservative_state=conservative_state,
        conservative_definition=f"{CONSERVATIVE} >= {NOLIMA_RATIO} x base score",
    )
    return EffectiveLength(
        **nolima.model_dump(),
        conservative_deprecated=CONSERVATIVE_DEPRECATED,
        no_signal=NO_SIGNAL,
        score=SCORE,
        base_score=base,
        base_lengths=chosen,
        base_ci=base_ci,
        base_ci_method=base_ci_method,
        # Each length's score is on the (case, position) pairs it holds; these lack some.
        unbalanced_lengths=unbalanced_lengths(rows),
        definitions=[
            _sourced(nolima),
            _sourced(
                Definition(
                    definition=f"absolute-{RULER_THRESHOLD}",
                    value=absolute,
                    state=absolute_state,
                    bracket=absolute_bracket,
                    point_near_threshold=absolute_bracket.point_near_threshold,
                    conservative=absolute_low,
                    conservative_state=absolute_low_state,
                    conservative_definition=f"{CONSERVATIVE} >= {RULER_THRESHOLD}",
                )
            ),
            # The published definitions beyond these two, on the same rows, base and clusters.
            *more_definitions(points, rows, chosen, base, signal),
        ],
    )


def _sourced(definition: Definition) -> Definition:
    """``definition`` with its one-line source (the summary's top-level copy goes without)."""
    return definition.model_copy(update={"source": source_of(definition.definition)})


NO_CURVE = "each case at its own length (replayed recordings, pinned cases): no length curve"
"""Why a task whose instances were each planned at one length only, at different lengths, has no
effective length and no gaps: its lengths are different recordings, not one prompt stretched."""


def has_length_curve(rows: list[Row]) -> bool:
    """Whether the rows form a length curve: some case planned at two or more lengths, or one
    length in all (a single length is a curve of one point). Replayed recordings keep their own
    lengths, so three recordings are three instances at three lengths, not a curve."""
    lengths: dict[str, set[int]] = defaultdict(set)
    for row in rows:
        lengths[row["case_id"]].add(row["length_target"])
    every = set().union(*lengths.values()) if lengths else set()
    return len(every) <= 1 or any(len(held) > 1 for held in lengths.values())


def curve_effective_lengths(
    per_length: dict[int, LengthCell], rows: list[Row], base_lengths: Sequence[int] = BASE_LENGTHS
) -> EffectiveLength:
    """``effective_lengths`` where the rows form a length curve; else its no-data answer with
    ``no_curve`` saying why (``NO_CURVE``)."""
    if has_length_curve(rows):
        return effective_lengths(per_length, rows, base_lengths)
    return effective_lengths({}, rows, base_lengths).model_copy(update={"no_curve": NO_CURVE})


FEWEST_DECIDING_CLUSTERS = 6
"""The fewest clusters whose two-sided sign-flip p-value can reach 0.05 (2 / 2^6 = 0.031): with
fewer (3 shared haystack variants) no depth can be shown to differ, and the position effect says
so (``POSITION_UNDECIDABLE``)."""
POSITION_UNDECIDABLE = (
    "{count} clusters: the smallest two-sided p-value is {smallest:.2f}, so no depth can be shown to differ"
)
SHARED_TEXTS = " (a worse depth may be the shared haystack texts', not the model's)"


def cluster_sign_flip(differences: Mapping[str, float], clusters: Clusters) -> float:
    """The two-sided sign-flip p-value of "no difference" (``stats.sign_flip_p``) on the cluster
    totals of per-case ``differences``, clustered by the one rule (``analysis.clusters``): where
    each case is its cluster and the differences are -1, 0 or +1 this is the exact sign test."""
    totals: dict[str, float] = defaultdict(float)
    sizes: dict[str, float] = defaultdict(float)
    for case, difference in differences.items():
        totals[clusters.of.get(case, case)] += difference
        sizes[clusters.of.get(case, case)] += 1.0
    if not totals:
        return 1.0
    keys = sorted(totals)
    return float(sign_flip_p(np.array([totals[k] for k in keys]), np.array([sizes[k] for k in keys])))


@dataclass
class _LengthEffect:
    """One length's position effect while its tests are adjusted over the lengths."""

    length: int
    worst_depth: float
    best_depth: float
    range: float
    clusters: Clusters
    middle_vs_ends: tuple[float, int] | None = None
    """The mean per-case difference, middle minus ends, and its cases."""
    tested: tuple[float, float, bool] | None = None
    """The sign-flip test's p-value, adjusted and whether it is significant."""
    flagged_depths: list[float] = field(default_factory=list)

    def record(self) -> PositionEffect:
        middle = None
        if self.middle_vs_ends is not None:
            difference, pairs = self.middle_vs_ends
            assert self.tested is not None  # every middle-vs-ends difference is tested
            p_value, p_adjusted, significant = self.tested
            middle = MiddleVsEnds(
                difference=difference,
                pairs=pairs,
                p_value=p_value,
                p_adjusted=p_adjusted,
                significant=significant,
            )
        count = self.clusters.count
        note = None
        if count < FEWEST_DECIDING_CLUSTERS:
            note = POSITION_UNDECIDABLE.format(count=count, smallest=min(1.0, 2.0 / 2**count))
            note += SHARED_TEXTS if self.clusters.unit == "variant" else ""
        return PositionEffect(
            length=self.length,
            worst_depth=self.worst_depth,
            best_depth=self.best_depth,
            range=self.range,
            middle_vs_ends=middle,
            flagged_depths=self.flagged_depths,
            method=self.clusters.label(method_name(count)),
            clusters=count,
            cluster_on=self.clusters.unit,
            note=note,
        )


def position_effect(task_rows: list[Row], depths: list[float]) -> list[PositionEffect]:
    """Per length: worst position, range, middle-vs-ends, cells below the row's best. Each
    comparison is a sign-flip test on cluster totals of the per-case differences, clustered by the
    one rule (``analysis.clusters``: on the haystack variant where the cases share fewer variants
    than there are cases, else on the case), so a "bad middle" of three shared haystack texts is
    not taken for the model's (docs/statistics.md, "Gaps and the position effect";
    ``benchmarks/position_gap_tests.py``). Benjamini-Hochberg runs over the lengths (middle vs ends) and
    over all cell comparisons."""
    ends = {min(depths), max(depths)}
    middle = [d for d in depths if d not in ends]
    results: list[_LengthEffect] = []
    tests: list[tuple[int, float]] = []
    comparisons: list[tuple[int, float, float]] = []
    for (length,), rows in group_by(task_rows, "length_target").items():
        by_depth = {
            depth: instance_means(group, "case_id") for (depth,), group in group_by(rows, "depth").items()
        }
        accuracy = {d: sum(m.values()) / len(m) for d, m in by_depth.items() if m}
        if not accuracy:
            continue
        clusters = clusters_of(rows, "case_id")
        best = max(accuracy, key=lambda d: accuracy[d])
        worst = min(accuracy, key=lambda d: accuracy[d])
        entry = _LengthEffect(length, worst, best, accuracy[best] - accuracy[worst], clusters)
        results.append(entry)
        if middle:
            cases = set.intersection(*(set(by_depth.get(d, {})) for d in depths))
            differences = {
                c: sum(by_depth[d][c] for d in middle) / len(middle)
                - sum(by_depth[d][c] for d in ends) / len(ends)
                for c in sorted(cases)
            }
            if differences:
                tests.append((len(results) - 1, cluster_sign_flip(differences, clusters)))
                entry.middle_vs_ends = (sum(differences.values()) / len(differences), len(cases))
        for depth in accuracy:
            if depth == best:
                continue
            shared = sorted(set(by_depth[best]) & set(by_depth[depth]))
            paired = {c: by_depth[best][c] - by_depth[depth][c] for c in shared}
            comparisons.append((len(results) - 1, depth, cluster_sign_flip(paired, clusters)))
    reject, adjusted = benjamini_hochberg([p for _, p in tests])
    for (index, p_value), significant, p_adjusted in zip(tests, reject, adjusted, strict=True):
        results[index].tested = (p_value, p_adjusted, significant)
    reject, _ = benjamini_hochberg([p for _, _, p in comparisons])
    for (index, depth, _), significant in zip(comparisons, reject, strict=True):
        if significant:
            results[index].flagged_depths.append(depth)
    return [result.record() for result in results]


def task_data(rows: list[Row]) -> TaskData:
    """``scored``, ``all-error``, ``pending`` or ``empty`` (see ``TaskData``) for rows that exist."""
    if scored(rows):
        return "scored"
    if any(row["status"] == "error" for row in rows):
        return "all-error"
    return "pending" if rows else "empty"


def top_error(rows: list[Row]) -> TopError | None:
    """The most common error text of ``rows`` (texts that differ only in their numbers count as
    one: "the backend reports 7 prompt tokens, 160 were sent" at every length), its first example,
    its count and the error rows in all; ``None`` without an error row. Ties go to the text met
    first."""
    errors = [str(row["error"] or "unknown error") for row in rows if row["status"] == "error"]
    if not errors:
        return None
    shapes = [re.sub(r"[0-9]+", "#", error) for error in errors]
    shape, count = Counter(shapes).most_common(1)[0]
    return TopError(message=errors[shapes.index(shape)], count=count, errors=len(errors))


def _no_calibration(length: int) -> Calibration:
    return Calibration(
        length=length,
        accuracy=None,
        instance_accuracy=None,
        ci_low=None,
        ci_high=None,
        band=[TOO_HARD_POINT, SATURATED_POINT],
        verdict=calibration(None),
        band_verdict=band_verdict(None, None),
    )


def empty_task_analysis(task: str, data: TaskData, control_length: int) -> TaskAnalysis:
    """The analysis of a task with no rows (``all-rejected`` or ``empty``): every key a view reads,
    each saying there is nothing; ``control_length`` is the shortest length the task was asked."""
    return TaskAnalysis(
        task=task,
        data=data,
        lengths=[],
        effective_length=_no_data(),
        calibration=_no_calibration(control_length),
        degradation=[],
        position_effect=[],
    )


def task_analysis(task: str, rows: list[Row], base_lengths: Sequence[int] = BASE_LENGTHS) -> TaskAnalysis:
    per_length = {
        length: length_cell(length, group) for (length,), group in group_by(rows, "length_target").items()
    }
    control_length = min(per_length)
    control_cell = per_length[control_length]
    by_length = group_by(rows, "length_target")
    degradation = []
    curve = has_length_curve(rows)
    for length in sorted(per_length):
        if length == control_length or not curve:
            continue
        # Paired on case and position: a (case, position) one length lacks (rejected, failed or
        # pending) is left out at both, so the gap never mixes in a different set of depths.
        # Paired per instance (a prompt: multikey's keys of one prompt are one), clustered on the
        # haystack variant where the instances share fewer variants than there are instances.
        pair = [*by_length[(control_length,)], *by_length[(length,)]]
        short, long, unmatched = matched_means(by_length[(control_length,)], by_length[(length,)])
        clusters = clusters_of(pair)
        gap = paired_gap(short, long, clusters=clusters.of)
        method = gap.method if gap.low is None else clusters.label(PAIRED_METHOD)
        degradation.append(
            Degradation(length=length, gap=gap.estimate, ci_low=gap.low, ci_high=gap.high, pairs=gap.pairs,
                        method=method, too_few=gap.too_few, unmatched=unmatched, clusters=gap.clusters,
                        cluster_on=clusters.unit)
        )  # fmt: skip
    family = TASKS.find(task)
    own_analysis = family.hooks.analyse if family is not None else None
    analysis = TaskAnalysis(
        task=task,
        data=task_data(rows),
        lengths=list(per_length.values()),
        effective_length=curve_effective_lengths(per_length, rows, base_lengths),
        # The verdict is on instance_accuracy, the centre of the interval shown beside it.
        calibration=Calibration(
            length=control_length,
            accuracy=control_cell.accuracy,
            instance_accuracy=control_cell.instance_accuracy,
            ci_low=control_cell.ci_low,
            ci_high=control_cell.ci_high,
            ci_method=control_cell.ci_method,
            band=[TOO_HARD_POINT, SATURATED_POINT],
            verdict=calibration(control_cell.instance_accuracy),
            # What the interval lets one say (the point verdict above picks the lead).
            band_verdict=band_verdict(control_cell.ci_low, control_cell.ci_high),
        ),
        degradation=degradation,
        # A family with its own analysis (reasoning: layouts that share depths) replaces the
        # depth-pooled position effect with it, its keys beside these (an open record).
        position_effect=[] if own_analysis else position_effect(rows, sorted({row["depth"] for row in rows})),
        **(own_analysis(rows) if own_analysis else {}),
    )
    # top_error is absent, not null, for a task without error rows (docs/records.md)
    found = top_error(rows)
    return analysis if found is None else analysis.model_copy(update={"top_error": found})
