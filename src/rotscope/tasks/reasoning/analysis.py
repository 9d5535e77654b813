"""The reasoning family's own analysis: the drop of each layout from ``end`` per length and filler
type, and where wrong answers came from. Its layouts share depths (middle, middle_twice and
middle_dup all sit at 0.5), so a depth-pooled position effect would mix them."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

from rotscope.rows import Row, group_by, instance_means, scored
from rotscope.stats.paired import paired_gap
from rotscope.tasks.reasoning.family import FILLER_ANSWER, LAYOUT_COPIES
from rotscope.types.clusters import cluster_of, shares_variants


class LayoutDropEntry(TypedDict):
    """One entry of ``layout_drops`` (read back as ``records.tasks.LayoutDrop``)."""

    length: int
    filler: str
    layout: str
    end_accuracy: float | None
    layout_accuracy: float | None
    drop: float | None
    ci_low: float | None
    ci_high: float | None
    pairs: int
    method: str
    too_few: bool


class InterferenceEntry(TypedDict):
    """One entry of ``interference`` (read back as ``records.tasks.Interference``)."""

    filler: str
    layout: str
    wrong: int
    unparsed: int
    filler_answer: int
    filler_number: int
    other: int
    share_filler: float | None
    share_filler_answer: float | None


def analyse(rows: list[Row]) -> dict[str, Any]:
    """What the summary adds to the reasoning task's entry."""
    return {"reasoning": {"drops": layout_drops(rows), "interference": interference(rows)}}


def _layout_order(layout: str) -> int:
    order = list(LAYOUT_COPIES)
    return order.index(layout) if layout in order else len(order)


def _case_clusters(rows: list[Row]) -> tuple[dict[str, str], int | None]:
    """Each case's cluster by the one rule (``rotscope.types.clusters``: its haystack variant where
    the cases read fewer variants than there are cases, else the case) and, where variants, how
    many."""
    variant_of_case: dict[str, int | None] = {}
    task_of_case: dict[str, str] = {}
    for row in scored(rows):
        variant_of_case.setdefault(row["case_id"], row.get("haystack_variant"))
        task_of_case.setdefault(row["case_id"], str(row.get("task") or ""))
    shared = shares_variants(variant_of_case)
    of = {
        case: cluster_of(task_of_case[case], case, variant, shared=shared)
        for case, variant in variant_of_case.items()
    }
    return of, len(set(of.values())) if shared else None


def layout_drops(rows: list[Row]) -> list[LayoutDropEntry]:
    """Per length and filler, each layout's drop from ``end``: end accuracy minus the layout's, paired
    on the items run in both, with the adjusted t interval of ``paired_gap`` (none under
    ``MIN_PAIRS`` pairs), clustered by the one rule on the haystack variant where the cases share
    fewer variants than there are cases (the method then names them)."""
    drops: list[LayoutDropEntry] = []
    for (length, filler), group in group_by(rows, "length_target", "filler").items():
        clusters, variants = _case_clusters(group)
        by_layout = {
            layout: instance_means(layout_rows, "case_id")
            for (layout,), layout_rows in group_by(group, "position").items()
        }
        end = by_layout.get("end")
        if end is None:
            continue
        for layout in sorted(by_layout, key=_layout_order):
            if layout == "end":
                continue
            # "long minus short": end minus this layout
            gap = paired_gap(by_layout[layout], end, clusters=clusters)
            method = gap.method
            if variants is not None and gap.low is not None:
                method = f"{gap.method}, clustered on {variants} haystack variants"
            shared = sorted(set(end) & set(by_layout[layout]))
            drops.append(
                {
                    "length": length,
                    "filler": filler,
                    "layout": layout,
                    "end_accuracy": sum(end[k] for k in shared) / len(shared) if shared else None,
                    "layout_accuracy": (
                        sum(by_layout[layout][k] for k in shared) / len(shared) if shared else None
                    ),
                    "drop": gap.estimate,
                    "ci_low": gap.low,
                    "ci_high": gap.high,
                    "pairs": gap.pairs,
                    "method": method,
                    "too_few": gap.too_few,
                }
            )
    return drops


def interference(rows: list[Row]) -> list[InterferenceEntry]:
    """Per filler and layout, where the wrong answers came from: the answer of a filler item, another
    number in the filler, neither; ``share_filler`` is over wrong answers that gave a number."""
    shares: list[InterferenceEntry] = []
    groups = group_by(rows, "filler", "position")
    for filler, layout in sorted(groups, key=lambda key: (key[0], _layout_order(key[1]))):
        wrong = [row for row in scored(groups[(filler, layout)]) if row["outcome"] == "incorrect"]
        counts = Counter(row["category"] for row in wrong)
        numbered = len(wrong) - counts["format"]
        matched = counts[FILLER_ANSWER] + counts["filler_number"]
        shares.append(
            {
                "filler": filler,
                "layout": layout,
                "wrong": len(wrong),
                "unparsed": counts["format"],
                "filler_answer": counts[FILLER_ANSWER],
                "filler_number": counts["filler_number"],
                "other": numbered - matched,
                "share_filler": matched / numbered if numbered else None,
                "share_filler_answer": counts[FILLER_ANSWER] / numbered if numbered else None,
            }
        )
    return shares
