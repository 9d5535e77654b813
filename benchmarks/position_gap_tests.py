"""The position effect and the paired gap on clustered binary data with a known truth (issue 48):
today's tests against the sign-flip test on cluster totals, each clustered by the one rule
(``rotscope.types.clusters``). Run by hand:

    python benchmarks/position_gap_tests.py [--datasets 2000] [--seed 48] [--only position|gap]

The simulated data: n cases, case i reads haystack variant ``i mod V`` (V = 3 shared, as
``filler.variants: 3`` plans them, or V = n: one haystack per case). A case's logit accuracy at
depth d of a length is ``mu + a_i + v_V + w_{V,d} + s_d`` with case effects a ~ N(0, 1.5^2),
variant effects v ~ N(0, 1.0^2) and a depth x variant interaction w ~ N(0, 0.5^2) (a text with its
own "bad middle"); s_d is the population's position effect (0 everywhere for the level; -1 logit at
the middle depths for the power). One item per (case, depth). ``mu`` is set so that the population
accuracy at s = 0 is the baseline (0.30, 0.90, 0.97). A position verdict "flags a depth" when any
depth is flagged below the best (``analysis.tasks.position_effect``: each depth against the best
one, Benjamini-Hochberg over the comparisons of the length; one length here).

For the gap, each case is read at a short and a long length at the same depths; the long one adds
``delta`` (0 for coverage at no effect, -1 logit for power) and a length x variant interaction
(sd 0.5) and a length x case interaction (sd 0.5). The truth is the population gap
E[expit(long)] - E[expit(short)]. Today's interval is ``stats.paired_gap``'s (adjusted t, cluster
adjusted t where the rule clusters on variants); the candidate is ``stats.sign_flip_interval`` on
the same clusters' totals. Power is the share of intervals wholly below 0.

Every rate is computed with the functions the analysis calls, vectorised over datasets; each study
first checks its fast path against ``position_effect`` / ``paired_gap`` on a few datasets. The
Monte Carlo standard error of a rate p at 2,000 datasets is sqrt(p(1 - p) / 2000) (0.005 at 0.05).
"""

from __future__ import annotations

import argparse
from typing import Any, cast

import numpy as np
from scipy import special
from scipy import stats as scipy_stats

from rotscope.analysis.tasks import position_effect
from rotscope.rows import Row
from rotscope.stats.intervals import adjusted_t_interval, cluster_t_interval
from rotscope.stats.multiplicity import benjamini_hochberg
from rotscope.stats.paired import paired_gap, sign_test
from rotscope.stats.randomisation import sign_flip_interval, sign_flip_p

CASE_SD, VARIANT_SD, INTERACTION_SD = 1.5, 1.0, 0.5
BASELINES = (0.30, 0.90, 0.97)
SIZES = (10, 16, 30)
ALPHA = 0.05


def intercept(baseline: float) -> float:
    """The logit intercept whose population accuracy (over case, variant and interaction) is
    ``baseline``."""
    total = float(np.sqrt(CASE_SD**2 + VARIANT_SD**2 + INTERACTION_SD**2))
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    low, high = -20.0, 20.0
    for _ in range(80):
        middle = (low + high) / 2
        mean = float((special.expit(middle + total * nodes) * weights).sum() / weights.sum())
        low, high = (middle, high) if mean < baseline else (low, middle)
    return (low + high) / 2


def membership(n: int, variants: int) -> np.ndarray:
    """(n, G) 0/1: case i in the cluster the one rule gives it (its variant where shared)."""
    labels = np.arange(n) % variants
    matrix = np.zeros((n, variants if variants < n else n))
    matrix[np.arange(n), labels if variants < n else np.arange(n)] = 1.0
    return matrix


def position_data(
    rng: np.random.Generator,
    datasets: int,
    n: int,
    variants: int,
    depths: int,
    mu: float,
    shift: np.ndarray,
    interaction_sd: float = INTERACTION_SD,
) -> np.ndarray:
    """(datasets, n, depths) correct (0/1) at one length."""
    case = CASE_SD * rng.standard_normal((datasets, n, 1))
    variant = VARIANT_SD * rng.standard_normal((datasets, variants, 1))
    interaction = interaction_sd * rng.standard_normal((datasets, variants, depths))
    of = np.arange(n) % variants
    logit = mu + case + variant[:, of] + interaction[:, of] + shift
    return np.asarray(rng.random(logit.shape) < special.expit(logit), dtype=float)


def bh_any(p: np.ndarray, tested: np.ndarray) -> np.ndarray:
    """Whether Benjamini-Hochberg at ``ALPHA`` rejects any of the tested p-values (last axis)."""
    p = np.where(tested, p, np.inf)
    m = tested.sum(axis=-1, keepdims=True)
    ranked = np.sort(p, axis=-1)
    rank = np.arange(1, p.shape[-1] + 1)
    return cast(np.ndarray, (ranked <= rank * ALPHA / np.maximum(m, 1)).any(axis=-1))


def sign_test_p(differences: np.ndarray) -> np.ndarray:
    """Two-sided exact sign test on the last axis (``stats.sign_test``), vectorised."""
    positive = (differences > 0).sum(axis=-1)
    count = positive + (differences < 0).sum(axis=-1)
    low = np.minimum(positive, count - positive)
    p = np.minimum(1.0, 2 * scipy_stats.binom.cdf(low, count, 0.5))
    return np.asarray(np.where(count == 0, 1.0, p))


def position_flags(y: np.ndarray, clusters: np.ndarray) -> dict[str, np.ndarray]:
    """Per dataset, whether today's test (sign test on cases) and the new one (sign-flip on the
    rule's cluster totals) flag any depth below the best, and find middle vs ends significant
    (one length: Benjamini-Hochberg over one test is the test at 0.05)."""
    accuracy = y.mean(axis=1)
    best = accuracy.argmax(axis=-1)
    at_best = np.take_along_axis(y, best[:, None, None], axis=-1)
    differences = np.moveaxis(at_best - y, 1, -1)  # (datasets, depths, n)
    tested = np.arange(y.shape[-1])[None, :] != best[:, None]
    sizes = clusters.sum(axis=0)
    middle = y[..., 1:-1].mean(axis=-1) - y[..., [0, -1]].mean(axis=-1)  # (datasets, n)
    return {
        "today": bh_any(sign_test_p(differences), tested),
        "new": bh_any(sign_flip_p(differences @ clusters, sizes), tested),
        "today middle": sign_test_p(middle) <= ALPHA,
        "new middle": sign_flip_p(middle @ clusters, sizes) <= ALPHA,
    }


def _rows(y: np.ndarray, depths: list[float], variants: int) -> list[Row]:
    rows = [
        {"task": "niah", "instance_id": f"c{i:03d}", "case_id": f"c{i:03d}", "length_target": 1000,
         "depth": depth, "status": "ok", "outcome": "correct" if y[i, d] else "incorrect",
         "haystack_variant": i % variants}
        for i in range(y.shape[0]) for d, depth in enumerate(depths)
    ]  # fmt: skip
    return cast(list[Row], rows)


def check_position(rng: np.random.Generator) -> None:
    """The fast path against the tool's ``position_effect`` (new) and ``sign_test`` + BH (today)."""
    for n, variants in ((16, 3), (16, 16), (30, 3), (10, 10)):
        mu = intercept(0.9)
        y = position_data(rng, 40, n, variants, 5, mu, np.array([0.0, -0.5, -1.5, -0.5, 0.0]))
        flags = position_flags(y, membership(n, variants))
        today, new = flags["today"], flags["new"]
        depths = [0.0, 0.25, 0.5, 0.75, 1.0]
        for index in range(len(y)):
            effect = position_effect(_rows(y[index], depths, variants), depths)[0]
            assert bool(effect.flagged_depths) == bool(new[index]), (n, variants, index)
            assert effect.middle_vs_ends is not None
            assert effect.middle_vs_ends.significant == bool(flags["new middle"][index]), (n, variants, index)
            middle = y[index][:, 1:4].mean(axis=-1) - y[index][:, [0, 4]].mean(axis=-1)
            assert (sign_test(list(middle)) <= ALPHA) == bool(flags["today middle"][index])
            best = int(y[index].mean(axis=0).argmax())
            p = [sign_test(list(y[index, :, best] - y[index, :, d])) for d in range(5) if d != best]
            assert any(benjamini_hochberg(p)[0]) == bool(today[index]), (n, variants, index)
    print("position: fast path = position_effect (flags, middle vs ends), sign_test + BH: 160 datasets")


def position_study(rng: np.random.Generator, datasets: int) -> None:
    check_position(rng)
    print("\n## The position effect: P(any depth flagged), one length")
    print("| world | depth x variant sd | depths | baseline | n | population effect "
          "| today (sign test on cases) | new (sign-flip, rule's clusters) "
          "| middle vs ends: today | new |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    settings = [("none", sd, n) for sd in (0.5, 1.0) for n in (16, 30)]
    settings += [("middle -2 logit", INTERACTION_SD, n) for n in SIZES]
    for depths in (3, 5):
        middle = np.zeros(depths)
        middle[1:-1] = -2.0
        for variants_name in ("3 shared", "one per case"):
            for effect_name, interaction_sd, n in settings:
                shift = np.zeros(depths) if effect_name == "none" else middle
                for baseline in BASELINES:
                    variants = 3 if variants_name == "3 shared" else n
                    y = position_data(
                        rng, datasets, n, variants, depths, intercept(baseline), shift, interaction_sd
                    )
                    flags = position_flags(y, membership(n, variants))
                    setting = f"{variants_name} | {interaction_sd} | {depths} | {baseline} | {n}"
                    setting += f" | {effect_name}"
                    rates = " | ".join(
                        _rate(flags[key]) for key in ("today", "new", "today middle", "new middle")
                    )
                    print(f"| {setting} | {rates} |")


def _rate(flags: np.ndarray) -> str:
    p = float(np.mean(flags))
    return f"{p:.3f} ± {np.sqrt(p * (1 - p) / len(flags)):.3f}"


def gap_data(
    rng: np.random.Generator, datasets: int, n: int, variants: int, mu: float, delta: float, depths: int = 3
) -> np.ndarray:
    """(datasets, n) paired differences of case means, long minus short."""
    case = CASE_SD * rng.standard_normal((datasets, n))
    variant = VARIANT_SD * rng.standard_normal((datasets, variants))
    of = np.arange(n) % variants
    base = mu + case + variant[:, of]
    long = (
        base
        + delta
        + INTERACTION_SD * rng.standard_normal((datasets, variants))[:, of]
        + INTERACTION_SD * rng.standard_normal((datasets, n))
    )
    short_p, long_p = special.expit(base), special.expit(long)
    short = rng.binomial(depths, short_p) / depths
    long_mean = rng.binomial(depths, long_p) / depths
    return np.asarray(long_mean - short, dtype=float)


def gap_truth(rng: np.random.Generator, mu: float, delta: float) -> float:
    draws = 2_000_000
    base = mu + CASE_SD * rng.standard_normal(draws) + VARIANT_SD * rng.standard_normal(draws)
    long = base + delta + INTERACTION_SD * np.sqrt(2) * rng.standard_normal(draws)
    return float(np.mean(special.expit(long) - special.expit(base)))


def gap_intervals(differences: np.ndarray, variants: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    n = differences.shape[-1]
    clusters = membership(n, variants)
    if variants < n:
        today = cluster_t_interval(differences, np.arange(n) % variants, bounds=(-1.0, 1.0))
    else:
        today = adjusted_t_interval(differences)
    flip = sign_flip_interval(differences @ clusters, clusters.sum(axis=0))
    return {"today": today, "sign-flip": flip}


def check_gap(rng: np.random.Generator) -> None:
    for n, variants in ((16, 3), (10, 10), (16, 16)):
        differences = gap_data(rng, 5, n, variants, intercept(0.9), -1.0)
        fast = gap_intervals(differences, variants)["today"]
        for index, row in enumerate(differences):
            short = {f"c{i}": 0.5 for i in range(n)}
            long = {f"c{i}": 0.5 + float(row[i]) for i in range(n)}
            labels = {f"c{i}": f"variant {i % variants}" for i in range(n)} if variants < n else None
            gap = paired_gap(short, long, clusters=labels)
            assert gap.low is not None and gap.high is not None
            assert abs(gap.low - fast[0][index]) < 1e-9 and abs(gap.high - fast[1][index]) < 1e-9
    print("gap: fast path = paired_gap on 15 datasets")


def gap_study(rng: np.random.Generator, datasets: int) -> None:
    check_gap(rng)
    print("\n## The paired gap: coverage of the population gap (95%), power (interval wholly below 0)")
    print("| world | baseline | n | delta (logit) | truth | today: coverage | power | width "
          "| sign-flip: coverage | power | width |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for variants_name in ("3 shared", "one per case"):
        for baseline in BASELINES:
            mu = intercept(baseline)
            for delta in (0.0, -1.0):
                truth = gap_truth(rng, mu, delta)
                for n in SIZES:
                    variants = 3 if variants_name == "3 shared" else n
                    differences = gap_data(rng, datasets, n, variants, mu, delta)
                    cells: list[Any] = []
                    for low, high in gap_intervals(differences, variants).values():
                        covered = (low <= truth + 1e-9) & (truth - 1e-9 <= high)
                        cells += [_rate(covered), _rate(high < 0), f"{float(np.mean(high - low)):.2f}"]
                    print(
                        f"| {variants_name} | {baseline} | {n} | {delta} | {truth:+.3f} | "
                        + " | ".join(cells)
                        + " |"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--only", choices=["position", "gap"])
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.datasets} datasets per setting, seed {args.seed}")
    if args.only != "gap":
        position_study(rng, args.datasets)
    if args.only != "position":
        gap_study(rng, args.datasets)


if __name__ == "__main__":
    main()
