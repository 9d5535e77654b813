"""Pairing a candidate run with its baseline: rows matched item by item and grouped into slices.

Pairing: rows match on (task, case, length, position, trial); both runs must hold the same rows
with the same questions, expected answers, evidence bytes and seeds, otherwise the comparison is
refused. Rows in error (or unfinished) in either run are excluded and counted.

Execution order is each run's own: remote APIs run in a seeded interleaving (so provider drift
spreads over cells), local deterministic engines in prefix-sharing order, which cannot change
their replies (``cache_control`` checks exactly that).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rotscope.analysis.clusters import Clusters
from rotscope.errors import BadInput
from rotscope.gate.record import SliceRecord, SliceVerdict
from rotscope.plan.manifest import SHARED_GROUPS, deviations
from rotscope.position import Position
from rotscope.rows import Row, column, value
from rotscope.run_meta import RunMeta
from rotscope.store import RunStore
from rotscope.types.clusters import (
    NO_VARIANT_NOTE,
    ONE_HAYSTACK_NOTE,
    case_cluster,
    shares_variants,
    variant_cluster,
)

EVIDENCE_ONLY = "evidence-only"
"""Position of the evidence-only control: its length is the unpadded prompt's, which differs
between subjects, so its rows pair and slice by case alone (length shown as 0)."""
_PAIR_KEY = ("task", "case_id", "length", "position", "trial", "control")
_SAME_PER_ROW = ("question", "expected", "seed", "instance_id")


@dataclass(frozen=True)
class RunData:
    path: Path
    meta: RunMeta
    rows: list[Row]

    @property
    def name(self) -> str:
        return str(self.meta.get("run_id") or self.path.name)


def load_run(path: Path) -> RunData:
    with RunStore.read(path) as store:
        return RunData(path, store.meta(), store.rows())


def row_position(row: Row) -> str:
    """The asked position: its name (or absolute offset), else the depth fraction, prefixed with
    the filler type for families that vary it (one reasoning layout with two fillers is two
    cells). The depth an offset reaches depends on the tokenizer, so named rows never pair on it."""
    position = Position.from_stored(row["position"], row["depth"]).label
    return f"{row['filler']}/{position}" if row.get("filler") else position


def _length(row: Row) -> int:
    return 0 if row["position"] == EVIDENCE_ONLY else int(row["length_target"])


def _pair_key(row: Row) -> tuple[Any, ...]:
    return (row["task"], row["case_id"], _length(row), row_position(row), row["trial"], row["control"])


def pair_key(row: Row) -> tuple[Any, ...]:
    """What pairs a candidate's row with the baseline's: (task, case, length, position, trial, control)."""
    return _pair_key(row)


def _describe_key(key: tuple[Any, ...]) -> str:
    values = dict(zip(_PAIR_KEY, key, strict=True))
    return (
        f"{values['task']} case {values['case_id']} at length {values['length']}, "
        f"position {values['position']}, trial {values['trial']}"
    )


def _lost(row: Row) -> set[str]:
    """The evidence ids an injected fault removed from the row's prompt (``run --inject``)."""
    return set(json.loads(row.get("evidence_lost") or "[]"))


def _evidence_texts(row: Row, lost: set[str] | None = None) -> list[str]:
    """The texts of the row's evidence spans, less the pieces in ``lost`` (a fault removed them
    from one run's prompt: the case's evidence is the same, the prompt's is not)."""
    return sorted(
        span.get("text", "")
        for span in json.loads(row["spans"] or "[]")
        if span.get("evidence_id") not in (lost or set())
    )


def _slice_fields(row: Row, wanted: list[str] | None) -> dict[str, str]:
    raw = row.get("slices")
    if not raw:
        return {}
    loaded = json.loads(raw) if isinstance(raw, str) else raw
    return {str(key): str(value) for key, value in sorted(loaded.items()) if wanted is None or key in wanted}


def check_pairable(baseline: RunData, candidate: RunData) -> None:
    """Refuse (``BadInput``) runs that do not share cases, layouts and seeds, naming what differs.

    Where one run is imported (``rotscope import``: no prompts, seeds, questions or evidence, its
    rows keyed by the file's questions), the runs pair on what both hold: every (task, case, length,
    position, trial, control) in both and each case in the same instance; the gate's views say which
    run was imported (docs/gates.md)."""
    imported = any(run.meta.get("imported") for run in (baseline, candidate))
    for name, path in () if imported else (("seed", ("seed",)), ("generation seed", ("generation", "seed"))):
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
        for name in ("instance_id",) if imported else _SAME_PER_ROW:
            if column(left, name) != column(right, name):
                raise BadInput(
                    f"gate: {_describe_key(key)} differs in {name} "
                    f"(baseline {column(left, name)!r}, candidate {column(right, name)!r})"
                )
        lost = _lost(left) | _lost(right)
        if not imported and _evidence_texts(left, lost) != _evidence_texts(right, lost):
            raise BadInput(f"gate: {_describe_key(key)} has different evidence text in the two runs")


def check_against_plan(plan: Mapping[str, Any], run: RunData, role: str) -> None:
    """Both runs must share the plan's protocol groups (their subject may differ)."""
    manifest = run.meta.get("manifest")
    if manifest is None:
        raise BadInput(f"gate: the {role} run {run.name} has no manifest (run by an older rotscope)")
    found = deviations(plan, manifest, SHARED_GROUPS)
    if found:
        raise BadInput(f"gate: the {role} run {run.name} deviates from the plan at {found[0].describe()}")


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
    """One-sided p-values of the slice's adjusted t: non-inferiority (shown for information; a
    PASS rests on the pooled test) and inferiority (the slice's FAIL test), and their Holm
    adjustments across the tested slices."""
    p_inferior: float | None = None
    p_noninferior_holm: float | None = None
    p_inferior_holm: float | None = None
    candidate_ci_high: float | None = None
    """The candidate accuracy's upper bound at the floor test's Holm level."""
    floor_p_holm: float | None = None
    verdict: SliceVerdict = "INCONCLUSIVE"
    reason: str = ""
    differences: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    candidate_means: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    clusters: tuple[str, ...] = field(default=(), repr=False)
    """Each instance's cluster (``gate_clusters``: its case, or its haystack variant where the
    cases share them), in the order of ``differences``."""
    cases: tuple[str, ...] = field(default=(), repr=False)
    """Each instance's case (``types.clusters.case_cluster``), in the same order."""
    within_margin: bool | None = None
    """Whether the slice's non-inferiority is shown (Holm): None until judged or untested."""
    baseline_sums: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    candidate_sums: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    """Per instance: correct items of each run and paired items."""

    def record(self) -> SliceRecord:
        """The slice as the release record holds it: its judgement, without the arrays."""
        return SliceRecord(
            task=self.task,
            length=self.length,
            position=self.position,
            fields=self.fields,
            instances=self.instances,
            pairs=self.pairs,
            baseline_accuracy=self.baseline_accuracy,
            candidate_accuracy=self.candidate_accuracy,
            difference=self.difference,
            lower=self.lower,
            upper=self.upper,
            p_noninferior=self.p_noninferior,
            p_inferior=self.p_inferior,
            p_noninferior_holm=self.p_noninferior_holm,
            p_inferior_holm=self.p_inferior_holm,
            candidate_ci_high=self.candidate_ci_high,
            floor_p_holm=self.floor_p_holm,
            verdict=self.verdict,
            reason=self.reason,
            within_margin=self.within_margin,
        )


def row_correct(row: Row) -> float:
    """The row's score: correctness, or the score ``rows.on_score`` chose (``rows.value``)."""
    return value(row)


def _paired_ok(baseline: RunData, candidate: RunData) -> list[Row]:
    """The baseline's rows whose pair is finished without error in both runs."""
    cand = {_pair_key(row): row for row in candidate.rows}
    return [row for row in baseline.rows if row["status"] == "ok" and cand[_pair_key(row)]["status"] == "ok"]


def gate_clusters(baseline: RunData, candidate: RunData, *, by_case: bool = False) -> Clusters:
    """Each paired case's cluster by the one rule of ``rotscope.types.clusters`` over the rows the
    gate reads: its haystack variant where the cases read more than one and fewer variants than
    there are cases, else the case (``by_case``: the case always, the rule before this version). An
    imported run's instance is one cluster across its tasks (``case_cluster(imported=True)``), so a
    pooled verdict counts an instance two tasks share once."""
    variant_of_case: dict[str, int | None] = {}
    cluster_of_case: dict[str, str] = {}
    imported = any(run.meta.get("imported") for run in (baseline, candidate))
    for row in _paired_ok(baseline, candidate):
        case = case_cluster(row["task"], row["instance_id"])
        variant_of_case.setdefault(case, row.get("haystack_variant"))
        cluster_of_case.setdefault(case, case_cluster(row["task"], row["instance_id"], imported=imported))
    if not by_case and shares_variants(variant_of_case):
        of = {
            case: variant_cluster(variant) for case, variant in variant_of_case.items() if variant is not None
        }
        return Clusters(of, "variant", len(set(of.values())))
    of = cluster_of_case
    count = len(set(of.values()))
    variants = set(variant_of_case.values())
    if None in variants and variant_of_case:
        return Clusters(of, "instance", count, NO_VARIANT_NOTE)
    if len(variants) == 1 and len(of) > 1:
        return Clusters(of, "instance", count, ONE_HAYSTACK_NOTE)
    return Clusters(of, "instance", count)


def build_slices(
    baseline: RunData,
    candidate: RunData,
    slice_fields: list[str] | None = None,
    clusters: Clusters | None = None,
) -> tuple[list[Slice], dict[str, int]]:
    """Slices of paired instances; rows in error or unfinished in either run are excluded. Each
    instance's cluster is ``clusters``' (``gate_clusters`` when ``None``)."""
    clusters = clusters or gate_clusters(baseline, candidate)
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
        key = (row["task"], _length(row), row_position(row), tuple(fields.items()))
        groups[key][row["instance_id"]].append((row_correct(row), row_correct(other)))
    slices = []
    for (task, length, position, fields), instances in sorted(groups.items()):
        counts = np.array([len(pairs) for pairs in instances.values()], dtype=float)
        base_sums = np.array([sum(b for b, _ in pairs) for pairs in instances.values()])
        cand_sums = np.array([sum(c for _, c in pairs) for pairs in instances.values()])
        base, cand_means = base_sums / counts, cand_sums / counts
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
                clusters=tuple(clusters.of[case_cluster(task, instance)] for instance in instances),
                cases=tuple(case_cluster(task, instance) for instance in instances),
                baseline_sums=base_sums,
                candidate_sums=cand_sums,
                counts=counts,
            )
        )
    return slices, excluded
