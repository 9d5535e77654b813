"""What any effective-length search must spend, on the simulated models of ``search_accuracy.py``.
Run by hand:

    python benchmarks/search_oracle.py [--models 200] [--seed 17] [--resolution 1.25] [--cap 256]

A search decides the bracket [pass, fail] of a log grid of the asked resolution only by showing
that the score at ``pass`` lies above the threshold (0.85 x base) and the score at ``fail`` below
it. The closer either score sits to the threshold, the more instances that takes, whatever the
method. This prints what an oracle needs: one that knows the true curve, the true base score and
which two lengths make the bracket, and runs one fixed-sample one-sided test at each (level
0.025, no correction for peeking or for the other lengths). Its instance count at a length is
``((z_0.975 + z_power) * sd / |score - threshold|)^2``, with ``sd`` the standard deviation of an
instance's mean over the three depths (random effect and Bernoulli noise, integrated over the
random effect with the curve's own quadrature nodes). Printed: the distribution of the larger of
the two counts, and the share of models that need more than ``--cap`` instances at one length
(at 50% and at 80% power). Where that share exceeds 10%, no search can end INCONCLUSIVE in at
most 10% of the runs at that cap.
"""

from __future__ import annotations

import argparse
import math
import random
from statistics import NormalDist

import numpy as np
from search_accuracy import BASE, DEPTHS, HI, LO, model

from rotscope.backends.curve import _NODES, _WEIGHTS, LogisticCurve
from rotscope.search.decisions import log_grid


def instance_sd(curve: LogisticCurve, length: int) -> float:
    """The standard deviation of one instance's mean over ``DEPTHS`` depths at ``length``."""
    chances = 1.0 / (1.0 + np.exp(-(curve.slope * math.log(curve.midpoint / length) + curve.spread * _NODES)))
    mean = float(np.sum(_WEIGHTS * chances))
    between = float(np.sum(_WEIGHTS * chances**2)) - mean**2
    within = float(np.sum(_WEIGHTS * chances * (1 - chances))) / DEPTHS
    return math.sqrt(between + within)


def needed(curve: LogisticCurve, length: int, threshold: float, power: float) -> float:
    distance = abs(curve.score(length) - threshold)
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(power)
    return math.inf if distance == 0 else (z * instance_sd(curve, length) / distance) ** 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--resolution", type=float, default=1.25)
    parser.add_argument("--cap", type=int, default=256)
    parser.add_argument("--slopes", type=float, nargs=2, default=(2.0, 6.0))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    grid = log_grid(LO, HI, args.resolution)
    counts: dict[float, list[float]] = {0.5: [], 0.8: []}
    for index in range(args.models):
        curve, _truth = model(rng, args.seed * 100_000 + index, tuple(args.slopes))
        threshold = 0.85 * curve.score(BASE)
        passing = [length for length in grid if curve.score(length) >= threshold]
        bracket = [grid[0]] if not passing else [passing[-1]]
        later = [length for length in grid if length > bracket[0]]
        bracket += later[:1]
        for power, kept in counts.items():
            kept.append(max(needed(curve, length, threshold, power) for length in bracket))
    print(f"{args.models} models, resolution {args.resolution} ({len(grid)} grid lengths), "
          f"slopes {args.slopes[0]}-{args.slopes[1]}, cap {args.cap}")  # fmt: skip
    for power, kept in counts.items():
        ordered = sorted(kept)
        over = sum(count > args.cap for count in kept) / len(kept)
        quartiles = [ordered[int(q * (len(ordered) - 1))] for q in (0.25, 0.5, 0.75, 0.9)]
        shown = ", ".join(f"{value:,.0f}" for value in quartiles)
        print(f"power {power:.0%}: instances at the harder bracket length, quartiles and 90th pct {shown}; "
              f"over the cap: {over:.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
