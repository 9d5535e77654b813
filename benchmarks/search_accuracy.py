"""Accuracy and cost of the adaptive effective-length search (``rotscope.search.decisions``, the code
``rotscope run --search`` runs) on simulated models with a known truth. Run by hand:

    python benchmarks/search_accuracy.py [--models 200] [--seed 17] [--cap 512] [--batch 8]
        [--max-calls N] [--resolution 2.0] [--slopes 2 6]

Each model is a ``LogisticCurve`` (the curve ``fake/curve-MIDPOINT`` answers by): slope drawn in
``--slopes`` (per unit of log length), random-effect spread in [0.5, 1.5], midpoint chosen so that
the true effective length (``nolima-0.85`` against the base at 500 tokens) is log-uniform over
1.1K-120K. An instance is measured at three depths per length, each right with the instance's
chance at that length. The search runs over [1000, 128000] at ``--resolution`` and 95% confidence. Printed:

- coverage: the share of deciding runs whose bracket [pass, fail] holds the true effective length
  (a bracket ``(None, lo)`` holds it when it is below ``lo``, ``(hi, None)`` when above ``hi``);
- the share of runs ending INCONCLUSIVE (budget) or undecided (a length at the instance cap);
- calls: the median of the search's calls over those of a fixed log grid of the same resolution
  over the same range with, at every length and the base, the most instances the search spent at
  a length it decided (what a grid needs to decide every length the search decided; this is the
  comparison ``search.json`` records as ``fixed_grid_hindsight``) and, second, the mean number it
  spent at those lengths. ``search.json``'s ``fixed_grid`` is the grid a user would have run, every
  one of the cap's cases at every length: ``benchmarks/search_families.py`` compares with that one.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from functools import partial

from rotscope.backends.curve import LogisticCurve
from rotscope.search.decisions import SearchSettings, Step, Threshold, fixed_grid_calls, log_grid, run_search

LO, HI, BASE, DEPTHS = 1000, 128000, 500, 3


def model(rng: random.Random, seed: int, slopes: tuple[float, float]) -> tuple[LogisticCurve, float]:
    """A curve whose true effective length is log-uniform over 1.1K-120K, and that length."""
    wanted = math.exp(rng.uniform(math.log(1100), math.log(120000)))
    slope, spread = rng.uniform(*slopes), rng.uniform(0.5, 1.5)
    low, high = math.log(wanted) - 10, math.log(wanted) + 10
    for _ in range(60):  # the effective length grows with the midpoint
        middle = (low + high) / 2
        curve = LogisticCurve(math.exp(middle), slope=slope, spread=spread, seed=seed)
        low, high = (middle, high) if curve.effective_length(BASE, 0.85) < wanted else (low, middle)
    curve = LogisticCurve(math.exp(low), slope=slope, spread=spread, seed=seed)
    return curve, curve.effective_length(BASE, 0.85)


def measure(curve: LogisticCurve, step: Step) -> list[float]:
    return [
        sum(curve.correct(f"i{i}", step.length, depth) for depth in range(DEPTHS)) / DEPTHS
        for i in range(step.start, step.start + step.count)
    ]


def contains(bracket: tuple[int | None, int | None], truth: float) -> bool:
    low, high = bracket
    return (low is None or low <= truth) and (high is None or truth < high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--cap", type=int, default=512)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-calls", type=int, default=None)
    parser.add_argument("--resolution", type=float, default=2.0)
    parser.add_argument("--slopes", type=float, nargs=2, default=(2.0, 6.0))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    settings = SearchSettings(
        lengths=tuple(log_grid(LO, HI, args.resolution, 2)),
        resolution=args.resolution,
        base_length=BASE,
        threshold=Threshold.parse("nolima-0.85"),
        batch=args.batch,
        cap=args.cap,
        calls_per_instance=DEPTHS,
        max_calls=args.max_calls,
    )
    coarse = SearchSettings(
        lengths=tuple(log_grid(LO, HI, args.resolution)), resolution=args.resolution, base_length=BASE,
        threshold=settings.threshold, calls_per_instance=DEPTHS,
    )  # fmt: skip
    verdicts: dict[str, int] = {}
    covered = decided = 0
    ratios: list[float] = []
    ratios_max: list[float] = []
    calls: list[int] = []
    started = time.perf_counter()
    for index in range(args.models):
        curve, truth = model(rng, args.seed * 100_000 + index, tuple(args.slopes))
        result = run_search(settings, partial(measure, curve))
        verdicts[result.verdict] = verdicts.get(result.verdict, 0) + 1
        if result.verdict == "decided":
            decided += 1
            covered += contains(result.bracket, truth)
        spent = result.instances_at_decided()
        instances = statistics.mean(spent) if spent else args.cap
        ratios.append(result.calls / fixed_grid_calls(coarse, round(instances)))
        ratios_max.append(result.calls / fixed_grid_calls(coarse, max(spent, default=args.cap)))
        calls.append(result.calls)
    elapsed = time.perf_counter() - started
    print(
        f"{args.models} models, fine grid {len(settings.lengths)} lengths, coarse grid {len(coarse.lengths)}"
    )
    slopes = f"{args.slopes[0]}-{args.slopes[1]}"
    print(f"resolution {args.resolution}, slopes {slopes}, budget {args.max_calls} calls")
    print(f"alpha per length {settings.alpha_per_length:.5f}, cap {args.cap}, batch {args.batch}")
    print("verdicts:", ", ".join(f"{k} {v} ({v / args.models:.1%})" for k, v in sorted(verdicts.items())))
    print(f"coverage among deciding runs: {covered}/{decided} = {covered / max(decided, 1):.1%}")
    ratio, high = statistics.median(ratios_max), sorted(ratios_max)[int(0.9 * len(ratios_max))]
    print(f"calls: median {statistics.median(calls):.0f}; search / fixed grid with the most instances the "
          f"search needed at a decided length: median {ratio:.1%}, 90th pct {high:.1%}")  # fmt: skip
    mean_ratio = statistics.median(ratios)
    print(f"search / fixed grid with the mean instances at decided lengths: median {mean_ratio:.1%}")
    print(f"{elapsed:.1f} s")


if __name__ == "__main__":
    main()
