"""The gate's verdicts on arrays (``gate.decision.decide`` on the sums: what ``rotscope plan``
simulates) against the gate's own path on rows (``gate.pairing.build_slices`` ->
``gate.judgement.judge_slices`` -> ``gate.judgement.overall_verdict``: what ``rotscope gate`` runs),
dataset by dataset, on many simulated paired runs. ``tests/unit/gate/test_decision.py`` judges a
few datasets per truth the same way; results in ``benchmarks/results/gate_rows.md``.

Shape: 2 lengths x 2 positions (4 slices), 25 cases, one item per case and slice; margin 0.1,
floor 0.6, at least 10 instances; baseline 0.9 everywhere; candidates 0.9 everywhere, 0.5 in one
slice, 0.7 and 0.55 everywhere (so every verdict occurs).

    python benchmarks/gate_rows.py [--datasets 40] [--seed 5]
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from rotscope.config.experiment import GateConfig
from rotscope.gate.decision import FAIL, INCONCLUSIVE, PASS, decide
from rotscope.gate.judgement import judge_slices, overall_verdict, rule_of
from rotscope.gate.pairing import RunData, build_slices
from rotscope.gate.sizing import Design, Truth, simulate

CODES = {"PASS": PASS, "FAIL": FAIL, "INCONCLUSIVE": INCONCLUSIVE}
CANDIDATES = {
    "identical": [0.9] * 4,
    "0.5 in one slice": [0.9, 0.9, 0.9, 0.5],
    "0.7 everywhere": [0.7] * 4,
    "0.55 everywhere": [0.55] * 4,
}
CASES = 25


def _row(key: tuple[Any, ...], case: int, correct: bool) -> dict[str, Any]:
    return {
        "task": "sim", "case_id": f"c{case}", "instance_id": f"c{case}", "length_target": key[1],
        "position": key[2], "depth": 0.5, "trial": 0, "control": 0, "question": "q", "expected": "a",
        "seed": 0, "spans": "[]", "status": "ok", "outcome": "correct" if correct else "incorrect",
    }  # fmt: skip


def _run(keys: list[tuple[Any, ...]], sums: np.ndarray, name: str) -> RunData:
    rows = [
        _row(key, case, bool(sums[case, column])) for column, key in enumerate(keys) for case in range(CASES)
    ]
    meta = {"run_id": name, "config": {"seed": 0, "generation": {"seed": 0}, "gate": {}}}
    return RunData(Path(name), meta, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--datasets", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    keys = [("sim", length, position, ()) for length in (300, 600) for position in ("beginning", "end")]
    design = Design.from_slices({key: {f"c{case}": 1 for case in range(CASES)} for key in keys})
    settings = GateConfig(margin=0.1, floor=0.6, min_instances=10)
    rng = np.random.default_rng(args.seed)
    print(f"{'candidate':<18} {'datasets':>8} {'agree':>6}  verdicts (rows)")
    for name, candidate in CANDIDATES.items():
        base, cand = simulate(rng, design, [0.9] * 4, candidate, args.datasets, Truth())
        fast = decide(base, cand, design.count, rule_of(settings)).verdict
        agree, seen = 0, Counter[str]()
        for number in range(args.datasets):
            slices, _ = build_slices(_run(keys, base[number], "b"), _run(keys, cand[number], "c"))
            verdict, _ = overall_verdict(slices, {}, settings, pooled=judge_slices(slices, settings))
            agree += CODES[verdict] == fast[number]
            seen[verdict] += 1
        shown = ", ".join(f"{verdict} {count}" for verdict, count in sorted(seen.items()))
        print(f"{name:<18} {args.datasets:>8} {agree:>6}  {shown}")


if __name__ == "__main__":
    main()
