"""Coverage of ``monitor show``'s cluster-robust intervals when conversation sizes are heavy-tailed
(a few very long conversations), before and after issue 48. Run by hand (results in
``benchmarks/results/monitor_window.md``, "show's intervals"):

    python benchmarks/monitor_rates.py [--datasets 2000] [--seed 48]

The world (per dataset): ``G`` conversations (100, 300, 1000), each with a conversation effect
``u ~ N(0, sd²)`` on the logit (sd 1 or 2) around ``logit(p0)`` (p0 0.85 or 0.5), each request
answered with chance ``expit(logit p0 + u)``. Sizes: ``few-long-500`` (geometric, mean 5, and 1% of
conversations 500 requests), ``few-long-2000`` (the same with 2,000), ``pareto-1.2`` (``1 + ⌊2 ×
Lomax(1.2)⌋``, infinite variance). Sizes are independent of ``u``, so the truth, the record-level
answered rate, is ``E[expit(logit p0 + u)]`` (Monte Carlo, 2×10^6 draws). Coverage of the 95%
interval of the group's answered rate: ``before`` is ``stats.cluster_t_from_totals`` (what ``show``
printed), ``now`` is ``monitor.rates.clustered_interval``; both vectorised over datasets, checked
first against ``monitor.rates.group_rates`` (the tool's own path, a ``Tally`` per dataset) and
``cluster_t_from_totals`` per dataset. The Monte Carlo se of a coverage near 0.95 at 2,000
datasets is 0.005.
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.typing import NDArray
from scipy import stats as scipy_stats
from scipy.special import expit, logit

from rotscope.monitor.rates import Tally, clustered_interval, group_rates
from rotscope.monitor.schema import OUTCOMES
from rotscope.stats.intervals import CELL_PSEUDO_WEIGHT, cluster_t_from_totals


def before(totals: NDArray[np.float64], sizes: NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """``cluster_t_from_totals`` over leading axes (it sums ``sizes`` over all of them, so it is
    run per dataset in the check and rebuilt here, term for term, for the vectorised study)."""
    weight = CELL_PSEUDO_WEIGHT
    count = sizes.sum(axis=-1)
    groups = sizes.shape[-1]
    total = count + 2 * weight
    centre = (totals.sum(axis=-1) + weight) / total
    squares = ((totals - sizes * centre[..., None]) ** 2).sum(axis=-1) + weight * (
        centre**2 + (1 - centre) ** 2
    )
    effective = groups + 2 * weight * groups / count
    se = np.sqrt(squares / total**2 * effective / (effective - 1))
    half = scipy_stats.t.ppf(0.975, effective - 1) * se
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def sizes_of(kind: str, rng: np.random.Generator, shape: tuple[int, int]) -> NDArray[np.float64]:
    if kind.startswith("few-long"):
        long = float(kind.rsplit("-", 1)[1])
        base = rng.geometric(1 / 5, shape).astype(float)
        return np.where(rng.random(shape) < 0.01, long, base)
    return np.floor(1 + 2 * rng.pareto(float(kind.rsplit("-", 1)[1]), shape))


def check(totals: NDArray[np.float64], sizes: NDArray[np.float64], count: int) -> None:
    answered, abstained = OUTCOMES.index("answered"), OUTCOMES.index("abstained")
    old_low, old_high = before(totals[:count], sizes[:count])
    new_low, new_high = clustered_interval(totals[:count], sizes[:count], confidence=0.95)
    for d in range(count):
        low, high = cluster_t_from_totals(
            totals[d], sizes[d], bounds=(0.0, 1.0), confidence=0.95, weight=CELL_PSEUDO_WEIGHT
        )
        assert abs(float(low) - old_low[d]) < 1e-12 and abs(float(high) - old_high[d]) < 1e-12
        tally = Tally()
        for g in range(sizes.shape[1]):
            for j in range(int(sizes[d, g])):
                tally.add(answered if j < totals[d, g] else abstained, f"c{g}")
        rate = group_rates("all", tally, 0.95).rates["answered"]
        assert abs(rate.low - new_low[d]) < 1e-9 and abs(rate.high - new_high[d]) < 1e-9, (rate, d)
    print(f"checked: before = cluster_t_from_totals, now = group_rates' interval, on {count} datasets")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    d = args.datasets
    print("sizes | sd | p0 | conversations | median share of the longest | coverage before | now")
    checked = False
    for kind in ("few-long-500", "few-long-2000", "pareto-1.2"):
        for sd in (1.0, 2.0):
            for p0 in (0.85, 0.5):
                truth = float(expit(logit(p0) + rng.normal(0, sd, 2_000_000)).mean())
                for groups in (100, 300, 1000):
                    sizes = sizes_of(kind, rng, (d, groups))
                    chance = expit(logit(p0) + rng.normal(0, sd, (d, groups)))
                    totals = rng.binomial(sizes.astype(np.int64), chance).astype(float)
                    if not checked:
                        check(totals, sizes, 3)
                        checked = True
                    cover = []
                    for low, high in (
                        before(totals, sizes),
                        clustered_interval(totals, sizes, confidence=0.95),
                    ):
                        cover.append(float(((low <= truth) & (truth <= high)).mean()))
                    longest = float(np.median(sizes.max(axis=1) / sizes.sum(axis=1)))
                    print(
                        f"{kind} | {sd:g} | {p0:g} | {groups} | {longest:.2f} | "
                        f"{cover[0]:.3f} | {cover[1]:.3f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
