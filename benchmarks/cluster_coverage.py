"""Coverage of rotscope's intervals (a cell, a per-length line pooling depths, the paired gap) on
clustered binary data with a known truth, for the methods considered in issue 31. Run by hand:

    python benchmarks/cluster_coverage.py [--datasets 2000] [--seed 31] [--quick] [--out FILE]

The simulated data: n instances (cases), each in haystack variant ``i mod min(variants, n)`` as the
planner assigns them (``plan/workitems.py``). At each of two lengths an instance's logit accuracy is
``mu_length + a_i + v_variant`` with instance effects a ~ N(0, 1.5^2) and variant effects
v ~ N(0, 1.0^2), each correlated between the two lengths by ``rho``; every instance has 3 depths
and 1 or 3 items (trials) at each depth, each Bernoulli of its instance's accuracy. The truth of a
length is its marginal accuracy E[expit(mu + a + v)] (a run's instances and haystacks are draws);
the long length sits 1 logit below the short one, so the gap's truth is the difference of the two.
A cell is one depth at one length, the per-length line pools the 3 depths, the gap pairs the
per-length instance means. Each interval is computed by the very function the analysis calls
(``rotscope.stats``), vectorised over datasets; ``tests/unit/analysis/test_cluster_intervals.py``
checks that ``analysis.cells.cell`` and ``analysis.tasks.task_analysis`` give the same bounds.

Methods: ``wilson`` on instance means (the cells' interval before issue 31), ``clopper-pearson``
on instance means, ``kish-cp`` (Clopper-Pearson at the effective n = p(1 - p) / cluster-robust
variance, "state the effective n and widen"), ``t-instance`` (the adjusted t of the paired gap,
each instance its own cluster) and ``t-variant`` (``stats.cluster_t_interval`` clustered on the
haystack variant where variants are fewer than instances: what rotscope now prints). Prints per
(rho, items, variants, n) the lowest coverage over the accuracies, the mean width and the share of
zero-width intervals; the Monte Carlo standard error of a coverage near 0.95 at 2,000 datasets is
about 0.005.

Measured (full grid: rho 0/0.5/0.9 x 1/3 items x 3/16 variants x n 5-60 x 10 accuracies from 0.01
to 0.999, 2,000 datasets each, seed 31, 367 s on 2 shared cores; tables in
``benchmarks/results/cluster_coverage.md``). Lowest coverage over all settings:

- cell: wilson 0.707 (3 variants, n 60) and 0.842 with none shared; clopper-pearson 0.753;
  kish-cp 0.798; t-instance 0.617; t-variant 0.933 (0.940 with 3 variants).
- per-length line (3 depths pooled): wilson 0.761; t-instance 0.575; t-variant 0.945.
- paired gap: t-instance (the gap before) 0.583; t-variant 0.953.
- no interval of t-variant has zero width; at accuracies 0.01 and 0.99-0.999 its coverage is
  0.99-1.00 (forced by the bounds: the interval reaches 0 or 1), mean widths 0.28-0.30 for cells.

So intervals cluster on the variant (not an effective n: kish-cp, fed a variance estimated from
3 clusters, under-covers) with one pseudo-instance at each bound for cells (exact binomial
coverage at half a pseudo-instance: 0.85-0.91 lowest; at one: 0.934-0.946, table
``exact_binomial``). Pooling depths, t-variant covers 0.952-0.963 at n 60 and 0.968-0.983 at 16
(16 variants, accuracies 0.3-0.85) where Wilson gave 0.96-0.998; at n 5-10 both still over-cover
(t-variant 0.98-0.998): few instances, t quantiles and the pseudo-instances.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats
from scipy.special import expit
from statsmodels.stats.proportion import proportion_confint

from rotscope.stats.intervals import CELL_PSEUDO_WEIGHT, cluster_t_interval

SD_INSTANCE = 1.5
SD_VARIANT = 1.0
DEPTHS = 3
LONG_SHIFT = 1.0
RHOS = (0.0, 0.5, 0.9)
ITEMS = (1, 3)
VARIANTS = (3, 16)
INSTANCES = (5, 10, 16, 30, 60)
ACCURACIES = (0.01, 0.1, 0.3, 0.5, 0.7, 0.85, 0.93, 0.97, 0.99, 0.999)
"""Short-length marginal accuracies, from the floor to 0.999."""
NOMINAL = 0.95
METHODS = ("wilson", "clopper-pearson", "kish-cp", "t-instance", "t-variant")
GAP_METHODS = ("t-instance", "t-variant")
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
_SD_TOTAL = float(np.hypot(SD_INSTANCE, SD_VARIANT))


def marginal(mu: float) -> float:
    """E[expit(mu + a + v)] over the instance and variant effects."""
    return float(np.sum(_WEIGHTS * expit(mu + _SD_TOTAL * _NODES)) / np.sum(_WEIGHTS))


def solve_mu(accuracy: float) -> float:
    return float(optimize.brentq(lambda mu: marginal(mu) - accuracy, -40.0, 40.0))


def variant_labels(n: int, variants: int) -> np.ndarray:
    """Each instance's haystack variant, as the planner assigns it."""
    return np.arange(n) % min(variants, n)


def cluster_labels(n: int, variants: int) -> np.ndarray:
    """The clusters rotscope uses: the variant where variants are fewer than instances (and more
    than one), else the instance."""
    used = min(variants, n)
    return variant_labels(n, variants) if 1 < used < n else np.arange(n)


def simulate(
    rng: np.random.Generator, mu_short: float, n: int, items: int, variants: int, rho: float, datasets: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-instance means of (datasets, length, n): one depth's (a cell's) and all depths' (the
    per-length line's)."""
    used = min(variants, n)

    def correlated(size: tuple[int, ...], sd: float) -> np.ndarray:
        z = rng.standard_normal((*size, 2))
        z[..., 1] = rho * z[..., 0] + np.sqrt(1 - rho**2) * z[..., 1]
        return np.asarray(sd * z)

    instance = correlated((datasets, n), SD_INSTANCE)
    variant = correlated((datasets, used), SD_VARIANT)[:, variant_labels(n, variants)]
    mu = np.array([mu_short, mu_short - LONG_SHIFT])
    p = expit(mu + instance + variant)  # (datasets, n, 2)
    correct = rng.random((datasets, n, 2, DEPTHS, items)) < p[..., None, None]
    cell = correct[..., 0, :].mean(axis=-1)
    line = correct.mean(axis=(-1, -2))
    return np.moveaxis(cell, -1, 1), np.moveaxis(line, -1, 1)


def _kish(values: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson at the effective n of a cluster-robust variance (n where it is 0)."""
    n = values.shape[-1]
    groups = int(labels.max()) + 1
    membership = np.zeros((n, groups))
    membership[np.arange(n), labels] = 1.0
    mean = values.mean(axis=-1)
    residual = values @ membership - membership.sum(axis=0) * mean[..., None]
    variance = (residual**2).sum(axis=-1) / n**2 * groups / max(groups - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.where(variance > 0, mean * (1 - mean) / variance, n)
    effective = np.clip(effective, 1.0, None)
    return _cp(mean * effective, effective)


def _cp(k: np.ndarray, n: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    nn = np.broadcast_to(np.asarray(n, dtype=float), np.shape(k))
    low = np.where(k > 0, scipy_stats.beta.ppf(0.025, np.maximum(k, 1e-12), nn - k + 1), 0.0)
    high = np.where(k < nn, scipy_stats.beta.ppf(0.975, k + 1, np.maximum(nn - k, 1e-12)), 1.0)
    return np.asarray(low), np.asarray(high)


def cell_interval(method: str, values: np.ndarray, n: int, variants: int) -> tuple[np.ndarray, np.ndarray]:
    """One method's interval for the mean of per-instance ``values`` (datasets, n) in [0, 1]."""
    k = values.sum(axis=-1)
    if method == "wilson":
        low, high = proportion_confint(k, n, alpha=1 - NOMINAL, method="wilson")
        return np.asarray(low), np.asarray(high)
    if method == "clopper-pearson":
        return _cp(k, n)
    if method == "kish-cp":
        return _kish(values, cluster_labels(n, variants))
    labels = np.arange(n) if method == "t-instance" else cluster_labels(n, variants)
    return cluster_t_interval(values, labels, bounds=(0.0, 1.0), weight=CELL_PSEUDO_WEIGHT)


def gap_interval(method: str, values: np.ndarray, n: int, variants: int) -> tuple[np.ndarray, np.ndarray]:
    labels = np.arange(n) if method == "t-instance" else cluster_labels(n, variants)
    return cluster_t_interval(values, labels, bounds=(-1.0, 1.0))


def judge(low: np.ndarray, high: np.ndarray, truth: float) -> tuple[float, float, float]:
    covered = float(np.mean((low <= truth + 1e-12) & (truth - 1e-12 <= high)))
    width = high - low
    return covered, float(np.mean(width)), float(np.mean(width <= 1e-12))


Result = dict[tuple[str, str, float, int, int, int, float], tuple[float, float, float]]
"""(interval, method, rho, items, variants, n, short accuracy) -> (coverage, mean width, zero-width share)."""


def run(datasets: int, seed: int, grid: dict[str, tuple[float, ...] | tuple[int, ...]]) -> Result:
    rng = np.random.default_rng(seed)
    results: Result = {}
    mus = {accuracy: solve_mu(accuracy) for accuracy in grid["accuracies"]}
    for rho in grid["rhos"]:
        for items in grid["items"]:
            for variants in grid["variants"]:
                for n in grid["instances"]:
                    for accuracy, mu in mus.items():
                        truths = (marginal(mu), marginal(mu - LONG_SHIFT))
                        cell, line = simulate(rng, mu, int(n), int(items), int(variants), rho, datasets)
                        key = (rho, int(items), int(variants), int(n), accuracy)
                        for method in METHODS:
                            interval: Callable[..., tuple[np.ndarray, np.ndarray]] = cell_interval
                            for name, values in (("cell", cell), ("per-length", line)):
                                worst = min(
                                    (judge(*interval(method, values[:, j], int(n), int(variants)), truths[j])
                                     for j in range(2)),
                                    key=lambda found: found[0],
                                )  # fmt: skip
                                results[(name, method, *key)] = worst
                        gap = line[:, 1] - line[:, 0]
                        for method in GAP_METHODS:
                            found = judge(
                                *gap_interval(method, gap, int(n), int(variants)), truths[1] - truths[0]
                            )
                            results[("gap", method, *key)] = found
    return results


def table(results: Result, name: str, methods: tuple[str, ...]) -> list[str]:
    """Per (rho, items, variants, n): each method's lowest coverage over the accuracies, and for
    the last method its mean width (at the accuracy of lowest coverage) and zero-width share."""
    settings = sorted({key[2:6] for key in results if key[0] == name})
    accuracies = sorted({key[6] for key in results if key[0] == name})
    lines = [
        f"### {name}",
        "",
        "| rho | items | variants | n | " + " | ".join(f"min cover {m}" for m in methods)
        + f" | {methods[-1]}: at accuracy | max cover | zero-width |",
        "|" + "---|" * (4 + len(methods) + 3),
    ]  # fmt: skip
    for rho, items, variants, n in settings:
        cells = []
        for method in methods:
            cells.append(min(results[(name, method, rho, items, variants, n, a)][0] for a in accuracies))
        chosen = {a: results[(name, methods[-1], rho, items, variants, n, a)] for a in accuracies}
        worst = min(chosen, key=lambda a: chosen[a][0])
        zero = max(found[2] for found in chosen.values())
        lines.append(
            f"| {rho} | {items} | {variants} | {n} | " + " | ".join(f"{c:.3f}" for c in cells)
            + f" | {worst} | {max(found[0] for found in chosen.values()):.3f} | {zero:.3f} |"
        )  # fmt: skip
    return lines


def by_accuracy(results: Result, name: str, method: str) -> list[str]:
    """Coverage and mean width per accuracy, the lowest and highest over the other settings: where
    the ceiling forces over-coverage."""
    accuracies = sorted({key[6] for key in results if key[0] == name})
    lines = [f"#### {name}, {method}, by accuracy", "", "| accuracy | min cover | max cover | mean width |",
             "|---|---|---|---|"]  # fmt: skip
    for accuracy in accuracies:
        found = [value for key, value in results.items() if key[:2] == (name, method) and key[6] == accuracy]
        lines.append(
            f"| {accuracy} | {min(v[0] for v in found):.3f} | {max(v[0] for v in found):.3f} | "
            f"{np.mean([v[1] for v in found]):.3f} |"
        )
    return lines


def exact_binomial(weights: tuple[float, ...] = (0.5, CELL_PSEUDO_WEIGHT)) -> list[str]:
    """Exact coverage of the cell interval on binary instances (one item each, no shared cause:
    the count is binomial), over true accuracies 0.5-0.9995 (the floor mirrors it), for the
    pseudo-instance weights considered: the lowest coverage and where, and the interval at n of n."""
    accuracies = np.linspace(0.5, 0.9995, 400)
    lines = [
        "### cell, binary instances: exact binomial coverage",
        "",
        "| weight | n | min cover | at accuracy | interval at n/n |",
        "|---|---|---|---|---|",
    ]
    for weight in weights:
        for n in INSTANCES:
            k = np.arange(n + 1)
            values = (np.arange(n)[None, :] < k[:, None]).astype(float)
            low, high = cluster_t_interval(values, np.arange(n), bounds=(0.0, 1.0), weight=weight)
            pmf = scipy_stats.binom.pmf(k[:, None], n, accuracies[None, :])
            cover = (pmf * ((low[:, None] <= accuracies) & (accuracies <= high[:, None]))).sum(axis=0)
            worst = int(cover.argmin())
            lines.append(
                f"| {weight} | {n} | {cover[worst]:.3f} | {accuracies[worst]:.3f} | "
                f"[{low[-1]:.3f}, {high[-1]:.3f}] |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--quick", action="store_true", help="rho 0.5 only, 3 items only")
    parser.add_argument("--out", type=Path, help="write the markdown tables here")
    args = parser.parse_args()
    grid: dict[str, tuple[float, ...] | tuple[int, ...]] = {
        "rhos": (0.5,) if args.quick else RHOS,
        "items": (3,) if args.quick else ITEMS,
        "variants": VARIANTS,
        "instances": INSTANCES,
        "accuracies": ACCURACIES,
    }
    started = time.monotonic()
    results = run(args.datasets, args.seed, grid)
    lines = [
        f"{args.datasets} datasets per setting, seed {args.seed}, nominal {NOMINAL}; "
        f"accuracies {', '.join(map(str, grid['accuracies']))} (short length; long 1 logit lower)",
        "",
        *table(results, "cell", METHODS),
        "",
        *table(results, "per-length", METHODS),
        "",
        *table(results, "gap", GAP_METHODS),
        "",
        *by_accuracy(results, "cell", "t-variant"),
        "",
        *by_accuracy(results, "per-length", "t-variant"),
        "",
        *by_accuracy(results, "gap", "t-variant"),
        "",
        *exact_binomial(),
        "",
        f"({time.monotonic() - started:.0f} s)",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
