"""The release gate's verdict: a candidate run against a baseline run, paired item by item
(``rotscope.gate.pairing``), judged under a pre-registered analysis (``GateConfig``, frozen by
``rotscope plan``) with the tests of ``rotscope.gate.decision``: a pooled non-inferiority test, a
pooled FAIL test, per-slice FAIL tests and an absolute floor (both Holm-adjusted across slices).

The gate FAILs when a FAIL test rejects; it is INCONCLUSIVE when either run has more errors than
``max_error_rate`` or is unfinished, when a slice holds fewer than ``min_instances`` instances, or
when non-inferiority is not shown; else it PASSes. The record says which test decided, and per
task the longest length it may still claim (``supported_up_to``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rotscope._version import __version__
from rotscope.config import GateConfig
from rotscope.errors import BadInput
from rotscope.gate.decision import TESTS_VERSION, Pooled, Rule, decide, pooled_tests
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
from rotscope.gate.rollback import rollback
from rotscope.gate.rollback import settings as rollback_settings
from rotscope.gate.sizing import Design, gate_power
from rotscope.plan.manifest import UNREAD_GATE_SETTINGS, SliceKey, manifest_digest
from rotscope.rows import error_rate

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
    if _current(settings[0]) != _current(settings[1]):
        raise BadInput(
            "gate: the two runs' gate settings differ; freeze one with rotscope plan and pass --plan"
        )
    return settings[1]


def _current(settings: GateConfig) -> GateConfig:
    """``settings`` as today's tests read them: a run made before the adjusted-t tests stored the
    bootstrap's interval and draws, which no test uses now, so an old baseline still pairs with a
    new candidate whose gate settings are otherwise the same (as a plan's are compared:
    ``rotscope.plan.manifest.gate_as_today``)."""
    return settings.model_copy(update=UNREAD_GATE_SETTINGS)


def rule_of(settings: GateConfig) -> Rule:
    return Rule(settings.margin, settings.alpha, settings.floor, settings.min_instances)


@dataclass(frozen=True)
class PooledTest:
    """The pooled tests' result over some slices (all of them, or one task's length)."""

    clusters: int
    difference: float | None
    lower: float | None
    upper: float | None
    p_noninferior: float | None
    p_inferior: float | None
    passes: bool
    fails: bool

    def record(self) -> dict[str, Any]:
        return asdict(self)


def _number(value: Any) -> float | None:
    number = float(value)
    return None if np.isnan(number) else number


def _pooled(result: Pooled) -> PooledTest:
    return PooledTest(
        clusters=int(result.clusters[0]),
        difference=_number(result.difference[0]) if result.clusters[0] else None,
        lower=_number(result.lower[0]),
        upper=_number(result.upper[0]),
        p_noninferior=_number(result.p_noninferior[0]),
        p_inferior=_number(result.p_inferior[0]),
        passes=bool(result.passes[0]),
        fails=bool(result.fails[0]),
    )


def matrices(slices: Sequence[Slice]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The slices as ``decide`` reads them: [1, clusters, slices] sums of correct items of each run
    and [clusters, slices] paired items."""
    clusters = sorted({cluster for item in slices for cluster in item.clusters})
    index = {cluster: number for number, cluster in enumerate(clusters)}
    shape = (len(clusters), len(slices))
    base, cand, count = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for column, item in enumerate(slices):
        rows = np.array([index[cluster] for cluster in item.clusters], dtype=int)
        np.add.at(base[:, column], rows, item.baseline_sums)
        np.add.at(cand[:, column], rows, item.candidate_sums)
        np.add.at(count[:, column], rows, item.counts)
    return base[None], cand[None], count


def judge_slices(slices: list[Slice], settings: GateConfig) -> PooledTest:
    """Run every test, give each slice its verdict (in place) and return the pooled tests."""
    rule = rule_of(settings)
    base, cand, count = matrices(slices)
    if not slices:
        return PooledTest(0, None, None, None, None, None, False, False)
    decision = decide(base, cand, count, rule)
    for number, item in enumerate(slices):
        if decision.tested[number]:
            item.lower = _number(decision.lower[0, number])
            item.upper = _number(decision.upper[0, number])
            item.p_noninferior = _number(decision.p_noninferior[0, number])
            item.p_inferior = _number(decision.p_inferior[0, number])
            item.p_noninferior_holm = _number(decision.p_noninferior_holm[0, number])
            item.p_inferior_holm = _number(decision.p_inferior_holm[0, number])
            item.floor_p_holm = _number(decision.floor_p_holm[0, number])
            item.candidate_ci_high = _number(decision.floor_upper[0, number])
        item.verdict, item.reason = _slice_verdict(
            item,
            settings,
            tested=bool(decision.tested[number]),
            fails=bool(decision.slice_fails[0, number]),
            floor_fails=bool(decision.floor_fails[0, number]),
        )
    return _pooled(decision.pooled)


def _slice_verdict(
    item: Slice, settings: GateConfig, *, tested: bool, fails: bool, floor_fails: bool
) -> tuple[Verdict, str]:
    """A slice FAILs on its FAIL test or the floor, is INCONCLUSIVE below its minimum counts or
    below the floor on its point estimate, and otherwise PASSes: no loss beyond the margin shown
    there (a gate's PASS rests on the pooled test)."""
    margin = settings.margin
    if not tested:
        return (
            "INCONCLUSIVE",
            f"{item.instances} instances, fewer than the plan's minimum {settings.min_instances}",
        )
    if fails:
        return "FAIL", f"upper bound {item.upper:+.3f} below -margin {-margin:+.3f} (Holm)"
    if floor_fails:
        return (
            "FAIL",
            f"candidate accuracy upper bound {item.candidate_ci_high:.3f} below the floor {settings.floor} "
            "(Holm)",
        )
    assert item.candidate_accuracy is not None
    if item.candidate_accuracy < settings.floor:
        return (
            "INCONCLUSIVE",
            f"candidate accuracy {item.candidate_accuracy:.3f} below the floor {settings.floor}",
        )
    return "PASS", f"no loss beyond the margin: upper bound {item.upper:+.3f} not below {-margin:+.3f}"


def pooled_test(slices: Sequence[Slice], settings: GateConfig) -> PooledTest:
    """The pooled tests over ``slices``."""
    if not slices:
        return PooledTest(0, None, None, None, None, None, False, False)
    base, cand, count = matrices(slices)
    return _pooled(pooled_tests(base, cand, count, rule_of(settings)))


def decided(
    slices: Sequence[Slice],
    error_rates: Mapping[str, float],
    settings: GateConfig,
    pending: Mapping[str, int] | None = None,
    pooled: PooledTest | None = None,
) -> tuple[Verdict, list[str], list[str]]:
    """The gate's verdict, the tests that decided it, and the reasons. Error rates follow the one
    rule of ``rotscope.rows.error_rate`` (errors among attempted rows); an unfinished run (pending
    rows) is a reason of its own, so it is never judged as if complete."""
    errors = [
        f"{role} run has {rate:.1%} rows in error, above the plan's {settings.max_error_rate:.1%}"
        for role, rate in error_rates.items()
        if rate > settings.max_error_rate
    ]
    unfinished = [
        f"{role} run is unfinished ({count} items pending): finish it with rotscope run --resume"
        for role, count in (pending or {}).items()
        if count
    ]
    if errors or unfinished:
        return (
            "INCONCLUSIVE",
            ["error rate"] * bool(errors) + ["unfinished run"] * bool(unfinished),
            [
                *errors,
                *unfinished,
            ],
        )
    if not slices:
        return "INCONCLUSIVE", ["no data"], ["no paired rows to compare"]
    pooled = pooled or pooled_test(slices, settings)
    margin = settings.margin
    tests: list[str] = []
    reasons: list[str] = []
    if pooled.fails:
        tests.append("pooled FAIL test")
        reasons.append(
            f"pooled over {len(slices)} slices and {pooled.clusters} cases: upper bound "
            f"{pooled.upper:+.3f} below -margin {-margin:+.3f}"
        )
    failing = [s for s in slices if s.verdict == "FAIL"]
    if any(s.reason.startswith("upper bound") for s in failing):
        tests.append("slice FAIL test")
    if any(s.reason.startswith("candidate accuracy") for s in failing):
        tests.append("floor")
    reasons += [f"{_slice_name(s)}: {s.reason}" for s in failing]
    if tests:
        return "FAIL", tests, reasons
    small = [s for s in slices if s.verdict == "INCONCLUSIVE" and "fewer than" in s.reason]
    below = [s for s in slices if s.verdict == "INCONCLUSIVE" and "below the floor" in s.reason]
    if small:
        tests.append("minimum counts")
    if below:
        tests.append("floor (point estimate)")
    reasons += [f"{_slice_name(s)}: {s.reason}" for s in small + below]
    if not pooled.passes:
        tests.append("pooled non-inferiority")
        lower = "-" if pooled.lower is None else f"{pooled.lower:+.3f}"
        reasons.append(
            f"pooled over {len(slices)} slices and {pooled.clusters} cases: lower bound {lower} "
            f"not above -margin {-margin:+.3f}"
        )
    if tests:
        return "INCONCLUSIVE", tests, reasons
    return (
        "PASS",
        ["pooled non-inferiority"],
        [
            f"pooled over {len(slices)} slices and {pooled.clusters} cases: difference "
            f"{pooled.difference:+.3f}, lower bound {pooled.lower:+.3f} above -margin {-margin:+.3f}; "
            "no slice FAILs, every slice has its minimum counts and meets the floor"
        ],
    )


def overall_verdict(
    slices: Sequence[Slice],
    error_rates: Mapping[str, float],
    settings: GateConfig,
    pending: Mapping[str, int] | None = None,
    pooled: PooledTest | None = None,
) -> tuple[Verdict, list[str]]:
    """The gate's verdict and the reasons for it (``decided``, without the tests' names)."""
    verdict, _, reasons = decided(slices, error_rates, settings, pending, pooled)
    return verdict, reasons


def supported_up_to(slices: Sequence[Slice], settings: GateConfig) -> dict[str, dict[str, Any]]:
    """Per task, the longest length L such that at L and every shorter length every slice has its
    minimum counts, no slice FAILs and the pooled non-inferiority test over that length's slices
    passes. Lengths are tested in order from the shortest and the scan stops at the first that
    does not hold (a fixed-sequence procedure: the claim keeps the gate's alpha without
    adjustment). Evidence-only slices (length 0) belong to no length."""
    result: dict[str, dict[str, Any]] = {}
    for task in dict.fromkeys(s.task for s in slices):
        lengths = sorted({s.length for s in slices if s.task == task and s.length > 0})
        supported: int | None = None
        first: dict[str, Any] | None = None
        steps = []
        for length in lengths:
            here = [s for s in slices if s.task == task and s.length == length]
            pooled = pooled_test(here, settings)
            failing = [s for s in here if s.verdict == "FAIL"]
            small = [s for s in here if s.verdict == "INCONCLUSIVE" and "fewer than" in s.reason]
            if failing:
                why = "fails at " + ", ".join(_where(s) for s in failing)
            elif small:
                why = "has too few instances at " + ", ".join(_where(s) for s in small)
            elif not pooled.passes:
                lower = "-" if pooled.lower is None else f"{pooled.lower:+.3f}"
                why = f"is not shown within the margin (pooled lower bound {lower})"
            else:
                why = ""
            steps.append({"length": length, "pooled": pooled.record(), "holds": not why, "why": why})
            if first is None:
                if why:
                    first = {"length": length, "why": why}
                else:
                    supported = length
        if supported is None:
            sentence = "no tested length supported"
        elif first is None:
            sentence = f"supported up to {supported:,} tokens (the longest tested)"
        else:
            sentence = f"supported up to {supported:,} tokens"
        if first is not None:
            sentence += f"; {first['length']:,} {first['why']}"
        result[task] = {
            "supported_up_to": supported,
            "first_unsupported": None if first is None else first["length"],
            "sentence": sentence,
            "lengths": steps,
        }
    return result


def _where(item: Slice) -> str:
    extra = "".join(f" {key}={value}" for key, value in item.fields.items())
    place = item.position if item.position in ("absent",) else f"the {item.position}"
    return f"{place}{extra}"


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


LEGACY_INTERVAL = "cluster-bootstrap-percentile"
RECORD_DATASETS = 500
"""Simulated datasets per truth behind a record's power (a plan states it from 2,000)."""


def _tests_record(pooled: PooledTest, settings: GateConfig, plan: Mapping[str, Any] | None) -> dict[str, Any]:
    """Each test with its alpha and, for a plan frozen by an earlier rotscope, that it is judged
    with this version's tests."""
    alpha = settings.alpha
    record: dict[str, Any] = {
        "version": TESTS_VERSION,
        "pooled_noninferiority": {"alpha": alpha, "method": "adjusted t over cases", **pooled.record()},
        "pooled_fail": {"alpha": alpha, "method": "adjusted t over cases", "fails": pooled.fails},
        "slice_fail": {"alpha": alpha, "method": "adjusted t per slice, Holm across slices"},
        "floor": {"alpha": alpha, "floor": settings.floor, "method": "exact binomial per slice, Holm"},
    }
    if settings.interval == LEGACY_INTERVAL:
        origin = "the plan" if plan is not None else "the runs' gate settings"
        record["note"] = (
            f"{origin} asked for the per-slice cluster bootstrap of the gate's tests before version "
            f"{TESTS_VERSION}; judged with this version's tests (pooled and per-slice adjusted t, "
            "Holm-adjusted floor)"
        )
    return record


def slice_design(slices: Sequence[Slice]) -> Design:
    """The shape of the judged slices, for ``rotscope.gate.sizing``."""
    found: dict[SliceKey, dict[str, int]] = {}
    for item in slices:
        key: SliceKey = (item.task, item.length, item.position, tuple(item.fields.items()))
        counts: dict[str, int] = {}
        for cluster, count in zip(item.clusters, item.counts, strict=True):
            counts[cluster] = counts.get(cluster, 0) + int(count)
        found[key] = counts
    return Design.from_slices(found)


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
        record, rollback_settings(baseline.meta.get("config"), baseline.meta.get("manifest"))
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
    pooled = judge_slices(slices, settings)
    runs = {"baseline": baseline, "candidate": candidate}
    error_rates = {role: error_rate(run.rows) for role, run in runs.items()}
    pending = {role: sum(row["status"] == "pending" for row in run.rows) for role, run in runs.items()}
    verdict, tests, reasons = decided(slices, error_rates, settings, pending, pooled)
    support = supported_up_to(slices, settings)
    return {
        "verdict": verdict,
        "exit_code": EXIT_CODES[verdict],
        "decided_by": tests,
        "reasons": reasons,
        "tests": _tests_record(pooled, settings, plan),
        "supported_up_to": {task: entry["supported_up_to"] for task, entry in support.items()},
        "support": support,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "rotscope_version": __version__,
        "plan_digest": manifest_digest(plan) if plan is not None else None,
        "analysis": {
            **settings.model_dump(mode="json"),
            "tested_slices": sum(s.upper is not None for s in slices),
        },
        "baseline": binding(baseline),
        "candidate": binding(candidate),
        "errors": {
            **excluded,
            "baseline_rate": error_rates["baseline"],
            "candidate_rate": error_rates["candidate"],
        },
        "slices": [item.record() for item in slices],
        # What this gate could decide at its counts (a PASS is read against it).
        "power": gate_power(slice_design(slices), rule_of(settings), datasets=RECORD_DATASETS),
        "worst_positions": worst_positions(baseline, candidate),
        "claims": {"baseline": claim_counts(baseline), "candidate": claim_counts(candidate)},
    }
