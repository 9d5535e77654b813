"""Coverage of the intervals of two effective-length definitions (issue 51): ``longscore`` (the mean
relative drop from the base, delta method) and ``auc-L`` (the normalised area under accuracy by
length), each through the project's own functions (``analysis.definitions.longscore`` and ``auc``)
on rows simulated with a known truth. Run by hand:

    python benchmarks/definitions_coverage.py [--datasets 1000]

Worlds: 4 lengths (1,000 to 8,000), 2 positions per length (two items per instance and length:
clustered), each instance's ability a normal random effect on the logit scale (sd 1.0), the base at
1,000 tokens; a mid-range curve (0.85 falling to 0.45) and one near the ceiling (0.98 falling to
0.90); 16 or 60 instances; and 3 haystack variants the instances share (variant effect sd 0.5), where
the clusters are the variants. The truth is each length's population accuracy (the random effects
integrated out by 400,000 draws), put through the same formulas. Prints each setting's coverage
with its Monte Carlo standard error; the results are written up in
benchmarks/results/definitions_coverage.md.
"""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

import numpy as np

from rotscope.analysis.definitions import area, auc, longscore, within_noise

LENGTHS = (1000, 2000, 4000, 8000)
BASE = (1000,)
CURVES = {
    "mid": (0.85, 0.75, 0.6, 0.45),
    "ceiling": (0.98, 0.96, 0.93, 0.90),
    "flat": (0.85, 0.85, 0.85, 0.85),
}
ITEMS = 2
INSTANCE_SD, VARIANT_SD = 1.0, 0.5


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def truth(curve: tuple[float, ...], variants: int, rng: np.random.Generator) -> dict[int, float]:
    """Each length's population accuracy: the mean of sigmoid(logit p + effects) over many draws."""
    draws = rng.normal(0, INSTANCE_SD, 400_000)
    if variants:
        draws = draws + rng.normal(0, VARIANT_SD, 400_000)
    return {
        length: float(np.mean(1 / (1 + np.exp(-(_logit(p) + draws)))))
        for length, p in zip(LENGTHS, curve, strict=True)
    }


def dataset(
    curve: tuple[float, ...], instances: int, variants: int, rng: np.random.Generator
) -> list[dict[str, Any]]:
    ability = rng.normal(0, INSTANCE_SD, instances)
    variant_of = rng.integers(0, variants, instances) if variants else np.zeros(instances, dtype=int)
    shift = rng.normal(0, VARIANT_SD, variants) if variants else np.zeros(1)
    rows = []
    for number in range(instances):
        for length, p in zip(LENGTHS, curve, strict=True):
            chance = 1 / (1 + math.exp(-(_logit(p) + ability[number] + shift[variant_of[number]])))
            for item in range(ITEMS):
                rows.append({
                    "task": "sim", "instance_id": f"i{number}", "case_id": f"i{number}", "status": "ok",
                    "outcome": "correct" if rng.random() < chance else "incorrect",
                    "length_target": length, "position": f"p{item}", "depth": item / (ITEMS - 1),
                    "trial": 0, "control": 0, "backend": "sim",
                    "haystack_variant": int(variant_of[number]) if variants else None,
                })  # fmt: skip
    return rows


def points_of(rows: list[dict[str, Any]]) -> dict[int, float]:
    """Each length's score as the summary's cells give it: the mean of the instances' means."""
    by: dict[int, dict[str, list[float]]] = {}
    for row in rows:
        by.setdefault(row["length_target"], {}).setdefault(row["instance_id"], []).append(
            float(row["outcome"] == "correct")
        )
    return {length: float(np.mean([np.mean(v) for v in means.values()])) for length, means in by.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=int, default=1000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261206)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.datasets} datasets per setting")
    print(
        "| curve | instances | clusters | longscore coverage | auc coverage | longscore truth | auc truth "
        "| longscore < 0 shown | within-noise below the longest |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for curve_name, curve in CURVES.items():
        for variants in (0, 3):
            true = truth(curve, variants, rng)
            true_longscore = sum(true[length] for length in LENGTHS[1:]) / 3 / true[BASE[0]] - 1
            true_auc = area(true)
            for instances in (16, 60):
                hits = {"longscore": 0, "auc": 0}
                shown_drop = cut_short = 0
                tried = {"longscore": 0, "auc": 0}
                for _ in range(args.datasets):
                    rows = dataset(curve, instances, variants, rng)
                    points = points_of(rows)
                    base = points[BASE[0]]
                    found = longscore(points, rows, list(BASE), base, signal=base > 0)
                    if found.interval is not None:
                        tried["longscore"] += 1
                        hits["longscore"] += found.interval[0] <= true_longscore <= found.interval[1]
                        shown_drop += found.interval[1] < 0
                    noise = within_noise(points, rows, list(BASE), signal=True)
                    cut_short += noise.value is not None and noise.value < LENGTHS[-1]
                    found = auc(points, rows)
                    if found.interval is not None:
                        tried["auc"] += 1
                        hits["auc"] += found.interval[0] <= true_auc <= found.interval[1]
                cells = []
                for name in ("longscore", "auc"):
                    share = hits[name] / max(tried[name], 1)
                    se = math.sqrt(share * (1 - share) / max(tried[name], 1))
                    cells.append(f"{share:.3f} ± {se:.3f} (of {tried[name]})")
                clusters = "3 variants" if variants else f"{instances} instances"
                rates = f"{shown_drop / args.datasets:.3f} | {cut_short / args.datasets:.3f}"
                print(f"| {curve_name} | {instances} | {clusters} | {cells[0]} | {cells[1]} | "
                      f"{true_longscore:+.3f} | {true_auc:.3f} | {rates} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
