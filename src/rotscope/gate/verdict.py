"""The release gate: a candidate run against a baseline run, paired item by item, judged slice by
slice under a pre-registered analysis (``GateConfig``, frozen by ``rotscope plan``).

Pairing: rows match on (task, case, length, position, trial); both runs must hold the same rows
with the same questions, expected answers, evidence bytes and seeds, otherwise the comparison is
refused. Rows in error (or unfinished) in either run are excluded and counted.

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

Execution order is each run's own: remote APIs run in a seeded interleaving (so provider drift
spreads over cells), local deterministic engines in prefix-sharing order, which cannot change
their replies (``cache_control`` checks exactly that).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from statsmodels.stats.multitest import multipletests

from rotscope._version import __version__
from rotscope.config import GateConfig
from rotscope.errors import BadInput
from rotscope.plan.manifest import SHARED_GROUPS, deviations, manifest_digest
from rotscope.stats import proportion_interval
from rotscope.store import RunStore

Verdict = Literal["PASS", "FAIL", "INCONCLUSIVE"]
EXIT_CODES: dict[Verdict, int] = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
CLAIM_FIELDS = ("missing", "forbidden", "wrong_citations", "missing_citations")
"""Lists in a case-file row's ``claim_report`` (JSON) that the record counts per claim id."""
EVIDENCE_ONLY = "evidence-only"
"""Position of the evidence-only control: its length is the unpadded prompt's, which differs
between subjects, so its rows pair and slice by case alone (length shown as 0)."""
_PAIR_KEY = ("task", "case_id", "length", "position", "trial", "control")
_SAME_PER_ROW = ("question", "expected", "seed", "instance_id")
Row = dict[str, Any]


@dataclass(frozen=True)
class RunData:
    path: Path
    meta: dict[str, Any]
    rows: list[Row]

    @property
    def name(self) -> str:
        return str(self.meta.get("run_id") or self.path.name)


def load_run(path: Path) -> RunData:
    store = RunStore.open_existing(path)
    try:
        return RunData(path, store.meta(), store.rows())
    finally:
        store.close()


def _position(row: Row) -> str:
    """The asked position: its name (or absolute offset), else the depth fraction, prefixed with
    the filler type for families that vary it (one reasoning layout with two fillers is two
    cells). The depth an offset reaches depends on the tokenizer, so named rows never pair on it."""
    position = str(row["position"] or f"{row['depth']:.2f}")
    return f"{row['filler']}/{position}" if row.get("filler") else position


def _length(row: Row) -> int:
    return 0 if row["position"] == EVIDENCE_ONLY else int(row["length_target"])


def _pair_key(row: Row) -> tuple[Any, ...]:
    return (row["task"], row["case_id"], _length(row), _position(row), row["trial"], row["control"])


def _describe_key(key: tuple[Any, ...]) -> str:
    values = dict(zip(_PAIR_KEY, key, strict=True))
    return (
        f"{values['task']} case {values['case_id']} at length {values['length']}, "
        f"position {values['position']}, trial {values['trial']}"
    )


def _evidence_texts(row: Row) -> list[str]:
    return sorted(span.get("text", "") for span in json.loads(row["spans"] or "[]"))


def _slice_fields(row: Row, wanted: list[str] | None) -> dict[str, str]:
    raw = row.get("slices")
    if not raw:
        return {}
    loaded = json.loads(raw) if isinstance(raw, str) else raw
    return {str(key): str(value) for key, value in sorted(loaded.items()) if wanted is None or key in wanted}


def check_pairable(baseline: RunData, candidate: RunData) -> None:
    """Refuse (``BadInput``) runs that do not share cases, layouts and seeds, naming what differs."""
    for name, path in (("seed", ("seed",)), ("generation seed", ("generation", "seed"))):
        values = []
        for run in (baseline, candidate):
            value: Any = run.meta.get("config") or {}
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            values.append(value)
        if values[0] != values[1]:
            raise BadInput(
                f"gate: the runs use different {name}s (baseline {values[0]}, candidate {values[1]})"
            )
    base = {_pair_key(row): row for row in baseline.rows}
    cand = {_pair_key(row): row for row in candidate.rows}
    for key in base:
        if key not in cand:
            raise BadInput(
                f"gate: {_describe_key(key)} is in the baseline {baseline.name} but not the candidate"
            )
    for key in cand:
        if key not in base:
            raise BadInput(
                f"gate: {_describe_key(key)} is in the candidate {candidate.name} but not the baseline"
            )
    for key, left in base.items():
        right = cand[key]
        for column in _SAME_PER_ROW:
            if left[column] != right[column]:
                raise BadInput(
                    f"gate: {_describe_key(key)} differs in {column} "
                    f"(baseline {left[column]!r}, candidate {right[column]!r})"
                )
        if _evidence_texts(left) != _evidence_texts(right):
            raise BadInput(f"gate: {_describe_key(key)} has different evidence text in the two runs")


def check_against_plan(plan: Mapping[str, Any], run: RunData, role: str) -> None:
    """Both runs must share the plan's protocol groups (their subject may differ)."""
    manifest = run.meta.get("manifest")
    if manifest is None:
        raise BadInput(f"gate: the {role} run {run.name} has no manifest (run by an older rotscope)")
    found = deviations(plan, manifest, SHARED_GROUPS)
    if found:
        raise BadInput(f"gate: the {role} run {run.name} deviates from the plan at {found[0].describe()}")


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


@dataclass(eq=False)
class Slice:
    """One slice's paired instances and its judgement."""

    task: str
    length: int
    position: str
    fields: dict[str, str]
    instances: int
    pairs: int
    baseline_accuracy: float | None = None
    candidate_accuracy: float | None = None
    difference: float | None = None
    lower: float | None = None
    upper: float | None = None
    p_noninferior: float | None = None
    p_inferior: float | None = None
    p_noninferior_holm: float | None = None
    p_inferior_holm: float | None = None
    candidate_ci_high: float | None = None
    verdict: Verdict = "INCONCLUSIVE"
    reason: str = ""
    differences: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    bootstrap: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    candidate_means: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def record(self) -> dict[str, Any]:
        skip = {"differences", "bootstrap", "candidate_means"}
        return {key: value for key, value in asdict(self).items() if key not in skip}


def _correct(row: Row) -> float:
    return float(row["outcome"] == "correct")


def build_slices(
    baseline: RunData, candidate: RunData, slice_fields: list[str] | None = None
) -> tuple[list[Slice], dict[str, int]]:
    """Slices of paired instances; rows in error or unfinished in either run are excluded."""
    cand = {_pair_key(row): row for row in candidate.rows}
    groups: dict[tuple[Any, ...], dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    excluded = {"baseline_errors": 0, "candidate_errors": 0, "pairs_excluded": 0}
    for row in baseline.rows:
        other = cand[_pair_key(row)]
        bad = [name for name, r in (("baseline", row), ("candidate", other)) if r["status"] != "ok"]
        for name in bad:
            excluded[f"{name}_errors"] += 1
        if bad:
            excluded["pairs_excluded"] += 1
            continue
        fields = _slice_fields(row, slice_fields)
        key = (row["task"], _length(row), _position(row), tuple(fields.items()))
        groups[key][row["instance_id"]].append((_correct(row), _correct(other)))
    slices = []
    for (task, length, position, fields), instances in sorted(groups.items()):
        base = np.array([np.mean([b for b, _ in pairs]) for pairs in instances.values()])
        cand_means = np.array([np.mean([c for _, c in pairs]) for pairs in instances.values()])
        slices.append(
            Slice(
                task=task,
                length=length,
                position=position,
                fields=dict(fields),
                instances=len(instances),
                pairs=sum(len(pairs) for pairs in instances.values()),
                baseline_accuracy=float(base.mean()),
                candidate_accuracy=float(cand_means.mean()),
                difference=float((cand_means - base).mean()),
                differences=cand_means - base,
                candidate_means=cand_means,
            )
        )
    return slices, excluded


PSEUDO_INSTANCES = np.array([-1.0, 1.0])
"""One instance lost and one gained, added before resampling (after Agresti and Min's adjustment
for matched proportions): a percentile bootstrap of few instances with no discordant pair would
otherwise be a single point and claim non-inferiority from, say, 7 identical answers."""


def bootstrap_means(differences: np.ndarray, resamples: int, seed: Sequence[int]) -> np.ndarray:
    """Means of ``resamples`` cluster resamples (whole instances drawn with replacement) of the
    per-instance differences, with ``PSEUDO_INSTANCES`` added."""
    sample = np.concatenate([differences, PSEUDO_INSTANCES])
    rng = np.random.default_rng(list(seed))
    draws = rng.integers(0, len(sample), size=(resamples, len(sample)))
    means: np.ndarray = sample[draws].mean(axis=1)
    return means


def holm(p_values: Sequence[float], alpha: float) -> list[float]:
    """Holm-adjusted p-values (statsmodels ``method="holm"``, not its Holm-Sidak default)."""
    if not p_values:
        return []
    _, adjusted, _, _ = multipletests(list(p_values), alpha=alpha, method="holm")
    return [float(p) for p in adjusted]


def _step_levels(p_values: Sequence[float], alpha: float) -> list[float]:
    """Holm's per-hypothesis level alpha / (m - rank + 1), rank 1 for the smallest p."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    levels = [0.0] * len(p_values)
    for rank, index in enumerate(order, start=1):
        levels[index] = alpha / (len(p_values) - rank + 1)
    return levels


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
    low_levels = _step_levels(noninferior, settings.alpha)
    high_levels = _step_levels(inferior, settings.alpha)
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


def _error_rate(run: RunData) -> float:
    return sum(row["status"] != "ok" for row in run.rows) / len(run.rows) if run.rows else 0.0


def overall_verdict(
    slices: Sequence[Slice], error_rates: Mapping[str, float], settings: GateConfig
) -> tuple[Verdict, list[str]]:
    """The gate's verdict and the reasons for it."""
    reasons = [
        f"{role} run has {rate:.1%} rows in error or unfinished, "
        f"above the plan's {settings.max_error_rate:.1%}"
        for role, rate in error_rates.items()
        if rate > settings.max_error_rate
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
                scores[row["case_id"]][_position(row)].append(_correct(row))
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
    reports = [json.loads(row["claim_report"]) for row in run.rows if row.get("claim_report")]
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
    worst positions, claim counts, and the digests that bind them."""
    return compare(load_run(baseline_dir), load_run(candidate_dir), plan)


def compare(baseline: RunData, candidate: RunData, plan: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``evaluate`` on runs already loaded."""
    if plan is not None:
        check_against_plan(plan, baseline, "baseline")
        check_against_plan(plan, candidate, "candidate")
    check_pairable(baseline, candidate)
    settings = analysis_settings(baseline, candidate, plan)
    slices, excluded = build_slices(baseline, candidate, settings.slice_fields)
    judge_slices(slices, settings)
    error_rates = {"baseline": _error_rate(baseline), "candidate": _error_rate(candidate)}
    verdict, reasons = overall_verdict(slices, error_rates, settings)
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
        "worst_positions": worst_positions(baseline, candidate),
        "claims": {"baseline": claim_counts(baseline), "candidate": claim_counts(candidate)},
    }
