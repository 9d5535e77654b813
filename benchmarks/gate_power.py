"""Error rates of the release gate (``rotscope.gate.verdict.judge_slices`` and ``overall_verdict``,
the code ``rotscope gate`` runs) on simulated paired runs with a known truth. Run by hand:

    python benchmarks/gate_power.py [--datasets 1000] [--seed 21] [--slices 1 15] [--instances 16 30]

Each dataset is a baseline and a candidate run over ``slices`` slices (task x length x position)
of ``n`` instances each, one scored item per instance and slice (the default plan: 16 cases, one
trial). An instance's accuracy in a slice is drawn from a Beta with intra-class correlation 0.25
around the slice's true accuracy; baseline and candidate accuracies of an instance are tied by a
Gaussian copula with correlation 0.6 (the same prompt is hard for both models). Two truths:

- identical: candidate = baseline = 0.9 everywhere; the rate of FAIL verdicts must stay at or
  below the plan's alpha (0.05), and PASS shows how often non-inferiority can be shown at all;
- drop: one slice loses twice the margin (0.9 -> 0.8 with the default margin 0.05); power is the
  share of datasets in which that slice FAILs.

Beside the simulated power it prints ``rotscope.stats.power_to_fail``, the normal
approximation ``rotscope plan`` prints, to show how far it can be trusted.
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np
from scipy import stats as scipy_stats

from rotscope.config import GateConfig
from rotscope.gate.pairing import Slice
from rotscope.gate.verdict import judge_slices, overall_verdict
from rotscope.stats import detectable_drop, power_to_fail

ICC = 0.25
RHO = 0.6
BASE = 0.9
INSTANCES = [16, 30, 60, 120, 250]
SLICES = [1, 15]


def _accuracies(p: float, quantiles: np.ndarray) -> np.ndarray:
    size = 1 / ICC - 1
    return np.asarray(scipy_stats.beta.ppf(quantiles, p * size, (1 - p) * size))


def simulate(rng: np.random.Generator, truths: list[tuple[float, float]], n: int) -> list[Slice]:
    """One dataset: a Slice per (baseline, candidate) true accuracy, with per-instance outcomes."""
    slices = []
    for index, (p_base, p_cand) in enumerate(truths):
        z = rng.standard_normal((n, 2))
        z[:, 1] = RHO * z[:, 0] + np.sqrt(1 - RHO**2) * z[:, 1]
        u = scipy_stats.norm.cdf(z)
        base = rng.binomial(1, _accuracies(p_base, u[:, 0])).astype(float)
        cand = rng.binomial(1, _accuracies(p_cand, u[:, 1])).astype(float)
        slices.append(
            Slice(task="sim", length=1000, position=str(index), fields={}, instances=n, pairs=n,
                  baseline_accuracy=float(base.mean()), candidate_accuracy=float(cand.mean()),
                  difference=float((cand - base).mean()), differences=cand - base, candidate_means=cand)
        )  # fmt: skip
    return slices


def rates(
    rng: np.random.Generator, truths: list[tuple[float, float]], n: int, datasets: int, settings: GateConfig
) -> dict[str, float]:
    verdicts = {"PASS": 0, "FAIL": 0, "INCONCLUSIVE": 0}
    dropped_fails = 0
    for number in range(datasets):
        slices = simulate(rng, truths, n)
        judge_slices(slices, settings.model_copy(update={"bootstrap_seed": number}))
        verdict, _ = overall_verdict(slices, {"baseline": 0.0, "candidate": 0.0}, settings)
        verdicts[verdict] += 1
        dropped_fails += slices[0].verdict == "FAIL"
    return {**{k: v / datasets for k, v in verdicts.items()}, "first_slice_fail": dropped_fails / datasets}


def main() -> None:
    # statsmodels' Holm branch calls gc.collect() on every call (0.3 s here); the simulation calls it
    # thousands of times, so it is skipped for this script only (the results do not depend on it).
    gc.collect = lambda generation=2: 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--slices", type=int, nargs="+", default=SLICES)
    parser.add_argument("--instances", type=int, nargs="+", default=INSTANCES)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    settings = GateConfig()
    drop = 2 * settings.margin
    print(f"alpha {settings.alpha}, margin {settings.margin}, resamples {settings.resamples}, "
          f"{args.datasets} datasets per setting; ICC {ICC}, copula rho {RHO}; "
          f"base accuracy {BASE}")  # fmt: skip
    print("slices  n    | identical: FAIL  PASS  INCONCL | drop 2x margin: power (sim)  normal approx | "
          "drop detectable at 80% (approx)")  # fmt: skip
    for m in args.slices:
        for n in args.instances:
            started = time.perf_counter()
            same = rates(rng, [(BASE, BASE)] * m, n, args.datasets, settings)
            dropped = rates(rng, [(BASE, BASE - drop)] + [(BASE, BASE)] * (m - 1), n, args.datasets, settings)
            approx = power_to_fail(drop, n, m, settings.margin, settings.alpha, BASE)
            detectable = detectable_drop(n, m, settings.margin, settings.alpha, BASE)
            shown = "none" if detectable is None else f"{detectable:.3f}"
            identical = f"{same['FAIL']:.3f} {same['PASS']:.3f} {same['INCONCLUSIVE']:.3f}"
            print(f"{m:>6} {n:>4}  |       {identical}  |"
                  f"              {dropped['first_slice_fail']:.3f}          {approx:.3f}  |"
                  f" {shown}   ({time.perf_counter() - started:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
