"""The release gate's verdict: a candidate run against a baseline run, paired item by item
(``rotscope.gate.pairing``), judged under a pre-registered analysis (``GateConfig``, frozen by
``rotscope plan``) with the tests of ``rotscope.gate.decision``: a pooled non-inferiority test, a
pooled FAIL test, per-slice FAIL tests and an absolute floor (both Holm-adjusted across slices).

The gate FAILs when a FAIL test rejects or a candidate reply states a forbidden claim
(``forbidden``, a verdict line of its own); it is INCONCLUSIVE when either run has more errors than
``max_error_rate`` or is unfinished, when a slice holds fewer than ``min_instances`` instances, or
when non-inferiority is not shown; else it PASSes. The record says which test decided, and per
task the longest length it may still claim (``supported_up_to``).

This module assembles the record (``compare``, ``evaluate``) under the analysis the plan or the
runs set (``analysis_settings``); the slices are judged in ``judgement``, the supported lengths
found in ``supported_lengths``, and what the record says of each run is ``run_record``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rotscope._version import __version__
from rotscope.analysis.clusters import Clusters
from rotscope.analysis.summary import summary_score
from rotscope.config.experiment import GateConfig
from rotscope.errors import BadInput
from rotscope.execution.state.unfinished import Progress
from rotscope.gate.decision import TESTS_VERSION
from rotscope.gate.forbidden import apply as forbidden_verdict
from rotscope.gate.forbidden import forbidden_claims
from rotscope.gate.judgement import EXIT_CODES, decided, judge_slices, rule_of, unit_of
from rotscope.gate.layouts import layout_changes
from rotscope.gate.margin_test import FAIL_METHOD, METHOD
from rotscope.gate.pairing import (
    RunData,
    Slice,
    build_slices,
    check_against_plan,
    check_pairable,
    gate_clusters,
    load_run,
)
from rotscope.gate.record import (
    Errors,
    FloorTest,
    GateAnalysis,
    GateRecord,
    PooledFail,
    PooledNoninferiority,
    PooledTest,
    SliceFail,
    Tests,
)
from rotscope.gate.record_checks import Claims
from rotscope.gate.rollback import rollback
from rotscope.gate.rollback import settings as rollback_settings
from rotscope.gate.run_record import binding, claim_counts, worst_positions
from rotscope.gate.sizing import Design, Truth, gate_power
from rotscope.gate.supported_lengths import supported_up_to, window_reasons
from rotscope.gate.unplaced import set_aside, unplaced_reason
from rotscope.plan.manifest import UNREAD_GATE_SETTINGS, SliceKey, manifest_digest
from rotscope.rows import ScoreName, error_rate, on_score


def analysis_settings(baseline: RunData, candidate: RunData, plan: Mapping[str, Any] | None) -> GateConfig:
    """The plan's analysis, else the runs' ``gate`` section (which must then agree); an imported run
    has none (``rotscope import`` keeps no experiment), so beside a native run the native run's is
    the gate's."""
    if plan is not None:
        return GateConfig.model_validate(plan.get("analysis") or {})
    native = [run for run in (baseline, candidate) if not run.meta.get("imported")] or [baseline, candidate]
    # Validated, so a setting one run left at its default equals the other's explicit default.
    settings = [GateConfig.model_validate((run.meta.get("config") or {}).get("gate") or {}) for run in native]
    settings = settings if len(settings) == 2 else settings * 2
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


LEGACY_INTERVAL = "cluster-bootstrap-percentile"
RECORD_DATASETS = 500
"""Simulated datasets per truth behind a record's power (a plan states it from 2,000)."""


def clustered_on(clusters: Clusters) -> str:
    """What the tests cluster on, in words: "30 cases", "3 haystack variants"."""
    text = f"{clusters.count} {unit_of(clusters)}"
    return text if clusters.note is None else f"{text} ({clusters.note})"


def _tests_record(
    pooled: PooledTest,
    settings: GateConfig,
    plan: Mapping[str, Any] | None,
    clusters: Clusters,
    cluster_note: str | None = None,
) -> Tests:
    """Each test with its alpha, its method and clusters, and, for a plan frozen by an earlier
    rotscope, that it is judged with this version's tests."""
    alpha = settings.alpha
    note: dict[str, str] = {}
    if settings.interval == LEGACY_INTERVAL:
        origin = "the plan" if plan is not None else "the runs' gate settings"
        note["note"] = (
            f"{origin} asked for the per-slice cluster bootstrap of the gate's tests before version "
            f"{TESTS_VERSION}; judged with this version's tests (pooled and per-slice score t, "
            "Holm-adjusted floor)"
        )
    if cluster_note is not None:
        note["cluster_note"] = cluster_note
    # "..., clustered on 3 haystack variants", or "... over cases"
    over = clusters.label(METHOD if clusters.unit == "variant" else f"{METHOD} over cases")
    fail_over = clusters.label(FAIL_METHOD if clusters.unit == "variant" else f"{FAIL_METHOD} over cases")
    per_slice = clusters.label(f"{FAIL_METHOD} per slice, Holm across slices")
    # A note only where there is one: an unset note stays out of the record.
    return Tests(
        version=TESTS_VERSION,
        pooled_noninferiority=PooledNoninferiority(**pooled.model_dump(), alpha=alpha, method=over),
        pooled_fail=PooledFail(alpha=alpha, method=fail_over, fails=pooled.fails),
        slice_fail=SliceFail(alpha=alpha, method=per_slice),
        floor=FloorTest(
            alpha=alpha,
            floor=settings.floor,
            method=clusters.label("exact binomial per slice on cluster means, Holm"),
        ),
        clustered_on=clustered_on(clusters),
        **note,
    )


def slice_design(slices: Sequence[Slice]) -> Design:
    """The shape of the judged slices (their cases), for ``rotscope.gate.sizing``."""
    found: dict[SliceKey, dict[str, int]] = {}
    for item in slices:
        key: SliceKey = (item.task, item.length, item.position, tuple(item.fields.items()))
        counts: dict[str, int] = {}
        for case, count in zip(item.cases, item.counts, strict=True):
            counts[case] = counts.get(case, 0) + int(count)
        found[key] = counts
    return Design.from_slices(found)


def _by_case_note(
    baseline: RunData,
    candidate: RunData,
    settings: GateConfig,
    verdict: str,
    error_rates: Mapping[str, float],
    pending: Mapping[str, int],
    clusters: Clusters,
) -> str | None:
    """Where the tests cluster on shared haystack variants and clustering on cases (the rule before
    version 3 of the tests) gives another verdict, that verdict, said once."""
    if clusters.unit != "variant":
        return None
    by_case = gate_clusters(baseline, candidate, by_case=True)
    slices, _ = build_slices(baseline, candidate, settings.slice_fields, by_case)
    pooled = judge_slices(slices, settings)
    before, _, _ = decided(slices, error_rates, settings, pending, pooled)
    if before == verdict:
        return None
    return (
        f"clustered on the {clusters.count} haystack variants the cases share, the verdict is {verdict}; "
        f"counting each of the {by_case.count} cases as independent (before version {TESTS_VERSION}) "
        f"it would be {before}"
    )


def evaluate(
    baseline_dir: Path, candidate_dir: Path, plan: Mapping[str, Any] | None = None, score: str | None = None
) -> GateRecord:
    """The release record of ``candidate_dir`` against ``baseline_dir``: verdict, exit code, slices,
    worst positions, claim counts, the digests that bind them, which layouts moved under the
    candidate's tokenizer (``layouts``) and, on FAIL, the rollback guidance (``rollback``); on
    ``score`` (``--score``; by default the baseline's, ``analysis.summary.summary_score``), which
    both runs must have."""
    baseline, candidate = load_run(baseline_dir), load_run(candidate_dir)
    chosen = summary_score(baseline.rows, score, f"the baseline {baseline_dir.name}")
    summary_score(candidate.rows, chosen, f"the candidate {candidate_dir.name}")
    return compare(on_score_of(baseline, chosen), on_score_of(candidate, chosen), plan, chosen)


def _progress_line(role: str, run: RunData) -> str:
    """An unfinished run's items and folder, and the command that goes on (``Progress.line``)."""
    done = sum(row["status"] == "ok" for row in run.rows)
    errors = sum(row["status"] == "error" for row in run.rows)
    return Progress(str(run.path), run.path, len(run.rows), done, errors, run.meta).line()


def on_score_of(run: RunData, score: ScoreName) -> RunData:
    """The run with its rows as a statistic on ``score`` reads them (``rows.on_score``)."""
    return run if score == "accuracy" else replace(run, rows=on_score(run.rows, score))


def compare(
    baseline: RunData,
    candidate: RunData,
    plan: Mapping[str, Any] | None = None,
    score: ScoreName = "accuracy",
) -> GateRecord:
    """``evaluate`` on runs already loaded (their rows already on ``score``)."""
    if plan is not None:
        check_against_plan(plan, baseline, "baseline")
        check_against_plan(plan, candidate, "candidate")
    baseline, candidate, unplaced = set_aside(baseline, candidate)
    check_pairable(baseline, candidate)
    settings = analysis_settings(baseline, candidate, plan)
    clusters = gate_clusters(baseline, candidate)
    slices, excluded = build_slices(baseline, candidate, settings.slice_fields, clusters)
    pooled = judge_slices(slices, settings)
    runs = {"baseline": baseline, "candidate": candidate}
    error_rates = {role: error_rate(run.rows) for role, run in runs.items()}
    pending = {role: sum(row["status"] == "pending" for row in run.rows) for role, run in runs.items()}
    progress = {role: _progress_line(role, run) for role, run in runs.items()}
    verdict, tests, reasons = decided(
        slices, error_rates, settings, pending, pooled, unit_of(clusters), progress
    )
    if unplaced is not None:  # a layout that could not be placed has not passed
        reasons = [*reasons, unplaced_reason(unplaced)]
        if verdict == "PASS":
            verdict, tests = "INCONCLUSIVE", [*tests, "unplaced layouts"]
    cluster_note = _by_case_note(baseline, candidate, settings, verdict, error_rates, pending, clusters)
    support = supported_up_to(slices, settings, unplaced)
    reasons += window_reasons(support)
    found = forbidden_claims(candidate)
    verdict, tests, reasons = forbidden_verdict(found, verdict, tests, reasons)
    record = GateRecord(
        score=score,
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        decided_by=tests,
        reasons=reasons,
        tests=_tests_record(pooled, settings, plan, clusters, cluster_note),
        supported_up_to={task: entry.supported_up_to for task, entry in support.items()},
        support=support,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        rotscope_version=__version__,
        plan_digest=manifest_digest(plan) if plan is not None else None,
        analysis=GateAnalysis.model_validate(
            {**settings.model_dump(), "tested_slices": sum(s.upper is not None for s in slices)}
        ),
        baseline=binding(baseline),
        candidate=binding(candidate),
        errors=Errors(
            **excluded,
            baseline_rate=error_rates["baseline"],
            candidate_rate=error_rates["candidate"],
        ),
        slices=[item.record() for item in slices],
        # What this gate could decide at its counts (a PASS is read against it).
        power=gate_power(
            slice_design(slices),
            rule_of(settings),
            truth=Truth(variants=clusters.count if clusters.unit == "variant" else 0),
            datasets=RECORD_DATASETS,
        ),
        worst_positions=worst_positions(baseline, candidate),
        claims=Claims(baseline=claim_counts(baseline), candidate=claim_counts(candidate)),
        forbidden=found,
        layouts=layout_changes(baseline, candidate),
        **({"unplaced": unplaced} if unplaced is not None else {}),  # a key left out when none
        rollback=None,
    )
    # The rollback reads the record as written (its verdict, bindings, slices and window).
    guidance = rollback(
        record.model_dump(), rollback_settings(baseline.meta.get("config"), baseline.meta.get("manifest"))
    )
    return record.model_copy(update={"rollback": guidance})
