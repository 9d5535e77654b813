"""The adaptive search at its defaults (``rotscope run --search`` with no ``cap`` and no ``filler.
variants``) on three frozen curve families with a known truth. Run by hand:

    python benchmarks/search_families.py [--models 500] [--seed 31] [--families gentle moderate steep]
        [--variant-sd 0] [--variants 0] [--cap 512]

A model is a logistic curve of log length (the curve ``fake/curve-MIDPOINT`` answers by,
``rotscope.backends.curve``): instance ``i`` is right at length ``L`` with chance
``sigmoid(slope · ln(midpoint / L) + u_i + v_i)``, ``u_i`` its own effect (normal, sd ``spread``)
and ``v_i`` the effect of its haystack (normal, sd ``--variant-sd``; ``--variants V`` > 0: the
instances share ``V`` haystacks, instance ``i`` the ``i mod V``-th, as a grid run's cases do; 0:
one haystack per instance, the search's default). The families (per unit of log length):

    gentle   slope 2, spread 1.5
    moderate slope 3, spread 1.0
    steep    slope 6, spread 0.5

The midpoint of each model is set so that the true effective length (``nolima-0.85`` against the
base at 500 tokens, on the population curve: both effects integrated out) is log-uniform over
1.1K-120K, inside the searched range [1000, 128000]. An instance is measured at three depths per
length. The settings are the ones ``rotscope run --search`` resolves for such an experiment
(``execution.workflows.search_setup.search_settings`` with the default cap ``DEFAULT_CAP`` and the search
section's defaults: resolution 2.0, 95%, batch 8), and the search is ``plan.search.run_search``.
Printed per family:

- decided / undecided (a length left open at the cap) shares;
- coverage: the share of deciding runs whose bracket [pass, fail) holds the true effective length
  (``(None, lo)`` holds it when below ``lo``, ``(hi, None)`` when at or above ``hi``);
- calls: the median, and its ratio to the full fixed grid of the same resolution (every one of the
  cap's instances at each of its lengths and the base: what ``search.json`` records as
  ``fixed_grid``) and to the hindsight grid (``fixed_grid_hindsight``: as many instances as the
  search needed at its most demanding decided length);
- the median ratio of a decided bracket's ends (the resolution bounds it at 2.0).

Measured (500 models per family, seed 31, one haystack per instance, no haystack effect; 3-6 min
per family on a shared core; details and the haystack study in
``benchmarks/results/search_families.md``):

    family    decided  undecided  coverage (of deciding)  median calls  /full grid (p90)  /hindsight
    gentle      68.2%      31.8%    100.0% of 341               5,184   37.5% (43%)       39.6%
    moderate    97.8%       2.2%    100.0% of 489               2,184   15.8% (24%)       37.5%
    steep      100.0%       0.0%    100.0% of 500               1,056    7.6% (15%)       30.6%

With a haystack effect (sd 1.0) on the moderate family, 300 models: 3 shared haystacks cover 88.6%
of deciding runs, one per instance 100.0%.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist

from rotscope.backends.curve import LogisticCurve, uniform
from rotscope.config.experiment import ExperimentConfig
from rotscope.search.decisions import SearchSettings, Step, fixed_grid_calls, log_grid, run_search
from rotscope.search.setup import DEFAULT_CAP, search_settings

LO, HI, BASE, DEPTHS = 1000, 128000, 500, 3
FAMILIES = {"gentle": (2.0, 1.5), "moderate": (3.0, 1.0), "steep": (6.0, 0.5)}
"""(slope per unit of log length, sd of the instance effect)."""


@dataclass(frozen=True)
class Model:
    curve: LogisticCurve
    """The population curve (instance and haystack effects together), which defines the truth."""
    slope: float
    spread: float
    variant_sd: float
    variants: int
    seed: int

    def effect(self, instance: int) -> float:
        own = self.spread * NormalDist().inv_cdf(uniform(self.seed, "effect", instance))
        haystack = instance % self.variants if self.variants else instance
        return own + self.variant_sd * NormalDist().inv_cdf(uniform(self.seed, "haystack", haystack))

    def mean(self, instance: int, length: int) -> float:
        z = self.slope * math.log(self.curve.midpoint / length) + self.effect(instance)
        chance = 1.0 / (1.0 + math.exp(-z))
        right = (uniform(self.seed, "call", instance, length, depth) < chance for depth in range(DEPTHS))
        return sum(right) / DEPTHS


def draw(rng: random.Random, seed: int, family: str, variant_sd: float, variants: int) -> tuple[Model, float]:
    """A model of ``family`` whose true effective length is log-uniform over 1.1K-120K, and that
    length."""
    slope, spread = FAMILIES[family]
    total = math.hypot(spread, variant_sd)
    wanted = math.exp(rng.uniform(math.log(1100), math.log(120000)))
    low, high = math.log(wanted) - 10, math.log(wanted) + 10
    for _ in range(60):  # the effective length grows with the midpoint
        middle = (low + high) / 2
        curve = LogisticCurve(math.exp(middle), slope=slope, spread=total)
        low, high = (middle, high) if curve.effective_length(BASE, 0.85) < wanted else (low, middle)
    curve = LogisticCurve(math.exp(low), slope=slope, spread=total)
    return Model(curve, slope, spread, variant_sd, variants, seed), curve.effective_length(BASE, 0.85)


def measure(model: Model, step: Step) -> list[float]:
    return [model.mean(i, step.length) for i in range(step.start, step.start + step.count)]


def contains(bracket: tuple[int | None, int | None], truth: float) -> bool:
    low, high = bracket
    return (low is None or low <= truth) and (high is None or truth < high)


def default_settings(cap: int = DEFAULT_CAP) -> SearchSettings:
    """What ``rotscope run --search`` resolves for a niah search over [LO, HI] with the base at
    ``BASE``, three depths, no controls and the search section's defaults."""
    config = ExperimentConfig.model_validate(
        {
            "model": "fake/curve-4000",
            "lengths": [BASE],
            "depths": [0.1, 0.5, 0.9],
            "controls": False,
            "search": {"range": [LO, HI]},
        }
    )
    assert config.search is not None
    return search_settings(config, config.search, cap)


def study(
    family: str, models: int, seed: int, variant_sd: float, variants: int, cap: int
) -> dict[str, float]:
    settings = default_settings(cap)
    coarse = SearchSettings(
        lengths=tuple(log_grid(LO, HI, settings.resolution)),
        resolution=settings.resolution,
        base_length=BASE,
        threshold=settings.threshold,
        calls_per_instance=settings.calls_per_instance,
    )
    full = fixed_grid_calls(coarse, settings.cap)
    rng = random.Random(f"{seed}-{family}")
    decided = covered = undecided = 0
    calls: list[int] = []
    hindsight: list[float] = []
    widths: list[float] = []
    for index in range(models):
        model, truth = draw(rng, seed * 100_000 + index, family, variant_sd, variants)
        result = run_search(settings, partial(measure, model))
        calls.append(result.calls)
        hindsight.append(
            result.calls / fixed_grid_calls(coarse, max(result.instances_at_decided(), default=1))
        )
        if result.verdict == "decided":
            decided += 1
            covered += contains(result.bracket, truth)
            low, high = result.bracket
            if low is not None and high is not None:
                widths.append(high / low)
        else:
            undecided += 1
    return {
        "decided": decided / models,
        "undecided": undecided / models,
        "coverage": covered / max(decided, 1),
        "deciding": decided,
        "median_calls": statistics.median(calls),
        "full_grid_calls": full,
        "ratio_full": statistics.median(calls) / full,
        "ratio_full_p90": sorted(calls)[int(0.9 * (models - 1))] / full,
        "ratio_hindsight": statistics.median(hindsight),
        "width": statistics.median(widths) if widths else math.nan,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=500)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--variant-sd", type=float, default=0.0)
    parser.add_argument("--variants", type=int, default=0, help="shared haystacks; 0: one per instance")
    parser.add_argument("--cap", type=int, default=DEFAULT_CAP, help="instances per length (the default's)")
    args = parser.parse_args()
    settings = default_settings(args.cap)
    print(
        f"{args.models} models per family; grid {len(settings.lengths)} lengths over [{LO}, {HI}], "
        f"resolution {settings.resolution}, cap {settings.cap}, batch {settings.batch}, "
        f"{settings.confidence:.0%}; haystack effect sd {args.variant_sd}, "
        f"{args.variants or 'one per instance'} haystacks"
    )
    print(
        "family    decided  undecided  coverage (of deciding)  median calls  /full grid (p90)  "
        "/hindsight  width"
    )
    for family in args.families:
        started = time.perf_counter()
        r = study(family, args.models, args.seed, args.variant_sd, args.variants, args.cap)
        print(
            f"{family:<9} {r['decided']:>7.1%}  {r['undecided']:>9.1%}  {r['coverage']:>8.1%} of "
            f"{r['deciding']:<4.0f}       {r['median_calls']:>12,.0f}  {r['ratio_full']:>6.1%} "
            f"({r['ratio_full_p90']:.0%})    {r['ratio_hindsight']:>8.1%}  {r['width']:.2f}   "
            f"[{time.perf_counter() - started:.0f} s]"
        )


if __name__ == "__main__":
    main()
