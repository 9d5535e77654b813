"""The static-vs-session comparison: the same probe in static filler and in session filler of equal
token length, paired on cases. A case's mean in each filler is taken over the (length, position)
layouts scored in both; a layout only one filler holds (rejected, failed, pending) is left out of
both sides and counted in ``unmatched``. The gap is session minus static, with the adjusted t
interval of ``stats.paired_gap``, clustered by the one rule (``analysis.clusters``: on the static
side's haystack variant where the cases share fewer variants than there are cases, and the method
says so): below 0 means the session costs accuracy."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rotscope.analysis.clusters import clusters_of
from rotscope.analysis.rejections import Place, _place
from rotscope.filler.session import KIND
from rotscope.records.cells import FillerGap
from rotscope.rows import Row, group_by, instance_means, scored
from rotscope.stats.paired import paired_gap

SESSION = KIND
"""``filler`` of a row on session filler (the session filler source's name)."""


def _layouts(rows: Iterable[Row]) -> dict[tuple[str, int, Place], list[Row]]:
    by_layout: dict[tuple[str, int, Place], list[Row]] = defaultdict(list)
    for row in scored(rows):
        by_layout[(row["case_id"], row["length_target"], _place(row["position"], row["depth"]))].append(row)
    return by_layout


def _mean(means: dict[str, float]) -> float | None:
    return sum(means.values()) / len(means) if means else None


def _compare(task: str, length: int | None, static: list[Row], session: list[Row]) -> FillerGap:
    static_layouts, session_layouts = _layouts(static), _layouts(session)
    matched = sorted(static_layouts.keys() & session_layouts.keys(), key=str)
    static_rows = [row for key in matched for row in static_layouts[key]]
    static_means = instance_means(static_rows, "case_id")
    session_means = instance_means([row for key in matched for row in session_layouts[key]], "case_id")
    # The static side's haystack texts are what the cases share (the session side is its own).
    clusters = clusters_of(static_rows, "case_id")
    gap = paired_gap(static_means, session_means, clusters=clusters.of)
    return FillerGap(
        task=task,
        length=length,
        static_accuracy=_mean(static_means),
        session_accuracy=_mean(session_means),
        gap=gap.estimate,
        ci_low=gap.low,
        ci_high=gap.high,
        pairs=gap.pairs,
        method=gap.method if gap.low is None else clusters.label(gap.method),
        too_few=gap.too_few,
        unmatched=len(static_layouts.keys() ^ session_layouts.keys()),
    )


def filler_gaps(probes: list[Row]) -> list[FillerGap]:
    """Per task, the session-minus-static gap pooled over lengths (``length`` null), then at each
    length; empty unless the run holds probes in both fillers."""
    gaps: list[FillerGap] = []
    for (task,), rows in group_by(probes, "task").items():
        static = [row for row in rows if row["filler"] is None]
        session = [row for row in rows if row["filler"] == SESSION]
        if not static or not session:
            continue
        gaps.append(_compare(task, None, static, session))
        static_by, session_by = group_by(static, "length_target"), group_by(session, "length_target")
        for length in sorted(static_by.keys() & session_by.keys()):
            gaps.append(_compare(task, length[0], static_by[length], session_by[length]))
    return gaps
