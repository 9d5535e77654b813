"""What a release record says of each run: the digests that bind it (``binding``), how often each
claim id was missed or wrongly cited (``claim_counts``), and each case's worst position
(``worst_positions``)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import numpy as np

from rotscope.gate.pairing import (
    RunData,
    row_correct,
    row_position,
)
from rotscope.gate.record import Binding
from rotscope.gate.record_checks import WorstPosition
from rotscope.store import imported_note

CLAIM_FIELDS = ("missing", "forbidden", "wrong_citations", "missing_citations")
"""Lists in a case-file row's ``claim_report`` (JSON) that the record counts per claim id."""


def worst_positions(baseline: RunData, candidate: RunData) -> list[WorstPosition]:
    """Per case (evidence present): the candidate's worst position and its range across positions,
    beside the baseline's range; largest candidate range first."""

    def by_position(run: RunData) -> dict[str, dict[str, float]]:
        scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for row in run.rows:
            if row["status"] == "ok" and not row["control"]:
                scores[row["case_id"]][row_position(row)].append(row_correct(row))
        return {case: {pos: float(np.mean(v)) for pos, v in found.items()} for case, found in scores.items()}

    base, cand = by_position(baseline), by_position(candidate)
    result = []
    for case, positions in cand.items():
        worst = min(positions, key=lambda pos: positions[pos])
        base_positions = base.get(case, {})
        result.append(
            WorstPosition(
                case_id=case,
                worst_position=worst,
                worst_accuracy=positions[worst],
                range=max(positions.values()) - min(positions.values()),
                baseline_range=max(base_positions.values()) - min(base_positions.values())
                if base_positions
                else None,
            )
        )
    return sorted(result, key=lambda entry: (-entry.range, entry.case_id))


def claim_counts(run: RunData) -> dict[str, dict[str, int]]:
    """How often each claim id was missing, forbidden, wrongly cited or uncited, over the rows
    that carry a ``claim_report`` (case-file runs); empty for other families."""
    reports = [json.loads(report) for row in run.rows if (report := row.get("claim_report"))]
    if not reports:
        return {}
    found: dict[str, dict[str, int]] = {}
    for name in CLAIM_FIELDS:
        counts: dict[str, int] = defaultdict(int)
        for report in reports:
            for claim in report.get(name) or []:
                counts[str(claim)] += 1
        found[name] = dict(sorted(counts.items()))
    return found


def binding(run: RunData) -> Binding:
    """What identifies a run in a release record: model, tokenizer, template, assembler, cases, plan
    (read from the run's stored metadata, which is JSON of no fixed shape)."""
    manifest: Mapping[str, Any] = run.meta.get("manifest") or {}  # any version's
    subject = manifest.get("subject") or {}
    backend = run.meta.get("backend") or {}
    # the stored deviations as JSON: Binding validates them
    deviations: list[Any] = (run.meta.get("plan") or {}).get("deviations", [])
    return Binding(
        run=run.name,
        path=str(run.path),
        model=run.meta.get("model"),
        subject=(run.meta.get("config") or {}).get("subject"),
        model_digest=subject.get("model_digest", backend.get("model_digest")),
        tokenizer_digest=subject.get("tokenizer_digest", backend.get("tokenizer_digest")),
        template_digest=subject.get("template_digest", backend.get("template_digest")),
        system_prompt_digest=subject.get("system_prompt_digest"),
        assembler_digest=subject.get("assembler_digest"),
        cases_digest=(manifest.get("cases") or {}).get("digest"),
        filler_digest=(run.meta.get("corpus") or {}).get("digest"),
        manifest_digest=run.meta.get("manifest_digest"),
        plan_digest=(run.meta.get("plan") or {}).get("digest"),
        plan_deviations=deviations,
        imported=imported_note(run.meta),
    )
