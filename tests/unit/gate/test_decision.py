"""The gate's tests on arrays (``gate.decision``) against the gate's own path on rows
(``gate.judgement``), Holm's and the floor's building blocks against statsmodels and scipy, and the
pooled tests' clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.multitest import multipletests

from rotscope.config.experiment import GateConfig
from rotscope.gate.decision import FAIL, INCONCLUSIVE, PASS, decide
from rotscope.gate.judgement import judge_slices, matrices, overall_verdict, rule_of
from rotscope.gate.pairing import RunData, build_slices
from rotscope.gate.sizing import Design, Truth, simulate, verdict_rates
from rotscope.plan.slices import cluster_of
from rotscope.stats.accuracy_floor import below_floor_p, floor_upper_bound
from rotscope.stats.multiplicity import holm_array, step_levels_array

CODES = {"PASS": PASS, "FAIL": FAIL, "INCONCLUSIVE": INCONCLUSIVE}
DATASETS = 8
"""Datasets per truth judged both ways (the gate's path on rows costs a tenth of a second each)."""


def _row(task: str, case: str, length: int, position: str, correct: bool, **extra: Any) -> dict[str, Any]:
    return {
        "task": task, "case_id": case, "instance_id": case, "length_target": length, "position": position,
        "depth": 0.5, "trial": 0, "control": 0, "question": "q", "expected": "a", "seed": 0,
        "spans": "[]", "status": "ok", "outcome": "correct" if correct else "incorrect", **extra,
    }  # fmt: skip


def _run(rows: list[dict[str, Any]], name: str, gate: dict[str, Any] | None = None) -> RunData:
    meta = {"run_id": name, "config": {"seed": 0, "generation": {"seed": 0}, "gate": gate or {}}}
    return RunData(Path(name), meta, rows)


def test_holm_on_arrays_is_statsmodels_holm_and_skips_untested_hypotheses() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.1, (50, 6))
    # statsmodels on one row (each of its calls runs a full gc.collect, seconds in a test process
    # holding many objects), Holm's step-down written out on all of them
    assert holm_array(p[:1])[0] == pytest.approx(multipletests(p[0], method="holm")[1])
    expected = np.empty_like(p)
    for number, row in enumerate(p):
        order = np.argsort(row)
        stepped = np.maximum.accumulate((len(row) - np.arange(len(row))) * row[order])
        expected[number, order] = np.minimum(stepped, 1.0)
    assert holm_array(p) == pytest.approx(expected)
    with_gap = np.array([[0.01, np.nan, 0.04]])
    assert holm_array(with_gap)[0, [0, 2]] == pytest.approx([0.02, 0.04])
    assert np.isnan(holm_array(with_gap)[0, 1])
    assert step_levels_array(with_gap, 0.05)[0, [0, 2]] == pytest.approx([0.025, 0.05])


def test_the_floor_test_is_the_exact_binomial_tail_and_its_bound_inverts_it() -> None:
    k, n = np.arange(0, 41, dtype=float), np.full(41, 40.0)
    assert below_floor_p(k, n, 0.8) == pytest.approx(np.minimum(scipy_stats.binom.cdf(k, 40, 0.8), 1.0))
    upper = floor_upper_bound(k[:-1], n[:-1], 0.01)
    assert below_floor_p(k[:-1], n[:-1], 0.0) == pytest.approx(1.0)
    assert np.all(np.diff(upper) > 0)
    for successes, bound in zip(k[:-1], upper, strict=True):
        assert float(below_floor_p(np.array(successes), np.array(40.0), float(bound))) == pytest.approx(0.01)


def test_the_tests_on_arrays_give_the_verdicts_of_the_gate_on_rows() -> None:
    """Simulated datasets, each judged both ways: ``decide`` on the sums (what plan simulates) and
    build_slices -> judge_slices -> overall_verdict on rows (what gate runs). A few datasets per
    truth, every verdict among them; ``benchmarks/gate_rows.py`` judges many more
    (``benchmarks/results/gate_rows.md``)."""
    keys = [("sim", length, position, ()) for length in (300, 600) for position in ("beginning", "end")]
    design = Design.from_slices({key: {f"c{case}": 1 for case in range(25)} for key in keys})
    settings = GateConfig(margin=0.1, floor=0.6, min_instances=10)
    rng = np.random.default_rng(5)
    seen = set()
    for candidate in ([0.9] * 4, [0.9, 0.9, 0.9, 0.5], [0.7] * 4, [0.55] * 4):
        base, cand = simulate(rng, design, [0.9] * 4, candidate, DATASETS, Truth())
        fast = decide(base, cand, design.count, rule_of(settings)).verdict
        for number in range(DATASETS):
            rows = {
                role: [
                    _row("sim", f"c{case}", key[1], key[2], bool(sums[number, case, column]))
                    for column, key in enumerate(keys)
                    for case in range(25)
                ]
                for role, sums in (("baseline", base), ("candidate", cand))
            }
            slices, _ = build_slices(_run(rows["baseline"], "b"), _run(rows["candidate"], "c"))
            verdict, _ = overall_verdict(slices, {}, settings, pooled=judge_slices(slices, settings))
            assert CODES[verdict] == fast[number]
            seen.add(verdict)
    assert seen == {"PASS", "FAIL", "INCONCLUSIVE"}


def test_controls_pool_with_their_case_and_a_multi_item_instance_counts_once() -> None:
    assert cluster_of("niah", "case-3~absent") == cluster_of("niah", "case-3~evidence") == "niah/case-3"
    rows = [
        _row("niah", "case-1", 300, "end", True),
        _row("niah", "case-1~absent", 300, "absent", True, control=1),
        *(_row("niah", "case-2", 300, "end", True, trial=trial) for trial in range(3)),
    ]
    slices, _ = build_slices(_run(rows, "b"), _run(rows, "c"))
    base, _, count, cluster = matrices(slices)
    assert base.shape == (1, 2, 2)  # two cases, two slices
    assert sorted(count.sum(axis=1).tolist()) == [2.0, 3.0]
    assert cluster.tolist() == [0, 1]  # each case its own cluster: no haystack variant recorded


def test_a_drop_spread_over_every_slice_fails_on_the_pooled_test_alone() -> None:
    keys = [("sim", 300, f"p{number}", ()) for number in range(8)]
    design = Design.from_slices({key: {f"c{case}": 1 for case in range(60)} for key in keys})
    rule = rule_of(GateConfig(margin=0.05))
    base, cand = simulate(np.random.default_rng(1), design, [0.9] * 8, [0.8] * 8, 200, Truth())
    decision = decide(base, cand, design.count, rule)
    assert decision.pooled.fails.mean() > 0.5 > decision.slice_fails.any(axis=-1).mean()
    assert (decision.verdict[decision.pooled.fails] == FAIL).all()


def test_an_identical_candidate_exactly_at_the_floor_rarely_fails() -> None:
    keys = [("sim", 300, f"p{number}", ()) for number in range(15)]
    design = Design.from_slices({key: {f"c{case}": 1 for case in range(30)} for key in keys})
    rule = rule_of(GateConfig(margin=0.15, floor=0.85))
    rates = verdict_rates(design, rule, [0.85] * 15, truth=Truth(accuracy=0.85), datasets=1000, seed=2)
    assert rates["FAIL"] <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 1000)
