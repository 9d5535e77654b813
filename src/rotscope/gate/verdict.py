"""The release gate's verdict: a candidate run against a baseline run, paired item by item
(``rotscope.gate.pairing``), judged slice by slice under a pre-registered analysis
(``GateConfig``, frozen by ``rotscope plan``).

Per slice (task, length, position, plus the case file's slice fields when rows carry them) the
paired difference candidate minus baseline of instance-level accuracy gets a cluster bootstrap
distribution (instances resampled, seeded, one pseudo-instance lost and one gained added so that
few instances never give a point interval). Two one-sided bootstrap tests against ``-margin``
(non-inferiority shown; inferiority shown) are Holm-adjusted across the tested slices
(statsmodels ``multipletests(method="holm")``). Bounds are reported at Holm's step level for the
slice, alpha / (m - rank + 1), one-sided.

Verdicts: a slice with fewer paired instances than ``min_instances`` is INCONCLUSIVE, never
pooled. A slice FAILs when inferiority is shown (its upper bound is below -margin) or the
candidate's Wilson upper bound is below the floor. It PASSes when non-inferiority is shown (its
lower bound is above -margin) and the candidate's accuracy meets the floor; anything else
(the interval straddles -margin, or the floor is neither met nor clearly missed) is INCONCLUSIVE.
The gate FAILs when any slice fails, else is INCONCLUSIVE when any slice is, or when either run
has more errors than ``max_error_rate``, else PASSes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rotscope._version import __version__
from rotscope.config import GateConfig
from rotscope.errors import BadInput
from rotscope.gate.layouts import layout_changes
from rotscope.gate.pairing import (
    RunData,
    Slice,
    build_slices,
    check_against_plan,
    check_pairable,
    load_run,
    row_correct,
    row_position,
)
from rotscope.gate.rollback import rollback, settings
from rotscope.plan.manifest import manifest_digest
from rotscope.rows import error_rate
from rotscope.stats import bootstrap_means, holm, plan_power, proportion_interval, step_levels

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]
EXIT_CODES: dict[Verdict, int] = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
CLAIM_FIELDS = ("missing", "forbidden", "wrong_citations", "missing_citations")
"""Lists in a case-file row's ``claim_report`` (JSON) that the record counts per claim id."""


def analysis_settings(baseline: RunData, candidate: RunData, plan: Mapping[str, Any] | None) -> GateConfig:
    """The plan's analysis, else the runs' ``gate`` section (which must then agree)."""
    if plan is not None:
        return GateConfig.model_validate(plan.get("analysis") or {})
    # Validated, so a setting one run left at its default equals the other's explicit default.
    settings = [
        GateConfig.model_validate((run.meta.get("config") or {}).get("gate") or {})
        for run in (baseline, candidate)
    ]
    if settings[0] != settings[1]:
        raise BadInput(
            "gate: the two runs' gate settings differ; freeze one with rotscope plan and pass --plan"
        )
    return settings[1]


def judge_slices(slices: list[Slice], settings: GateConfig) -> None:
    """Bootstrap, Holm-adjust and give each slice its verdict (in place)."""
    tested = [s for s in slices if s.instances >= settings.min_instances]
    resamples = settings.resamples
    if tested and 1 / (resamples + 1) > settings.alpha / len(tested):
        needed = int(np.ceil(len(tested) / settings.alpha))
        raise BadInput(
            f"gate.resamples: {resamples} bootstrap draws cannot reach Holm's first level alpha / "
            f"{len(tested)} slices; use at least {needed}"
        )
    for index, item in enumerate(slices):
        if item.instances < settings.min_instances:
            continue
        item.bootstrap = bootstrap_means(item.differences, resamples, (settings.bootstrap_seed, index))
        item.p_noninferior = (1 + int(np.sum(item.bootstrap <= -settings.margin))) / (resamples + 1)
        item.p_inferior = (1 + int(np.sum(item.bootstrap >= -settings.margin))) / (resamples + 1)
        _, item.candidate_ci_high = proportion_interval(
            float(item.candidate_means.sum()), item.instances, confidence=1 - settings.alpha
        )
    noninferior = [s.p_noninferior or 1.0 for s in tested]
    inferior = [s.p_inferior or 1.0 for s in tested]
    low_levels = step_levels(noninferior, settings.alpha)
    high_levels = step_levels(inferior, settings.alpha)
    adjusted_noninferior = holm(noninferior, settings.alpha)
    adjusted_inferior = holm(inferior, settings.alpha)
    for number, item in enumerate(tested):
        item.lower = float(np.quantile(item.bootstrap, low_levels[number]))
        item.upper = float(np.quantile(item.bootstrap, 1 - high_levels[number]))
        item.p_noninferior_holm = adjusted_noninferior[number]
        item.p_inferior_holm = adjusted_inferior[number]
    for item in slices:
        item.verdict, item.reason = _slice_verdict(item, settings)


def _slice_verdict(item: Slice, settings: GateConfig) -> tuple[Verdict, str]:
    margin = settings.margin
    if item.instances < settings.min_instances:
        return (
            "INCONCLUSIVE",
            f"{item.instances} instances, fewer than the plan's minimum {settings.min_instances}",
        )
    assert item.p_inferior_holm is not None and item.p_noninferior_holm is not None
    assert item.candidate_ci_high is not None and item.candidate_accuracy is not None
    if item.p_inferior_holm <= settings.alpha:
        return "FAIL", f"upper bound {item.upper:+.3f} below -margin {-margin:+.3f}"
    if item.candidate_ci_high < settings.floor:
        return (
            "FAIL",
            f"candidate accuracy upper bound {item.candidate_ci_high:.3f} below the floor {settings.floor}",
        )
    if item.p_noninferior_holm > settings.alpha:
        return (
            "INCONCLUSIVE",
            f"interval [{item.lower:+.3f}, {item.upper:+.3f}] straddles -margin {-margin:+.3f}",
        )
    if item.candidate_accuracy < settings.floor:
        return (
            "INCONCLUSIVE",
            f"candidate accuracy {item.candidate_accuracy:.3f} below the floor {settings.floor}",
        )
    return "PASS", f"lower bound {item.lower:+.3f} above -margin {-margin:+.3f}"


def overall_verdict(
    slices: Sequence[Slice],
    error_rates: Mapping[str, float],
    settings: GateConfig,
    pending: Mapping[str, int] | None = None,
) -> tuple[Verdict, list[str]]:
    """The gate's verdict and the reasons for it. Error rates follow the one rule of
    ``rotscope.rows.error_rate`` (errors among attempted rows); an unfinished run (pending rows)
    is a reason of its own, so it is never judged as if complete."""
    reasons = [
        f"{role} run has {rate:.1%} rows in error, above the plan's {settings.max_error_rate:.1%}"
        for role, rate in error_rates.items()
        if rate > settings.max_error_rate
    ]
    reasons += [
        f"{role} run is unfinished ({count} items pending): finish it with rotscope run --resume"
        for role, count in (pending or {}).items()
        if count
    ]
    if not slices:
        return "INCONCLUSIVE", [*reasons, "no paired rows to compare"]
    failing = [s for s in slices if s.verdict == "FAIL"]
    open_slices = [s for s in slices if s.verdict == "INCONCLUSIVE"]
    if reasons:
        return "INCONCLUSIVE", reasons
    if failing:
        return "FAIL", [f"{_slice_name(s)}: {s.reason}" for s in failing]
    if open_slices:
        return "INCONCLUSIVE", [f"{_slice_name(s)}: {s.reason}" for s in open_slices]
    return "PASS", [f"all {len(slices)} slices non-inferior within margin {settings.margin}"]


def _slice_name(item: Slice) -> str:
    extra = "".join(f", {key}={value}" for key, value in item.fields.items())
    return f"{item.task} @ {item.length} {item.position}{extra}"


def worst_positions(baseline: RunData, candidate: RunData) -> list[dict[str, Any]]:
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
            {
                "case_id": case,
                "worst_position": worst,
                "worst_accuracy": positions[worst],
                "range": max(positions.values()) - min(positions.values()),
                "baseline_range": max(base_positions.values()) - min(base_positions.values())
                if base_positions
                else None,
            }
        )
    return sorted(result, key=lambda entry: (-entry["range"], entry["case_id"]))


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


def binding(run: RunData) -> dict[str, Any]:
    """What identifies a run in a release record: model, tokenizer, template, assembler, cases, plan."""
    manifest = run.meta.get("manifest") or {}
    subject = manifest.get("subject") or {}
    backend = run.meta.get("backend") or {}
    return {
        "run": run.name,
        "path": str(run.path),
        "model": run.meta.get("model"),
        "subject": (run.meta.get("config") or {}).get("subject"),
        "model_digest": subject.get("model_digest", backend.get("model_digest")),
        "tokenizer_digest": subject.get("tokenizer_digest", backend.get("tokenizer_digest")),
        "template_digest": subject.get("template_digest", backend.get("template_digest")),
        "system_prompt_digest": subject.get("system_prompt_digest"),
        "assembler_digest": subject.get("assembler_digest"),
        "cases_digest": (manifest.get("cases") or {}).get("digest"),
        "filler_digest": (run.meta.get("corpus") or {}).get("digest"),
        "manifest_digest": run.meta.get("manifest_digest"),
        "plan_digest": (run.meta.get("plan") or {}).get("digest"),
        "plan_deviations": (run.meta.get("plan") or {}).get("deviations", []),
    }


def evaluate(
    baseline_dir: Path, candidate_dir: Path, plan: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The release record of ``candidate_dir`` against ``baseline_dir``: verdict, exit code, slices,
    worst positions, claim counts, the digests that bind them, which layouts moved under the
    candidate's tokenizer (``layouts``) and, on FAIL, the rollback guidance (``rollback``)."""
    baseline, candidate = load_run(baseline_dir), load_run(candidate_dir)
    record = compare(baseline, candidate, plan)
    record["layouts"] = layout_changes(baseline, candidate)
    record["rollback"] = rollback(
        record, settings(baseline.meta.get("config"), baseline.meta.get("manifest"))
    )
    return record


def compare(baseline: RunData, candidate: RunData, plan: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``evaluate`` on runs already loaded."""
    if plan is not None:
        check_against_plan(plan, baseline, "baseline")
        check_against_plan(plan, candidate, "candidate")
    check_pairable(baseline, candidate)
    settings = analysis_settings(baseline, candidate, plan)
    slices, excluded = build_slices(baseline, candidate, settings.slice_fields)
    judge_slices(slices, settings)
    runs = {"baseline": baseline, "candidate": candidate}
    error_rates = {role: error_rate(run.rows) for role, run in runs.items()}
    pending = {role: sum(row["status"] == "pending" for row in run.rows) for role, run in runs.items()}
    verdict, reasons = overall_verdict(slices, error_rates, settings, pending)
    return {
        "verdict": verdict,
        "exit_code": EXIT_CODES[verdict],
        "reasons": reasons,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "rotscope_version": __version__,
        "plan_digest": manifest_digest(plan) if plan is not None else None,
        "analysis": {
            **settings.model_dump(mode="json"),
            "tested_slices": sum(s.lower is not None for s in slices),
        },
        "baseline": binding(baseline),
        "candidate": binding(candidate),
        "errors": {
            **excluded,
            "baseline_rate": error_rates["baseline"],
            "candidate_rate": error_rates["candidate"],
        },
        "slices": [item.record() for item in slices],
        # What this gate could catch at its counts (a PASS is read against it).
        "power": plan_power(
            min((s.instances for s in slices), default=0), len(slices), settings.margin, settings.alpha
        ),
        "worst_positions": worst_positions(baseline, candidate),
        "claims": {"baseline": claim_counts(baseline), "candidate": claim_counts(candidate)},
    }
