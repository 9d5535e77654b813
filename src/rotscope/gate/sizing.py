"""What a gate of a given shape can decide: its verdicts' probabilities under known truths,
simulated through the gate's own tests (``rotscope.gate.decision.decide``), and the number of
cases an identical candidate needs to PASS with a chosen probability.

A normal approximation of these tests is off where it matters (few clusters, the variance floor,
Holm's levels, the discrete floor test), so every probability here is simulated. The assumed
truth (``Truth``): each case has a difficulty on the logit scale, normal with sd 1.5, the same in
every slice; the candidate's is correlated 0.9 with the baseline's; an item's baseline and
candidate outcomes are tied by a Gaussian copula with correlation 0.5 (the same prompt); the
baseline's accuracy is 0.9 in every slice unless given (``rotscope plan --pilot``: a pilot run's);
cases read their own haystack unless they share ``variants`` (then clustered on them, as the gate
does). ``benchmarks/gate_power.py`` runs the same truths
through ``build_slices`` -> ``judge_slices`` -> ``overall_verdict`` and records the rates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import optimize, special
from scipy import stats as scipy_stats

from rotscope.gate.decision import FAIL, PASS, Rule, decide
from rotscope.gate.record import Power
from rotscope.plan.slices import SliceKey

DATASETS = 2000
"""Simulated datasets per truth: a rate's Monte-Carlo standard error is at most 0.011."""
POWER = 0.8
"""The power the smallest detectable drop is stated at."""
_CHUNK = 250


@dataclass(frozen=True)
class Truth:
    """The simulated truth a gate's probabilities are stated under."""

    accuracy: float = 0.9
    instance_sd: float = 1.5
    latent_correlation: float = 0.9
    item_copula: float = 0.5
    variants: int = 0
    """Haystack texts the cases share (case ``c`` reads ``c % variants``); 0: one per case."""
    variant_sd: float = 1.0
    """The sd of a shared text's effect on both models (logit)."""
    model_variant_sd: float = 0.5
    """The sd of each model's own reaction to a text (model x variant, logit)."""

    def describe(self) -> str:
        shared = (
            f"; {self.variants} shared haystack variants (variant sd {self.variant_sd}, model x variant "
            f"sd {self.model_variant_sd} logit)"
            if self.variants
            else ""
        )
        return (
            f"baseline accuracy {self.accuracy:.2f}, case difficulty sd {self.instance_sd} logit, "
            f"baseline-candidate correlation {self.latent_correlation}, item copula {self.item_copula}"
            + shared
        )

    @property
    def total_sd(self) -> float:
        """The sd of a case's logit in a slice, the variant's effects included."""
        if not self.variants:
            return self.instance_sd
        return float(np.sqrt(self.instance_sd**2 + self.variant_sd**2 + self.model_variant_sd**2))

    def cluster_index(self, cases: int) -> np.ndarray:
        """Each case's cluster by the one rule (``rotscope.types.clusters``): its variant where the
        cases share fewer variants than there are cases, else the case itself."""
        if self.variants and 1 < self.variants < cases:
            return np.arange(cases) % self.variants
        return np.arange(cases)


@dataclass(frozen=True)
class Design:
    """A gate's shape: paired items per cluster (row) and slice (column), and each slice's key."""

    count: np.ndarray
    keys: tuple[SliceKey, ...]

    @classmethod
    def from_slices(cls, slices: Mapping[SliceKey, Mapping[str, int]]) -> Design:
        clusters = sorted({cluster for found in slices.values() for cluster in found})
        index = {cluster: number for number, cluster in enumerate(clusters)}
        keys = tuple(slices)
        count = np.zeros((len(clusters), len(keys)))
        for column, key in enumerate(keys):
            for cluster, items in slices[key].items():
                count[index[cluster], column] = items
        return cls(count, keys)

    def with_cases(self, cases: int) -> Design:
        """The design with ``cases`` clusters per task, each task's clusters repeated in turn (a
        generated family's new cases fill the same slices as its first)."""
        tasks = np.array([self._task_of(row) for row in range(self.count.shape[0])])
        rows: list[int] = []
        for task in dict.fromkeys(tasks.tolist()):
            mine = np.flatnonzero(tasks == task)
            rows.extend(int(row) for row in mine[np.arange(cases) % len(mine)])
        return replace(self, count=self.count[rows])

    def _task_of(self, row: int) -> str:
        column = int(np.flatnonzero(self.count[row])[0])
        return self.keys[column][0]

    def cases_per_task(self) -> dict[str, int]:
        tasks = [self._task_of(row) for row in range(self.count.shape[0])]
        return {task: tasks.count(task) for task in dict.fromkeys(tasks)}

    def probe_slice(self) -> int:
        """The slice a one-slice drop is simulated in: a named middle position at the longest
        length where there is one, else the middle slice of the longest length."""
        longest = max(key[1] for key in self.keys)
        candidates = [number for number, key in enumerate(self.keys) if key[1] == longest]
        named = [number for number in candidates if self.keys[number][2].endswith("midpoint")]
        return named[0] if named else candidates[len(candidates) // 2]


def logit_offset(accuracy: float, sd: float) -> float:
    """The slice's logit offset at which a case of normal difficulty (sd ``sd``) is right with
    probability ``accuracy`` on average (Gauss-Hermite quadrature)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    clipped = float(np.clip(accuracy, 1e-6, 1 - 1e-6))
    return float(
        optimize.brentq(lambda mu: float(weights @ special.expit(mu + sd * nodes)) - clipped, -40.0, 40.0)
    )


def simulate(
    rng: np.random.Generator,
    design: Design,
    baseline: Sequence[float],
    candidate: Sequence[float],
    datasets: int,
    truth: Truth = Truth(),
) -> tuple[np.ndarray, np.ndarray]:
    """[datasets, clusters, slices] sums of correct items of a baseline and a candidate whose true
    accuracy per slice is ``baseline`` and ``candidate``."""
    clusters, _ = design.count.shape
    items = int(design.count.max(initial=1))
    mu_base = np.array([logit_offset(p, truth.total_sd) for p in baseline])
    mu_cand = np.array([logit_offset(p, truth.total_sd) for p in candidate])
    latent = rng.standard_normal((datasets, clusters, 2))
    a = truth.instance_sd * latent[..., 0]
    rho = truth.latent_correlation
    b = rho * a + np.sqrt(1 - rho**2) * truth.instance_sd * latent[..., 1]
    if truth.variants:
        # a text's effect on both models, and each model's own reaction to it
        shared = rng.standard_normal((datasets, truth.variants, 3))
        variant = np.arange(clusters) % truth.variants
        a = a + truth.variant_sd * shared[:, variant, 0] + truth.model_variant_sd * shared[:, variant, 1]
        b = b + truth.variant_sd * shared[:, variant, 0] + truth.model_variant_sd * shared[:, variant, 2]
    p_base = special.expit(mu_base + a[..., None])
    p_cand = special.expit(mu_cand + b[..., None])
    shape = (datasets, *design.count.shape, items)
    first = rng.standard_normal(shape)
    second = truth.item_copula * first + np.sqrt(1 - truth.item_copula**2) * rng.standard_normal(shape)
    real = np.arange(items) < design.count[..., None]
    base = ((scipy_stats.norm.cdf(first) < p_base[..., None]) & real).sum(axis=-1)
    cand = ((scipy_stats.norm.cdf(second) < p_cand[..., None]) & real).sum(axis=-1)
    return base.astype(float), cand.astype(float)


def verdict_rates(
    design: Design,
    rule: Rule,
    candidate: Sequence[float],
    *,
    truth: Truth = Truth(),
    datasets: int = DATASETS,
    seed: int = 0,
    probe: int | None = None,
) -> dict[str, float]:
    """Shares of PASS, FAIL and INCONCLUSIVE verdicts (and of datasets where slice ``probe`` FAILs)
    over simulated datasets with the baseline at ``truth.accuracy`` and the candidate at
    ``candidate`` per slice."""
    rng = np.random.default_rng(seed)
    baseline = [truth.accuracy] * len(design.keys)
    counts = {"PASS": 0, "FAIL": 0, "probe": 0}
    for start in range(0, datasets, _CHUNK):
        size = min(_CHUNK, datasets - start)
        base, cand = simulate(rng, design, baseline, candidate, size, truth)
        cluster = truth.cluster_index(design.count.shape[0])
        decision = decide(base, cand, design.count, rule, cluster, bounds=False)
        counts["PASS"] += int(np.sum(decision.verdict == PASS))
        counts["FAIL"] += int(np.sum(decision.verdict == FAIL))
        if probe is not None:
            failed = decision.slice_fails[:, probe] | decision.floor_fails[:, probe]
            counts["probe"] += int(np.sum(failed))
    rates = {name: value / datasets for name, value in counts.items()}
    rates["INCONCLUSIVE"] = 1 - rates["PASS"] - rates["FAIL"]
    return rates


def one_slice(design: Design, drop: float, truth: Truth = Truth()) -> list[float]:
    probe = design.probe_slice()
    return [truth.accuracy - (drop if number == probe else 0.0) for number in range(len(design.keys))]


def gate_power(
    design: Design, rule: Rule, *, truth: Truth = Truth(), datasets: int = DATASETS, seed: int = 0
) -> Power:
    """The probabilities ``rotscope plan`` states for a plan and the gate records beside a verdict
    (``rotscope.gate.view.power_lines`` words them)."""
    if not design.keys:
        return Power(simulated=False, reason="no slices")
    everywhere = len(design.keys)
    same = verdict_rates(
        design, rule, [truth.accuracy] * everywhere, truth=truth, datasets=datasets, seed=seed
    )
    at_margin = verdict_rates(
        design, rule, [truth.accuracy - rule.margin] * everywhere, truth=truth, datasets=datasets, seed=seed
    )
    twice = verdict_rates(
        design,
        rule,
        [truth.accuracy - 2 * rule.margin] * everywhere,
        truth=truth,
        datasets=datasets,
        seed=seed,
    )
    probe = design.probe_slice()
    one = verdict_rates(
        design, rule, one_slice(design, 2 * rule.margin, truth), truth=truth, datasets=datasets, seed=seed,
        probe=probe,
    )  # fmt: skip
    return Power(
        simulated=True,
        datasets=datasets,
        power_level=POWER,
        truth=truth.describe(),
        slices=everywhere,
        clusters=int(design.count.shape[0]),
        instances_per_slice=int((design.count > 0).sum(axis=0).min()),
        margin=rule.margin,
        pass_identical=same["PASS"],
        fail_identical=same["FAIL"],
        fail_one_slice_2x_margin=one["FAIL"],
        one_slice=_key_text(design.keys[probe]),
        fail_margin_everywhere=at_margin["FAIL"],
        pass_margin_everywhere=at_margin["PASS"],
        fail_2x_margin_everywhere=twice["FAIL"],
        detectable_one_slice_drop=detectable_drop(
            design, rule, truth=truth, datasets=datasets // 2, seed=seed
        ),
    )


def detectable_drop(
    design: Design, rule: Rule, *, truth: Truth = Truth(), datasets: int = DATASETS // 2, seed: int = 0
) -> float | None:
    """The smallest drop in one slice (``Design.probe_slice``) that FAILs the gate with ``POWER``, to
    0.01 (bisection on common random numbers); ``None`` when even losing every item does not."""

    def power(drop: float) -> float:
        rates = verdict_rates(design, rule, one_slice(design, drop, truth), truth=truth, datasets=datasets,
                              seed=seed)  # fmt: skip
        return rates["FAIL"]

    low, high = 0.0, truth.accuracy
    if power(high) < POWER:
        return None
    while high - low > 0.01:
        middle = (low + high) / 2
        low, high = (middle, high) if power(middle) < POWER else (low, middle)
    return round(high, 2)


def cases_for_pass(
    design: Design,
    rule: Rule,
    target: float,
    *,
    truth: Truth = Truth(),
    datasets: int = DATASETS,
    seed: int = 0,
    most: int = 1000,
) -> int | None:
    """The fewest cases per task at which an identical candidate PASSes with probability ``target``
    (``None``: not within ``most``)."""

    def passes(cases: int) -> float:
        scaled = design.with_cases(cases)
        rates = verdict_rates(scaled, rule, [truth.accuracy] * len(design.keys), truth=truth,
                              datasets=datasets, seed=seed)  # fmt: skip
        return rates["PASS"]

    high = max(rule.min_instances, 2)
    while passes(high) < target:
        if high >= most:
            return None
        high = min(2 * high, most)
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if passes(middle) < target else (low, middle)
    return high


def _key_text(key: SliceKey) -> str:
    task, length, position, fields = key
    extra = "".join(f" {name}={value}" for name, value in fields)
    return f"{task} {length:,} {position}{extra}"
