"""The canary's sequential test under simulation with a known truth: false ALERTs over 30 days of
hourly checks under no change, and how fast a drop of 0.10 in one length × position bin is ALERTed.
Run by hand (results in ``benchmarks/results/canary_sequential.md``):

    python benchmarks/canary_sequential.py [--reps 1000] [--lengths 3 --positions 3] [--calls 64]

Everything goes through ``rotscope.monitor.sequential``: its ``DropSequence`` (the same update
``sequential_test`` applies per probe), its ``Margins`` and its alpha split (``α / (bins + 1)``).

The simulated baseline (per run, per bin): 60 items in 15 clusters of 4 (the cases: an item's
chance is its cluster's, drawn from a Beta around the bin's accuracy, drawn in [0.90, 0.97], with
concentration 5, so clusters differ a lot), each baseline outcome one draw. A check sends
``calls // bins`` probes to every bin, each a uniformly drawn item of the bin, paired with its
baseline outcome. The endpoint answers as temperature 0 does: the baseline's own outcome, except
with chance ``flip`` (default 0.03) a fresh draw from the item's chance (``--flip 1``: every reply
a fresh draw, the worst case). A drop of 0.10 makes 6 of the bin's 60 items, taken cluster by
cluster from those the baseline answered right, fail for good: the bin's accuracy on its items
falls by exactly 0.10, in clusters.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rotscope.monitor.sequential import Bets, DropSequence, Margins
from rotscope.stats import wilson

ITEMS, CLUSTERS = 60, 15
CHECKS_30_DAYS = 30 * 24
DETECT_WITHIN = 48


@dataclass
class World:
    """``reps`` simulated baselines of ``bins`` bins each."""

    chance: NDArray[np.float64]  # (reps, bins, items)
    baseline: NDArray[np.float64]  # (reps, bins, items)
    failing: NDArray[np.bool_]  # (reps, bins, items): items that fail once the drop is on


def world(rng: np.random.Generator, reps: int, bins: int, drop_bin: int, drop: float) -> World:
    accuracy = rng.uniform(0.90, 0.97, (reps, bins, 1))
    kappa = 5.0
    cluster_chance = rng.beta(accuracy * kappa, (1 - accuracy) * kappa, (reps, bins, CLUSTERS))
    chance = np.repeat(cluster_chance, ITEMS // CLUSTERS, axis=2)
    baseline = (rng.random(chance.shape) < chance).astype(float)
    failing = np.zeros(chance.shape, dtype=bool)
    wanted = round(drop * ITEMS)
    for r in range(reps if wanted else 0):
        order = rng.permutation(CLUSTERS)  # clusters in a random order, items of each together
        items = np.concatenate([np.arange(c * 4, c * 4 + 4) for c in order])
        right = items[baseline[r, drop_bin, items] == 1]
        failing[r, drop_bin, right[:wanted]] = True
    return World(chance, baseline, failing)


def simulate(
    rng: np.random.Generator,
    *,
    reps: int,
    bins: int,
    calls: int,
    checks: int,
    change_at: int | None,
    flip: float,
    margins: Margins,
    bets: Bets,
    drop: float = 0.10,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """First check (0-based) at which each run ALERTs and WARNs (``checks`` when never), and
    whether the drop's bin was among the ALERTed bins at the first ALERT."""
    drop_bin = 0
    w = world(rng, reps, bins, drop_bin, drop if change_at is not None else 0.0)
    alpha = margins.alpha / (bins + 1)
    tested = [margins.warn, margins.fail]
    per_bin = DropSequence((reps, bins), alpha, tested, bets=bets)
    pooled = DropSequence((reps,), alpha, tested, bets=bets)
    alert_at = np.full(reps, checks)
    warn_at = np.full(reps, checks)
    named = np.zeros(reps, dtype=bool)
    rows = np.arange(reps)[:, None]
    columns = np.arange(bins)[None, :]
    for check in range(checks):
        dropped = change_at is not None and check >= change_at
        for _ in range(calls // bins):
            item = rng.integers(0, ITEMS, (reps, bins))
            base = w.baseline[rows, columns, item]
            fresh = (rng.random((reps, bins)) < w.chance[rows, columns, item]).astype(float)
            canary = np.where(rng.random((reps, bins)) < flip, fresh, base)
            if dropped:
                canary = np.where(w.failing[rows, columns, item], 0.0, canary)
            x = (base - canary + 1.0) / 2.0
            per_bin.update(x)
            for b in range(bins):  # the pooled sequence takes the bins' probes one by one
                pooled.update(x[:, b])
        warned = per_bin.crossed(margins.warn).any(axis=1) | pooled.crossed(margins.warn)
        alerted_bins = per_bin.crossed(margins.fail)
        alerted = alerted_bins.any(axis=1) | pooled.crossed(margins.fail)
        first = alerted & (alert_at == checks)
        named |= first & alerted_bins[:, drop_bin]
        alert_at = np.where(first, check, alert_at)
        warn_at = np.where(warned & (warn_at == checks), check, warn_at)
    return alert_at, warn_at, named


def share(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{hits / n:.3f} [{low:.3f}, {high:.3f}] ({hits}/{n})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--lengths", type=int, default=3)
    parser.add_argument("--positions", type=int, default=3)
    parser.add_argument("--calls", type=int, default=64)
    parser.add_argument("--flip", type=float, default=0.03)
    parser.add_argument("--warm-up", type=int, default=168, help="unchanged checks before the drop")
    parser.add_argument("--bets", choices=["growth", "plugin"], default="growth")
    parser.add_argument("--warn", type=float, default=Margins().warn)
    parser.add_argument("--fail", type=float, default=Margins().fail)
    parser.add_argument("--only", choices=["null", "drop", "both"], default="both")
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    bins = args.lengths * args.positions
    margins = Margins(warn=args.warn, fail=args.fail)
    common = {"reps": args.reps, "bins": bins, "calls": args.calls, "flip": args.flip, "margins": margins}
    print(
        f"bins {args.lengths}x{args.positions} (+ pooled, alpha {margins.alpha}/{bins + 1} each), "
        f"{(args.calls // bins) * bins} calls per check ({args.calls // bins} per bin), flip {args.flip}, "
        f"margins warn {margins.warn} fail {margins.fail}, bets {args.bets}, {args.reps} runs each"
    )
    if args.only in ("null", "both"):
        started = time.perf_counter()
        alert_at, warn_at, _ = simulate(rng, checks=CHECKS_30_DAYS, change_at=None, bets=args.bets, **common)
        print(
            f"no change, {CHECKS_30_DAYS} hourly checks: false ALERT in "
            f"{share(int((alert_at < CHECKS_30_DAYS).sum()), args.reps)} of 30-day runs; "
            f"a WARN in {share(int((warn_at < CHECKS_30_DAYS).sum()), args.reps)} "
            f"({time.perf_counter() - started:.0f} s)"
        )
    if args.only in ("drop", "both"):
        started = time.perf_counter()
        horizon = args.warm_up + DETECT_WITHIN
        alert_at, _, named = simulate(rng, checks=horizon, change_at=args.warm_up, bets=args.bets, **common)
        early = int((alert_at < args.warm_up).sum())
        after = alert_at - args.warm_up
        caught = (after >= 0) & (after < DETECT_WITHIN)
        delays = after[caught] + 1  # checks after the change, the first counted as 1
        median = f"{np.median(delays):.0f}" if delays.size else "-"
        print(
            f"drop 0.10 in one bin after {args.warm_up} unchanged checks: ALERTed within "
            f"{DETECT_WITHIN} checks in {share(int(caught.sum()), args.reps)}; median detection "
            f"{median} checks; the drop's bin named in {int(named[caught].sum())}/{int(caught.sum())}; "
            f"ALERTed before the change in {early} ({time.perf_counter() - started:.0f} s)"
        )


if __name__ == "__main__":
    main()
