"""Which test the gate's pooled and slice verdicts use: four candidates, run on the same simulated
paired runs of known truth (``gate.sizing.simulate``), clustered by the one rule
(``rotscope.types.clusters``: the haystack variant where the cases share 3, else the case).

Candidates, each one-sided at alpha on the clusters' mean paired differences (items of a cluster
averaged over the slices the test reads):

- ``adjusted t``: today's (``stats.adjusted_t_parts``: the pseudo-pair +1/-1 at weight 1/2);
- ``cluster t``: Student's t on the cluster means, G - 1 degrees of freedom, no pseudo-pair;
- ``sign-flip``: ``stats.randomisation.sign_flip_p`` on the cluster means shifted by the margin;
- ``hybrid``: the adjusted t where the clusters are cases (one prompt's few items, often all
  right near a ceiling: the pseudo-pair keeps a zero spread from passing), the cluster t where
  they are haystack variants (each the mean of a third of the cases' items: near normal, never
  of zero spread);
- ``floored t``: the cluster t with its variance at least the null's for independent items
  (Tango's restricted discordances): the gate's FAIL tests (``gate.margin_test``, "below");
- ``score t``: the floored t with the variance about the margin instead of the sample mean;
- ``skew t``: the score t with Johnson's skewness correction: the gate's non-inferiority test
  (``gate.margin_test``, "above").

``--acceptance`` runs the whole gate (``gate.decision.decide``) beside today's (the commit
``TODAY``, loaded from git) on the same datasets; results in ``benchmarks/results/gate_tests.md``.

Worlds (``gate.sizing.Truth``): case sd 1.5 logit, baseline-candidate correlation 0.9, item
copula 0.5; either one haystack per case, or 3 shared variants (variant sd 1.0, model x variant
sd 0.5 logit). The design is the shipped example's shape (2 lengths x 3 positions = 6 slices, one
item per case and slice) at n cases; baselines 0.30/0.90/0.97; margins 0.15 (the example's) and
0.05 (the default).

    python benchmarks/gate_tests.py [--datasets 2000] [--seed 11]

First it checks its vectorised path against the tool's own per-dataset path on a few datasets
(``gate.pairing.build_slices`` -> ``gate.judgement.judge_slices``): the pooled p-values agree.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from rotscope.gate.decision import FAIL, PASS, Rule, cluster_sums, decide
from rotscope.gate.sizing import Design, Truth, one_slice, simulate
from rotscope.stats.intervals import adjusted_t_parts
from rotscope.stats.randomisation import sign_flip_p

Test = Callable[[np.ndarray, float, bool], tuple[np.ndarray, np.ndarray]]
"""(cluster means [datasets, G], margin, clusters are variants) -> p of non-inferiority, p of
inferiority (mean below -margin)."""


def design_of(cases: int) -> Design:
    positions = ("beginning", "midpoint", "end")
    return Design.from_slices(
        {
            ("cases", length, position, ()): {f"c{case:03d}": 1 for case in range(cases)}
            for length in (250, 500)
            for position in positions
        }
    )


def adjusted(means: np.ndarray, margin: float, _variants: bool) -> tuple[np.ndarray, np.ndarray]:
    parts = adjusted_t_parts(means)
    return parts.p_above(-margin), parts.p_below(-margin)


def student(means: np.ndarray, margin: float, _variants: bool) -> tuple[np.ndarray, np.ndarray]:
    g = means.shape[-1]
    sd = means.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (means.mean(axis=-1) + margin) / (sd / np.sqrt(g))
    t = np.where(sd == 0, np.sign(means.mean(axis=-1) + margin) * np.inf, t)
    return scipy_stats.t.sf(t, g - 1), scipy_stats.t.cdf(t, g - 1)


def flips(means: np.ndarray, margin: float, _variants: bool) -> tuple[np.ndarray, np.ndarray]:
    null = np.full(means.shape[:-1], -margin)
    return (
        sign_flip_p(means, null=null, alternative="greater"),
        sign_flip_p(means, null=null, alternative="less"),
    )


def null_variance(loss: np.ndarray, gain: np.ndarray, items: np.ndarray, margin: float) -> np.ndarray:
    """Per item, the variance of a paired difference under "the loss is exactly ``margin``": the
    restricted maximum-likelihood discordances (Tango's score test for paired proportions) from
    the datasets' discordant counts ``loss`` and ``gain`` among ``items``."""
    rest = items - loss - gain
    b_coef = loss * (1 - margin) + gain * (1 - 3 * margin) - 2 * rest * margin
    c_coef = gain * margin * (1 - margin)
    gain_p = (b_coef + np.sqrt(b_coef**2 + 8 * items * c_coef)) / (4 * items)
    return 2 * gain_p + margin - margin**2


def floored(
    means: np.ndarray,
    margin: float,
    variants: bool,
    loss: np.ndarray,
    gain: np.ndarray,
    sizes: np.ndarray,
    score: bool = False,
    skew: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Student's t on the cluster means with the variance at least the null's for independent
    items (``null_variance`` over each cluster's items), G - 1 degrees of freedom."""
    g = means.shape[-1]
    per_item = null_variance(loss, gain, sizes.sum(), margin)
    floor = per_item * (1.0 / sizes).sum() / g**2
    centred = (
        ((means + margin) ** 2).sum(axis=-1) / (g * (g - 1)) if score else means.var(axis=-1, ddof=1) / g
    )
    variance = np.maximum(centred, floor)
    shift = means.mean(axis=-1) + margin
    if skew:
        # Johnson's (1978) correction of t for the skewness of the differences
        third = ((means - means.mean(axis=-1, keepdims=True)) ** 3).mean(axis=-1)
        spread = variance * g
        shift = shift + third / (6 * spread * g) + third * shift**2 / (3 * spread**2)
    t = shift / np.sqrt(variance)
    return scipy_stats.t.sf(t, g - 1), scipy_stats.t.cdf(t, g - 1)


def hybrid(means: np.ndarray, margin: float, variants: bool) -> tuple[np.ndarray, np.ndarray]:
    return (student if variants else adjusted)(means, margin, variants)


TESTS: dict[str, Test] = {"adjusted t": adjusted, "cluster t": student, "sign-flip": flips, "hybrid": hybrid}


def cluster_means(base: np.ndarray, cand: np.ndarray, count: np.ndarray, index: np.ndarray) -> np.ndarray:
    b, c, n = cluster_sums(base, cand, count, index)
    return (c - b).sum(axis=-1) / n.sum(axis=-1)


def rates(
    cases: int, truth: Truth, margin: float, loss: float, datasets: int, seed: int
) -> dict[str, tuple[float, float]]:
    """Per test: the share of datasets where non-inferiority is shown and where inferiority is."""
    design = design_of(cases)
    slices = len(design.keys)
    rng = np.random.default_rng(seed)
    base, cand = simulate(rng, design, [truth.accuracy] * slices, [truth.accuracy - loss] * slices,
                          datasets, truth)  # fmt: skip
    index = truth.cluster_index(cases)
    means = cluster_means(base, cand, design.count, index)
    variants = len(set(index.tolist())) < cases
    found = {}
    for name, test in TESTS.items():
        above, below = test(means, margin, variants)
        found[name] = (float(np.mean(above <= 0.05)), float(np.mean(below <= 0.05)))
    b, c, n = cluster_sums(base, cand, design.count, index)
    loss = np.clip(b - c, 0, None).sum(axis=(-1, -2))
    gain = np.clip(c - b, 0, None).sum(axis=(-1, -2))
    above, below = floored(means, margin, variants, loss, gain, n.sum(axis=-1))
    found["floored t"] = (float(np.mean(above <= 0.05)), float(np.mean(below <= 0.05)))
    above, below = floored(means, margin, variants, loss, gain, n.sum(axis=-1), score=True)
    found["score t"] = (float(np.mean(above <= 0.05)), float(np.mean(below <= 0.05)))
    above, below = floored(means, margin, variants, loss, gain, n.sum(axis=-1), score=True, skew=True)
    found["skew t"] = (float(np.mean(above <= 0.05)), float(np.mean(below <= 0.05)))
    return found


def check_fast_path(datasets: int = 3) -> None:
    """The vectorised cluster means and the chosen test ("skew t") against the gate's own
    per-dataset path (rows -> build_slices -> judge_slices), in both worlds."""
    from benchmarks.gate_power import runs  # the rows of two runs, as rotscope gate reads them

    from rotscope.config.experiment import GateConfig
    from rotscope.gate.judgement import judge_slices
    from rotscope.gate.pairing import build_slices

    for variants in (3, 0):
        truth = Truth(accuracy=0.9, variants=variants)
        design = design_of(12)
        rng = np.random.default_rng(3)
        base, cand = simulate(rng, design, [0.9] * 6, [0.85] * 6, datasets, truth)
        settings = GateConfig(margin=0.15, floor=0.0, min_instances=5)
        index = truth.cluster_index(12)
        means = cluster_means(base, cand, design.count, index)
        _, _, n = cluster_sums(base, cand, design.count, index)
        loss = np.clip(base - cand, 0, None).sum(axis=(-1, -2))
        gain = np.clip(cand - base, 0, None).sum(axis=(-1, -2))
        fast, _ = floored(means, 0.15, bool(variants), loss, gain, n.sum(axis=-1), score=True, skew=True)
        for number in range(datasets):
            baseline, candidate = runs(design, base[number], cand[number], variants=variants)
            slices, _ = build_slices(baseline, candidate, [])
            pooled = judge_slices(slices, settings)
            assert pooled.clusters == len(set(index.tolist()))
            assert pooled.p_noninferior is not None and abs(pooled.p_noninferior - fast[number]) < 1e-9, (
                pooled.p_noninferior,
                fast[number],
            )
    print(f"fast path checked against build_slices -> judge_slices on {datasets} datasets per world")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--skip-check", action="store_true")
    parser.add_argument("--worlds", type=int, nargs="+", default=[3, 0])
    parser.add_argument("--acceptance", action="store_true", help="the whole gate's rates, new and today's")
    args = parser.parse_args()
    if args.acceptance:
        acceptance(args.datasets, args.seed)
        return
    if not args.skip_check:
        check_fast_path()
    names = [*TESTS, "floored t", "score t", "skew t"]
    print(f"{args.datasets} datasets per setting; cells: P(non-inferiority shown) / P(inferiority shown)")
    print(f"{'world':<10}{'base':<6}{'margin':<8}{'n':<5}{'truth':<12}" + "".join(f"{n:<16}" for n in names))
    for variants in args.worlds:
        for accuracy in (0.30, 0.90, 0.97):
            for margin in (0.15, 0.05):
                for cases in (10, 16, 30, 75):
                    truth = Truth(accuracy=accuracy, variants=variants)
                    for label, loss in (("identical", 0.0), ("margin", margin), ("2x margin", 2 * margin)):
                        if accuracy - loss < 0.02:
                            continue
                        found = rates(cases, truth, margin, loss, args.datasets, args.seed)
                        world = "3 shared" if variants else "own"
                        cells = "".join(f"{found[n][0]:.3f}/{found[n][1]:.3f}     " for n in names)
                        print(f"{world:<10}{accuracy:<6}{margin:<8}{cases:<5}{label:<12}{cells}", flush=True)


def old_decide() -> Callable[..., Any]:
    """Today's ``decide`` (before issue 48: the adjusted t, clustered on cases), from git."""
    import importlib.util
    import subprocess
    import sys
    import tempfile

    source = subprocess.run(
        ["git", "show", f"{TODAY}:src/rotscope/gate/decision.py"], check=True, capture_output=True, text=True
    ).stdout
    folder = Path(tempfile.mkdtemp())
    (folder / "old_decision.py").write_text(source)
    spec = importlib.util.spec_from_file_location("old_decision", folder / "old_decision.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_decision"] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module.decide  # type: ignore[no-any-return]


TODAY = "f3469e9"
"""The commit whose gate is "today's"."""


def gate_rates(
    cases: int, truth: Truth, rule: Rule, candidate: list[float], datasets: int, seed: int, before: Any
) -> dict[str, float]:
    """Verdict shares of the whole gate (``decide``), new and today's, on the same datasets, and
    the share where the probe slice is not shown to fail."""
    design = design_of(cases)
    rng = np.random.default_rng(seed)
    base, cand = simulate(rng, design, [truth.accuracy] * len(design.keys), candidate, datasets, truth)
    new = decide(base, cand, design.count, rule, truth.cluster_index(cases), bounds=False)
    old = before(base, cand, design.count, rule)
    probe = design.probe_slice()
    return {
        "PASS": float(np.mean(new.verdict == PASS)),
        "FAIL": float(np.mean(new.verdict == FAIL)),
        "today PASS": float(np.mean(old.verdict == PASS)),
        "today FAIL": float(np.mean(old.verdict == FAIL)),
        "probe not failed": float(np.mean(~(new.slice_fails[:, probe] | new.floor_fails[:, probe]))),
        "today probe PASS": float(np.mean(~(old.slice_fails[:, probe] | old.floor_fails[:, probe]))),
    }


def acceptance(datasets: int, seed: int) -> None:
    """The gate's verdict rates in both worlds, new beside today's (issue 48's acceptance)."""
    before = old_decide()
    print(f"{datasets} datasets per setting, seed {seed}; rate (MC se) new | today")
    for margin in (0.15, 0.05):
        rule = Rule(margin=margin, alpha=0.05, floor=0.10, min_instances=10)
        for variants in (3, 0):
            for accuracy in (0.30, 0.90, 0.97):
                for cases in (10, 16, 30, 75):
                    truth = Truth(accuracy=accuracy, variants=variants)
                    design = design_of(cases)
                    truths = {
                        "identical": [accuracy] * 6,
                        "margin everywhere": [accuracy - margin] * 6,
                        "2x margin everywhere": [accuracy - 2 * margin] * 6,
                        "2x margin in one slice": one_slice(design, 2 * margin, truth),
                    }
                    for label, candidate in truths.items():
                        if min(candidate) < 0.02:
                            continue
                        found = gate_rates(cases, truth, rule, candidate, datasets, seed, before)
                        errors = {name: np.sqrt(rate * (1 - rate) / datasets) for name, rate in found.items()}
                        cells = "  ".join(f"{name} {found[name]:.3f} ({errors[name]:.3f})" for name in found)
                        world = "3 shared" if variants else "own"
                        print(f"m={margin} {world} base={accuracy} n={cases} {label}: {cells}", flush=True)


if __name__ == "__main__":
    main()
