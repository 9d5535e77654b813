"""The published effective-length definitions beyond NoLiMa's and RULER's (``analysis.tasks``), on
the same rows and the same clusters (``analysis.clusters.clusters_of``: the instance, or the haystack
variant the instances share): LongScore's mean relative drop from the base, the normalised area under
the accuracy-by-length curve, and the longest length still within noise of the base
(docs/statistics.md, "Effective-length definitions").

Each is a ``Definition`` record: a length (``value``, with a ``bracket``) or a number (``measure``,
with an ``interval``), its ``state``, a ``note`` of what it stands on and its ``source``."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from rotscope.analysis.bracket import empty_bracket
from rotscope.analysis.clusters import clusters_of
from rotscope.analysis.rejections import matched_means
from rotscope.records.effective import Bracket, BracketEnd, BracketTest, Definition, EffectiveState
from rotscope.rows import Row, group_by, instance_means
from rotscope.stats.intervals import PSEUDO_PAIR_WEIGHT, cluster_t_interval, mean_interval
from rotscope.stats.paired import MIN_PAIRS, paired_gap

CONFIDENCE: Final = 0.95
"""Every interval's confidence (two-sided), and each within-noise test's one-sided confidence."""
LONGSCORE: Final = "longscore"
WITHIN_NOISE: Final = "within-noise"
AUC_PREFIX: Final = "auc-"

SOURCES: Final = {
    "absolute": "RULER (Hsieh et al. 2024): the longest length scoring at least 85.6% (Llama-2-7B at 4K)",
    "nolima": "NoLiMa (Modarressi et al. 2025): the longest length scoring at least 0.85 x the base",
    LONGSCORE: "100-LongBench (Yang et al. 2025): LongScore, the mean of (S_L - base) / base beyond the base",
    "auc": "length leaderboards: area under accuracy-by-length up to L, trapezoid on log2 length / span",
    WITHIN_NOISE: "rotscope: the longest length up to which no length is shown worse than the base",
}
"""One line per definition, keyed by its id up to the first '-' (``source_of``)."""
SHORT_SOURCES: Final = {
    "absolute": "RULER, Hsieh et al. 2024",
    "nolima": "NoLiMa, Modarressi et al. 2025",
    LONGSCORE: "100-LongBench, Yang et al. 2025",
    "auc": "length leaderboards' AUC",
    WITHIN_NOISE: "rotscope's paired gap to the base",
}
"""The source in a few words, for tables (``short_source_of``)."""

LONGSCORE_METHOD: Final = (
    "delta method on the ratio of instance means (beyond / base): adjusted t on the linearised "
    "instance values (one pseudo-pair at the bounds)"
)
AUC_METHOD: Final = "adjusted t on each instance's own area (its paired lengths)"
WITHIN_NOISE_METHOD: Final = (
    "paired gap (length minus base, adjusted t on paired instance differences), one-sided "
    "{confidence:.0%} upper bound below 0 = shown worse; each length on its own, unadjusted: the "
    "definition's rule"
)


def source_of(definition: str) -> str:
    """The one-line source of a definition id (``absolute-0.856``, ``auc-8000``, ``longscore``)."""
    return SOURCES.get(definition, SOURCES.get(definition.split("-")[0], ""))


def short_source_of(definition: str) -> str:
    """The source of a definition id in a few words (a table's column)."""
    return SHORT_SOURCES.get(definition, SHORT_SOURCES.get(definition.split("-")[0], ""))


def _empty(definition: str, state: EffectiveState, note: str | None = None) -> Definition:
    made = Definition(
        definition=definition,
        value=None,
        state=state,
        conservative=None,
        conservative_state=state,
        source=source_of(definition),
    )
    return made if note is None else made.model_copy(update={"note": note})


def _means_at(rows: Sequence[Row], lengths: Sequence[int]) -> dict[int, dict[str, float]]:
    by_length = group_by(rows, "length_target")
    return {length: instance_means(by_length.get((length,), [])) for length in lengths}


def longscore(
    points: Mapping[int, float], rows: Sequence[Row], base_lengths: Sequence[int], base: float, signal: bool
) -> Definition:
    """LongScore: the mean over the lengths beyond the base of ``(S_L - base) / base`` (a drop is
    negative). Its interval is the ratio's, ``mean beyond / mean base - 1`` over the instances that
    hold the base and every length beyond: the delta method's linearised instance values
    ``(m_i - R b_i) / mean b`` (mean 0) through the gap's adjusted t, clustered as the cells are,
    placed around the point."""
    beyond = sorted(length for length in points if length > max(base_lengths))
    note = f"base: mean at {', '.join(map(str, base_lengths))}; beyond: {len(beyond)} lengths"
    if not beyond:
        return _empty(LONGSCORE, "no-data", "no length beyond the base")
    if not signal or base <= 0:
        return _empty(LONGSCORE, "no-signal", note)
    point = sum(points[length] for length in beyond) / len(beyond) / base - 1.0
    made = Definition(
        definition=LONGSCORE,
        value=None,
        state="value",
        conservative=None,
        conservative_state="value",
        measure=point,
        source=source_of(LONGSCORE),
        note=note,
    )
    base_means = instance_means([row for row in rows if row["length_target"] in base_lengths])
    at = _means_at(rows, beyond)
    keys = sorted(set(base_means).intersection(*(set(means) for means in at.values())))
    if len(keys) < MIN_PAIRS:
        return made
    b = np.array([base_means[key] for key in keys])
    m = np.array([sum(at[length][key] for length in beyond) / len(beyond) for key in keys])
    if b.sum() <= 0:
        return made
    ratio, mean_base = m.sum() / b.sum(), b.mean()
    linear = (m - ratio * b) / mean_base
    bound = max(1.0, ratio) / mean_base
    held = set(keys)
    used = [
        row
        for row in rows
        if row["instance_id"] in held
        and (row["length_target"] in base_lengths or row["length_target"] in beyond)
    ]
    clusters = clusters_of(used)
    low, high = cluster_t_interval(
        linear,
        [clusters.of.get(key, key) for key in keys],
        bounds=(-bound, bound),
        confidence=CONFIDENCE,
        weight=PSEUDO_PAIR_WEIGHT,
    )
    return made.model_copy(
        update={
            "interval": [point + float(low), point + float(high)],
            "interval_method": clusters.label(LONGSCORE_METHOD),
        }
    )


def area(curve: Mapping[int, float]) -> float:
    """The normalised area under ``curve`` (score by length): the trapezoid rule on log2 length,
    divided by the span of log2 lengths; a single length's score where there is one."""
    lengths = sorted(curve)
    if len(lengths) == 1:
        return float(curve[lengths[0]])
    xs = [math.log2(length) for length in lengths]
    total = sum(
        (xs[i + 1] - xs[i]) * (curve[lengths[i]] + curve[lengths[i + 1]]) / 2 for i in range(len(lengths) - 1)
    )
    return total / (xs[-1] - xs[0])


def auc(points: Mapping[int, float], rows: Sequence[Row]) -> Definition:
    """``auc-L`` up to the longest tested length L: ``area`` of the per-length scores; its interval is
    the cells' (``stats.mean_interval``: adjusted t, clustered) on each instance's own area over the
    lengths it holds all of."""
    lengths = sorted(points)
    if not lengths:
        return _empty(f"{AUC_PREFIX}longest", "no-data")
    name = f"{AUC_PREFIX}{lengths[-1]}"
    note = f"trapezoid on log2 length from {lengths[0]} to {lengths[-1]}, divided by the span"
    made = Definition(
        definition=name,
        value=None,
        state="value",
        conservative=None,
        conservative_state="value",
        measure=area(points),
        source=source_of(name),
        note=note,
    )
    at = _means_at(rows, lengths)
    keys = sorted(set.intersection(*(set(means) for means in at.values())))
    if not keys:
        return made
    areas = {key: area({length: at[length][key] for length in lengths}) for key in keys}
    held = set(keys)
    clusters = clusters_of(row for row in rows if row["instance_id"] in held)
    low, high = mean_interval(areas, clusters.of, CONFIDENCE)
    return made.model_copy(update={"interval": [low, high], "interval_method": clusters.label(AUC_METHOD)})


def within_noise(
    points: Mapping[int, float], rows: Sequence[Row], base_lengths: Sequence[int], signal: bool
) -> Definition:
    """``within-noise``: the longest length L such that no length up to L is shown worse than the
    base (the paired gap to the base, ``stats.paired_gap`` clustered as the gaps are, has a one-sided
    ``CONFIDENCE`` upper bound below 0); its bracket's upper end is the first length shown worse.
    The base lengths are within noise by definition; fewer than ``stats.MIN_PAIRS`` pairs show
    nothing."""
    lengths = sorted(points)
    base_text = f"base: mean at {', '.join(map(str, base_lengths))}"
    if not lengths:
        return _empty(WITHIN_NOISE, "no-data")
    if not signal:
        made = _empty(WITHIN_NOISE, "no-signal", base_text)
        return made.model_copy(update={"bracket": empty_bracket("no-signal")})
    base_rows = [row for row in rows if row["length_target"] in base_lengths]
    by_length = group_by(rows, "length_target")
    tests: list[BracketTest] = []
    value: int | None = None
    worse: int | None = None
    for length in lengths:
        if length in base_lengths:
            tests.append(
                BracketTest(
                    length=length,
                    passes=True,
                    fails=False,
                    estimate=None,
                    lower=None,
                    upper=None,
                    fail_upper=None,
                    pairs=0,
                    by_definition=True,
                )
            )
            value = length if worse is None else value
            continue
        at_rows = by_length.get((length,), [])
        base, at_length, _ = matched_means(base_rows, at_rows)
        held = set(base) & set(at_length)
        clusters = clusters_of(row for row in [*base_rows, *at_rows] if row["instance_id"] in held)
        gap = paired_gap(base, at_length, confidence=1 - 2 * (1 - CONFIDENCE), clusters=clusters.of)
        shown_worse = gap.high is not None and gap.high < 0.0
        tests.append(
            BracketTest(
                length=length,
                passes=not shown_worse,
                fails=shown_worse,
                estimate=gap.estimate,
                lower=gap.low,
                upper=gap.high,
                fail_upper=gap.high,
                pairs=gap.pairs,
            )
        )
        if worse is None:
            if shown_worse:
                worse = length
            else:
                value = length
    state: EffectiveState = (
        "below-shortest" if value is None else "at-least-longest" if worse is None else "value"
    )
    one_sided = CONFIDENCE
    bracket = Bracket(
        state="value" if value is not None and worse is not None else state,
        confidence=CONFIDENCE,
        low=BracketEnd(
            length=value, state="passes" if value is not None else "below-shortest", confidence=one_sided
        ),
        high=BracketEnd(
            length=worse, state="fails" if worse is not None else "beyond-longest", confidence=one_sided
        ),
        method=WITHIN_NOISE_METHOD.format(confidence=CONFIDENCE),
        tests=tests,
        point_near_threshold=False,
        near_lengths=[],
    )
    return Definition(
        definition=WITHIN_NOISE,
        value=value,
        state=state,
        bracket=bracket,
        conservative=None,
        conservative_state=state,
        source=source_of(WITHIN_NOISE),
        note=base_text,
    )


def more_definitions(
    points: Mapping[int, float], rows: Sequence[Row], base_lengths: Sequence[int], base: float, signal: bool
) -> list[Definition]:
    """``longscore``, ``auc-L`` and ``within-noise`` of one task's per-length ``points``
    (instance_accuracy) and its ``rows``, against the base NoLiMa's definition uses."""
    return [
        longscore(points, rows, base_lengths, base, signal),
        auc(points, rows),
        within_noise(points, rows, base_lengths, signal),
    ]
