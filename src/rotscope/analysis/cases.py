"""Results per case: how a case fares at each layout, with its evidence alone, and which claims
and citations it got wrong. A case that fails even with its evidence alone (no padding) is a
capability failure; one that passes there but fails at some layout is a positional failure."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from rotscope.records.summary import CaseLayout, CaseResult, QuestionLength, WorstLayout
from rotscope.rows import Row, value
from rotscope.scoring.deterministic import HIGH_RISK_CATEGORIES
from rotscope.types import EVIDENCE_ONLY_SUFFIX

PASS_RATE = 0.5
"""A case passes a layout when at least this share of its scored trials there is correct."""


def _accuracy(rows: Iterable[Row]) -> float | None:
    scored = [row for row in rows if row["status"] == "ok"]
    return sum(value(row) for row in scored) / len(scored) if scored else None


def _claim_ids(rows: Iterable[Row], field: str) -> list[str]:
    found: set[str] = set()
    for row in rows:
        report = row.get("claim_report")
        if row["status"] == "ok" and report:
            found.update(json.loads(report)[field])
    return sorted(found)


def _layouts(rows: list[Row]) -> list[CaseLayout]:
    groups: dict[tuple[int, float, str], list[Row]] = {}
    for row in rows:
        label = row["position"] or f"{row['depth']:.2f}"
        if row.get("filler"):
            label = f"{row['filler']}/{label}"
        groups.setdefault((row["length_target"], row["depth"], label), []).append(row)
    return [
        CaseLayout(length=length, position=label, depth=depth, n=len(group), accuracy=_accuracy(group))
        for (length, depth, label), group in sorted(groups.items())
    ]


def _counts(rows: Iterable[Row]) -> tuple[int, int]:
    """(correct, scored): a row's value counts where the run's score is continuous."""
    scored = [row for row in rows if row["status"] == "ok"]
    return round(sum(value(row) for row in scored)), len(scored)


def _lengths(rows: list[Row]) -> list[QuestionLength]:
    by_length: dict[int, list[Row]] = {}
    for row in rows:
        by_length.setdefault(row["length_target"], []).append(row)
    found = []
    for length, group in sorted(by_length.items()):
        correct, scored = _counts(group)
        found.append(QuestionLength(length=length, correct=correct, scored=scored, accuracy=_accuracy(group)))
    return found


def case_results(probes: list[Row], evidence_only: list[Row]) -> list[CaseResult]:
    """One entry per (task, case id) of ``probes``, sorted by task and case id."""
    by_case: dict[tuple[str, str], list[Row]] = {}
    for row in probes:
        by_case.setdefault((row["task"], row["case_id"]), []).append(row)
    alone: dict[tuple[str, str], list[Row]] = {}
    for row in evidence_only:
        alone.setdefault((row["task"], row["case_id"].removesuffix(EVIDENCE_ONLY_SUFFIX)), []).append(row)
    results = []
    for key, rows in sorted(by_case.items()):
        layouts = _layouts(rows)
        scored = [(layout, layout.accuracy) for layout in layouts if layout.accuracy is not None]
        worst = min(scored, key=lambda pair: pair[1], default=None)
        control = alone.get(key, [])
        control_accuracy = _accuracy(control)
        capable = control_accuracy is not None and control_accuracy >= PASS_RATE
        categories = Counter(row["category"] for row in [*rows, *control] if row["status"] == "ok")
        results.append(
            CaseResult(
                task=key[0],
                case_id=key[1],
                slices=json.loads(rows[0].get("slices") or "{}"),
                layouts=layouts,
                worst=None
                if worst is None
                else WorstLayout(length=worst[0].length, position=worst[0].position, accuracy=worst[1]),
                range=max(accuracy for _, accuracy in scored) - worst[1] if worst else None,
                evidence_only=control_accuracy,
                capability_failure=control_accuracy is not None and not capable,
                positional_failure=capable and worst is not None and worst[1] < PASS_RATE,
                forbidden_claims=sum(categories[category] for category in HIGH_RISK_CATEGORIES),
                missing_claims=_claim_ids([*rows, *control], "missing"),
                wrong_citations=_claim_ids([*rows, *control], "wrong_citations"),
                missing_citations=_claim_ids([*rows, *control], "missing_citations"),
                question=rows[0].get("question"),
                correct=_counts(rows)[0],
                scored=_counts(rows)[1],
                accuracy=_accuracy(rows),
                lengths=_lengths(rows),
                categories=dict(sorted((c, n) for c, n in categories.items() if c)),
            )
        )
    return results
