"""compare's pairwise verdicts on simulated models of known truth (issue 48): the family-wise
rate of a false "better"/"worse" among equal models, and the power to find a drop at one length,
for the test compare now uses (the exact sign-flip test on the one rule's clusters, Holm across
all pairs x lengths of a task: ``compare.pairwise``) beside the one it used before (the adjusted t
of ``stats.paired_gap`` on instances, each its own cluster, Holm within a pair). Run by hand:

    python benchmarks/compare_tests.py [--datasets 2000] [--seed 48] [--quick] [--out FILE]

The world: M models answer the same n instances (cases) at the quick grid's 3 lengths, 11 depths
per instance (each item Bernoulli). Model m's logit accuracy on instance i is
``mu + a_mi + v_h + w_mh`` with h the instance's haystack variant (``i mod 3`` with 3 shared
variants, as the planner deals them; ``i`` with one haystack per case): instance effects
a_mi ~ N(0, sd^2) correlated ``rho`` between models, variant effects v ~ N(0, 1.0^2) and
model x variant effects w ~ N(0, 0.5^2) (models that react differently to a text), each the same
at every length. ``mu`` sets the marginal accuracy (the baseline, E[expit(...)] over every
effect); a drop lowers one model's marginal accuracy at one length by 0.10. Equal models have one
population: any "better"/"worse" verdict among them is false.

Each dataset's verdicts are computed by the functions compare calls (``stats.sign_flip_p``,
``stats.holm_array``, ``stats.adjusted_t_parts``) on arrays of thousands of datasets; ``check``
first builds the rows of a few datasets and asserts ``compare.pairwise`` (``pair_tests`` and
``family_verdicts``, ``previous_verdicts``) gives the same p-values and verdicts.
"""

from __future__ import annotations

import argparse
from itertools import combinations
from pathlib import Path

import numpy as np
from scipy import optimize
from scipy.special import expit

from rotscope.compare.pairwise import family_verdicts, pair_tests, previous_verdicts
from rotscope.stats.intervals import adjusted_t_parts
from rotscope.stats.multiplicity import holm_array
from rotscope.stats.randomisation import sign_flip_p

LENGTHS = (256, 512, 1024)
"""The quick grid's lengths."""
DEPTHS = 11
SD_VARIANT = 1.0
SD_MODEL_VARIANT = 0.5
ALPHA = 0.05
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(80)


def mu_for(accuracy: float, sd_instance: float) -> float:
    """The logit mean whose marginal accuracy over every random effect is ``accuracy``."""
    sd = float(np.sqrt(sd_instance**2 + SD_VARIANT**2 + SD_MODEL_VARIANT**2))

    def marginal(mu: float) -> float:
        return float(np.sum(_WEIGHTS * expit(mu + sd * _NODES)) / np.sum(_WEIGHTS))

    return float(optimize.brentq(lambda mu: marginal(mu) - accuracy, -15, 15))


def simulate(
    rng: np.random.Generator,
    datasets: int,
    models: int,
    n: int,
    shared: bool,
    sd_instance: float,
    rho: float,
    mu: np.ndarray,
) -> np.ndarray:
    """Correct items per (dataset, model, length, instance) out of ``DEPTHS``; ``mu`` is
    (models, lengths)."""
    variants = 3 if shared else n
    variant = np.arange(n) % variants
    common = rng.normal(size=(datasets, 1, n))
    own = rng.normal(size=(datasets, models, n))
    a = sd_instance * (np.sqrt(rho) * common + np.sqrt(1 - rho) * own)
    v = SD_VARIANT * rng.normal(size=(datasets, 1, variants))[..., variant]
    # rho 1: identical models (the same instance and model x variant effects; only the draws differ)
    w = SD_MODEL_VARIANT * rng.normal(size=(datasets, 1 if rho == 1 else models, variants))[..., variant]
    logit = mu[None, :, :, None] + (a + v + w)[:, :, None, :]
    return rng.binomial(DEPTHS, expit(logit))


def p_values(correct: np.ndarray, shared: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per (dataset, pair, length): the sign-flip p on the rule's clusters (new) and the adjusted
    t's two-sided p on instances (before); pairs in ``combinations`` order, second minus first."""
    models, n = correct.shape[1], correct.shape[-1]
    pairs = list(combinations(range(models), 2))
    means = correct / DEPTHS
    diffs = np.stack([means[:, j] - means[:, i] for i, j in pairs], axis=1)  # (d, pairs, L, n)
    if shared:
        variant = np.arange(n) % 3
        totals = np.stack([diffs[..., variant == h].sum(axis=-1) for h in range(3)], axis=-1)
        sizes = np.array([(variant == h).sum() for h in range(3)], dtype=float)
    else:  # clusters in the order compare's pair_tests sorts them: by name, "t/c0", "t/c1", "t/c10"
        order = sorted(range(n), key=lambda i: f"t/c{i}")
        totals, sizes = diffs[..., order], np.ones(n)
    new = sign_flip_p(totals, sizes)
    parts = adjusted_t_parts(diffs)
    before = np.minimum(1.0, 2.0 * np.minimum(parts.p_above(0.0), parts.p_below(0.0)))
    return new, before


def verdicts(new: np.ndarray, before: np.ndarray, diffs_sign: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed verdicts (+1 better, -1 worse, 0 none) per (dataset, pair, length): the new rule
    (Holm over all pairs x lengths) and the one before (Holm within each pair)."""
    d, pairs, lengths = new.shape
    held_new = holm_array(new.reshape(d, pairs * lengths)).reshape(d, pairs, lengths)
    held_before = holm_array(before)
    return (held_new <= ALPHA) * diffs_sign, (held_before <= ALPHA) * diffs_sign


def signs(correct: np.ndarray) -> np.ndarray:
    models = correct.shape[1]
    return np.stack(
        [np.sign((correct[:, j] - correct[:, i]).sum(axis=-1)) for i, j in combinations(range(models), 2)],
        axis=1,
    )


def rows_of(correct: np.ndarray, shared: bool) -> list[list[dict[str, object]]]:
    """One dataset's correct counts (model, length, instance) as each model's run rows."""
    models, _, n = correct.shape
    made: list[list[dict[str, object]]] = []
    for m in range(models):
        rows: list[dict[str, object]] = []
        for l_index, length in enumerate(LENGTHS):
            for i in range(n):
                for depth in range(DEPTHS):
                    rows.append(
                        {"task": "t", "case_id": f"c{i}", "instance_id": f"c{i}", "control": 0,
                         "length_target": length, "position": f"{depth / 10:.1f}", "depth": depth / 10,
                         "trial": 0, "filler": None, "status": "ok",
                         "haystack_variant": i % 3 if shared else i,
                         "outcome": "correct" if depth < correct[m, l_index, i] else "incorrect"}
                    )  # fmt: skip
        made.append(rows)
    return made


def check(rng: np.random.Generator) -> None:
    """The vectorised path against compare's own functions on a few datasets of each world."""
    for shared, n in ((True, 16), (False, 16), (False, 6)):
        mu = np.full((3, 3), mu_for(0.9, 1.5))
        mu[2, 1] = mu_for(0.5, 1.5)
        correct = simulate(rng, 4, 3, n, shared, 1.5, 0.8, mu)
        new, before = p_values(correct, shared)
        fast_new, fast_before = verdicts(new, before, signs(correct))
        for k in range(4):
            runs = rows_of(correct[k], shared)
            tested = [pair_tests(runs[i], runs[j], "t", LENGTHS) for i, j in combinations(range(3), 2)]
            decided = family_verdicts(tested)
            for p, (found, done) in enumerate(zip(tested, decided, strict=True)):
                assert np.allclose([e.p_value for e in found], new[k, p]), (shared, n, k, p)
                assert np.allclose([e.previous_p for e in found], before[k, p])
                word = {"better": 1, "worse": -1, "no difference shown": 0}
                assert [word[e.verdict] for e in done] == list(fast_new[k, p]), (shared, n, k, p)
                assert [word[v] for v in previous_verdicts(done)] == list(fast_before[k, p])
    print("check: vectorised p-values and verdicts equal compare.pairwise's on 12 datasets")


def rates(
    rng: np.random.Generator, datasets: int, models: int, n: int, shared: bool, sd: float, rho: float,
    baseline: float, drop: float = 0.0,
) -> dict[str, float]:  # fmt: skip
    """Shares of datasets: any verdict (family-wise, new and before; and per pair before), and,
    with a ``drop`` of the last model at the middle length, "worse" found there."""
    mu = np.full((models, 3), mu_for(baseline, sd))
    if drop:
        mu[-1, 1] = mu_for(baseline - drop, sd)
    counts = {"any_new": 0, "any_before": 0, "pair_before": 0.0, "found_new": 0, "found_before": 0}
    done = 0
    while done < datasets:
        size = min(500, datasets - done)
        correct = simulate(rng, size, models, n, shared, sd, rho, mu)
        new, before = p_values(correct, shared)
        v_new, v_before = verdicts(new, before, signs(correct))
        counts["any_new"] += int((v_new != 0).any(axis=(1, 2)).sum())
        counts["any_before"] += int((v_before != 0).any(axis=(1, 2)).sum())
        counts["pair_before"] += float((v_before != 0).any(axis=2).mean(axis=1).sum())
        counts["found_new"] += int((v_new[:, -1, 1] == -1).sum())
        counts["found_before"] += int((v_before[:, -1, 1] == -1).sum())
        done += size
    return {key: value / datasets for key, value in counts.items()}


def se(rate: float, datasets: int) -> float:
    return float(np.sqrt(max(rate * (1 - rate), 0.0025 * 0.9975) / datasets))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--quick", action="store_true", help="200 datasets, fewer settings")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    check(rng)
    datasets = 200 if args.quick else args.datasets
    lines = [
        f"datasets per setting: {datasets}, seed {args.seed}; alpha {ALPHA}; lengths {LENGTHS}, "
        f"{DEPTHS} depths; "
        f"variant sd {SD_VARIANT}, model x variant sd {SD_MODEL_VARIANT}; rho: the models' instance effects' "
        "correlation (1: identical models); ± one Monte-Carlo standard error",
        "",
        "## Equal models: family-wise false better/worse",
        "",
        "| models | n | haystacks | instance sd | rho | baseline | new: any (Holm over all) "
        "| before: any (Holm per pair) | before: per pair |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    worlds = [
        (models, shared, sd, 0.8) for models in (2, 3, 5) for shared in (True, False) for sd in (1.0, 1.5)
    ]
    worlds += [(5, shared, 1.5, 1.0) for shared in (True, False)]
    for models, shared, sd, rho in worlds:
        for n in (16, 50, 100):
            for baseline in (0.30, 0.90, 0.97):
                found = rates(rng, datasets, models, n, shared, sd, rho, baseline)
                new, before = found["any_new"], found["any_before"]
                row = (
                    f"| {models} | {n} | {'3 shared' if shared else 'one per case'} | {sd} | {rho} "
                    f"| {baseline} "
                    f"| {new:.3f} ± {se(new, datasets):.3f} | {before:.3f} ± {se(before, datasets):.3f} "
                    f"| {found['pair_before']:.3f} |"
                )
                print(row, flush=True)
                lines.append(row)
    lines += [
        "",
        "## Power: a 0.10 drop of one model at one length (2 models, Holm over 3 lengths)",
        "",
        "| n | haystacks | instance sd | rho | baseline | new: worse found | before: worse found |",
        "|---|---|---|---|---|---|---|",
    ]
    for shared in (False, True):
        for sd in (1.0, 1.5):
            for n in (10, 16, 30, 50, 100):
                found = rates(rng, datasets, 2, n, shared, sd, 0.8, 0.90, drop=0.10)
                new, before = found["found_new"], found["found_before"]
                row = (
                    f"| {n} | {'3 shared' if shared else 'one per case'} | {sd} | 0.8 | 0.9 "
                    f"| {new:.3f} ± {se(new, datasets):.3f} | {before:.3f} ± {se(before, datasets):.3f} |"
                )
                print(row, flush=True)
                lines.append(row)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
