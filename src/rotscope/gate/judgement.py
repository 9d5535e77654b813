"""The gate's judgement of paired slices: each slice's verdict from the tests of
``rotscope.gate.decision`` (a FAIL test, the floor, minimum counts), the pooled tests over slices,
and the gate's verdict with the tests that decided it and the reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from rotscope.analysis.clusters import Clusters
from rotscope.config.experiment import GateConfig
from rotscope.gate.decision import Pooled, Rule, decide
from rotscope.gate.pairing import (
    Slice,
)
from rotscope.gate.record import NOT_SHOWN_TO_FAIL, PooledTest, SliceVerdict, Verdict

ExitCode = Literal[0, 1, 3]
CASES_UNIT = "cases"
"""The pooled tests' clusters in words where they are the cases (``unit_of``)."""
EXIT_CODES: dict[Verdict, ExitCode] = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
NO_POOLED = PooledTest(
    clusters=0, difference=None, lower=None, upper=None, p_noninferior=None, p_inferior=None,
    passes=False, fails=False,
)  # fmt: skip
"""The pooled tests over no slices."""


def rule_of(settings: GateConfig) -> Rule:
    return Rule(settings.margin, settings.alpha, settings.floor, settings.min_instances)


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


def matrices(slices: Sequence[Slice]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The slices as ``decide`` reads them: [1, cases, slices] sums of correct items of each run,
    [cases, slices] paired items, and each case's cluster number (``Slice.clusters``)."""
    cases = sorted({case for item in slices for case in item.cases})
    index = {case: number for number, case in enumerate(cases)}
    cluster_of_case: dict[str, str] = {}
    shape = (len(cases), len(slices))
    base, cand, count = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for column, item in enumerate(slices):
        rows = np.array([index[case] for case in item.cases], dtype=int)
        np.add.at(base[:, column], rows, item.baseline_sums)
        np.add.at(cand[:, column], rows, item.candidate_sums)
        np.add.at(count[:, column], rows, item.counts)
        cluster_of_case.update(zip(item.cases, item.clusters, strict=True))
    names = sorted(set(cluster_of_case.values()))
    number = {name: position for position, name in enumerate(names)}
    cluster = np.array([number[cluster_of_case[case]] for case in cases], dtype=int)
    return base[None], cand[None], count, cluster


def judge_slices(slices: list[Slice], settings: GateConfig) -> PooledTest:
    """Run every test, give each slice its verdict (in place) and return the pooled tests."""
    rule = rule_of(settings)
    if not slices:
        return NO_POOLED
    base, cand, count, cluster = matrices(slices)
    decision = decide(base, cand, count, rule, cluster)
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
            item.within_margin = bool(
                np.nan_to_num(decision.p_noninferior_holm[0, number], nan=1.0) <= rule.alpha
            )
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
) -> tuple[SliceVerdict, str]:
    """A slice FAILs on its FAIL test or the floor, is INCONCLUSIVE below its minimum counts or
    below the floor on its point estimate, and is otherwise "not shown to fail" (its upper bound
    not below -margin): never PASS, a word for the gate's pooled non-inferiority alone."""
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
    within = (
        f"loss within the margin shown: lower bound {item.lower:+.3f} above {-margin:+.3f}"
        if item.within_margin
        else "neither shown to fail nor shown within the margin"
    )
    return NOT_SHOWN_TO_FAIL, f"upper bound {item.upper:+.3f} not below {-margin:+.3f}; {within}"


def pooled_test(slices: Sequence[Slice], settings: GateConfig) -> PooledTest:
    """The pooled tests over ``slices``."""
    if not slices:
        return NO_POOLED
    base, cand, count, cluster = matrices(slices)
    return _pooled(decide(base, cand, count, rule_of(settings), cluster).pooled)


def decided(
    slices: Sequence[Slice],
    error_rates: Mapping[str, float],
    settings: GateConfig,
    pending: Mapping[str, int] | None = None,
    pooled: PooledTest | None = None,
    unit: str = CASES_UNIT,
    progress: Mapping[str, str] | None = None,
) -> tuple[Verdict, list[str], list[str]]:
    """The gate's verdict, the tests that decided it, and the reasons. Error rates follow the one
    rule of ``rotscope.rows.error_rate`` (errors among attempted rows); an unfinished run (pending
    rows) is a reason of its own, so it is never judged as if complete. ``unit`` names the
    clusters the pooled tests counted (``unit_of``); ``progress`` says an unfinished run's items
    done and pending, its folder and the command that goes on, by role (``Progress.line``)."""
    errors = [
        f"{role} run has {rate:.1%} rows in error, above the plan's {settings.max_error_rate:.1%}"
        for role, rate in error_rates.items()
        if rate > settings.max_error_rate
    ]
    unfinished = [
        f"{role} run is unfinished: {line}"
        if (line := (progress or {}).get(role))
        else f"{role} run is unfinished ({count} items pending): finish it with rotscope run --resume"
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
            f"pooled over {len(slices)} slices and {pooled.clusters} {unit}: upper bound "
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
            f"pooled over {len(slices)} slices and {pooled.clusters} {unit}: lower bound {lower} "
            f"not above -margin {-margin:+.3f}"
        )
    if tests:
        return "INCONCLUSIVE", tests, reasons
    return (
        "PASS",
        ["pooled non-inferiority"],
        [
            f"pooled over {len(slices)} slices and {pooled.clusters} {unit}: difference "
            f"{pooled.difference:+.3f}, lower bound {pooled.lower:+.3f} above -margin {-margin:+.3f}; "
            "no slice shown to fail, every slice has its minimum counts and meets the floor"
        ],
    )


def overall_verdict(
    slices: Sequence[Slice],
    error_rates: Mapping[str, float],
    settings: GateConfig,
    pending: Mapping[str, int] | None = None,
    pooled: PooledTest | None = None,
    unit: str = CASES_UNIT,
) -> tuple[Verdict, list[str]]:
    """The gate's verdict and the reasons for it (``decided``, without the tests' names)."""
    verdict, _, reasons = decided(slices, error_rates, settings, pending, pooled, unit)
    return verdict, reasons


def unit_of(clusters: Clusters) -> str:
    """The pooled tests' clusters in words: cases, or haystack variants."""
    return "haystack variants" if clusters.unit == "variant" else CASES_UNIT


def _slice_name(item: Slice) -> str:
    extra = "".join(f", {key}={value}" for key, value in item.fields.items())
    return f"{item.task} @ {item.length} {item.position}{extra}"
