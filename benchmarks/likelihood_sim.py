"""Every statistic on the likelihood score (issue 49), on simulated data with a known truth: the
effective-length bracket's coverage and how many instances it needs to place a cliff, beside
accuracy's on the same draws; the gate's false PASS and false FAIL; compare's false "better" or
"worse". Run by hand:

    python benchmarks/likelihood_sim.py [--datasets 2000] [--seed 49]
        [--part fit|bracket|flip|needed|gate|compare] [--data RUN ...] [--slope B ...]

The world. Instance i at length L has a logit ``z_iL = mu_L + u_iL``: ``u_iL = 1.5 (sqrt(rho) s_i +
sqrt(1 - rho) e_iL)`` (a latent ability per instance, correlated ``rho`` between lengths; the
per-length part is the row effect) and, with shared haystack variants, a variant effect of sd 1.0
correlated alike (``benchmarks/bracket_coverage.py``'s world); ``mu_L`` is solved so the
population accuracy is the curve's value at L. Each item's 0/1 outcome is Bernoulli(expit(z)); its
gold answer's probability is

    logit p = INTERCEPT + SLOPE * z + w,   w ~ N(0, ROW_SD^2),

``INSTANCE_SHARE`` of w's variance the instance's (the same at every length and item), the rest
the item's. The outcome and p share z and nothing else: a wrong reply has a lower p only because
its z is lower. Fitted (``fit``, ``--data``) on the bundled model's rows with both scores: niah on
the quick grid (16 cases at 256, 512 and 1,024 tokens, one haystack variant per case; p out of
reach at 1,024 in several cases) and niah's 6 cases at 256 and 1,024 with controls (every fact in
reach), by maximum likelihood with z integrated out (its sd the world's 1.5, a mean per run and
length): INTERCEPT -0.54, SLOPE 0.56 (a case bootstrap's 90%: 0.29 to 0.77), ROW_SD 1.01. A right
reply's own effect on p beyond z is -0.02 (none). What the data do not identify: z's sd (only
SLOPE x 1.5 = 0.84 is; the world keeps bracket_coverage's 1.5), and how the rows' covariance
between lengths (1.26 of 1.68) splits between z's rho and an instance part of w (the world runs rho
0 and 0.9 and takes INSTANCE_SHARE 0.6, the split at rho 0.9; ``--instance-share``, ``--slope`` and
the others rerun a part in another world). The likelihood's truth is its own population curve
(``likelihood_curve``), which falls faster than accuracy's near the top.

Through the project's own functions: the bracket's per-length test (``stats.threshold_margins``,
``stats.margin_bounds`` / ``stats.sign_flip_margin_tests`` / ``stats.cluster_margin_bounds``;
absolute ``stats.score_bounds`` on accuracy and ``stats.instance_score_bounds`` on the likelihood;
``stats.bracket_indices``), each setting's first ``--rows`` datasets also built as rows, put
through ``rows.on_score`` and ``analysis.tasks.effective_lengths`` (they must agree); the gate's
``gate.decision.decide`` (checked against rows -> ``gate.pairing.build_slices`` ->
``gate.judgement.judge_slices``); compare's ``stats.sign_flip_p`` and ``stats.holm_array`` (checked
against ``compare.pairwise.pair_tests`` and ``family_verdicts`` on rows carrying the likelihood).

Measured results: ``benchmarks/results/likelihood_sim.md``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from itertools import combinations
from pathlib import Path
from typing import Any, cast

import numpy as np
from scipy import optimize
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bracket_coverage import (
    INSTANCE_SD,
    VARIANT_SD,
    cluster_labels,
    index_of,
    solve_mu,
    true_index,
    variant_labels,
)

from rotscope.analysis.cells import length_cell
from rotscope.analysis.tasks import NO_SIGNAL_CEILING, NOLIMA_RATIO, RULER_THRESHOLD, effective_lengths
from rotscope.rows import Row, on_score
from rotscope.stats.bracket_ends import (
    BRACKET_CONFIDENCE,
    SIGN_FLIP_FROM,
    SIGN_FLIP_FROM_CONTINUOUS,
    bracket_indices,
    cluster_margin_bounds,
    cluster_score_bounds,
    end_confidence,
    instance_score_bounds,
    margin_bounds,
    score_bounds,
    sign_flip_margin_tests,
    threshold_margins,
)
from rotscope.stats.intervals import proportion_interval
from rotscope.stats.multiplicity import holm_array
from rotscope.stats.randomisation import sign_flip_p

INTERCEPT = -0.54
"""The logit of the gold answer's probability at a latent logit z of 0 (``fit``)."""
SLOPE = 0.56
"""How the logit of p moves with the outcome's latent logit z (``fit``: 0.29 to 0.77, a case
bootstrap's 90%; the product ``SLOPE * INSTANCE_SD`` is what the data identify)."""
ROW_SD = 1.01
"""The sd of the logit of p at the same z (``fit``)."""
INSTANCE_SHARE = 0.6
"""The share of ``ROW_SD``'s variance that is the instance's, the same at every length and item
(``fit``: the residuals' covariance between two lengths of a case, 1.26 of a variance of 1.68,
less what z's own correlation rho explains, (SLOPE * INSTANCE_SD)^2 rho = 0.63 at rho 0.9, over
ROW_SD^2; at rho 0 the data would put all of it on the instance)."""
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(60)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def row_noise(rng: np.random.Generator, shape: tuple[int, ...], instance_axes: tuple[int, ...]) -> np.ndarray:
    """``ROW_SD`` noise of ``shape``, ``INSTANCE_SHARE`` of its variance shared along every axis
    but ``instance_axes`` (the dataset, the run, the instance)."""
    shared = tuple(size if axis in instance_axes else 1 for axis, size in enumerate(shape))
    return ROW_SD * (
        math.sqrt(INSTANCE_SHARE) * rng.standard_normal(shared)
        + math.sqrt(1 - INSTANCE_SHARE) * rng.standard_normal(shape)
    )


def probability(logit: np.ndarray | float, noise: np.ndarray | float) -> np.ndarray:
    """The gold answer's probability of an item whose outcome has latent logit ``logit``."""
    return np.asarray(expit(INTERCEPT + SLOPE * np.asarray(logit) + noise))


def mean_probability(mu: float, sd: float) -> float:
    """The population mean of p where the latent logit is N(mu, sd^2) (Gauss-Hermite)."""
    spread = math.sqrt((SLOPE * sd) ** 2 + ROW_SD**2)
    return float((_WEIGHTS * expit(INTERCEPT + SLOPE * mu + spread * _NODES)).sum())


def likelihood_curve(curve: tuple[float, ...], variants: int = 0) -> tuple[float, ...]:
    """The likelihood's population curve of an accuracy curve (its truth)."""
    sd = float(np.hypot(INSTANCE_SD, VARIANT_SD)) if variants else INSTANCE_SD
    return tuple(1.0 if c >= 1.0 else mean_probability(solve_mu(c, sd), sd) for c in curve)


SHORT = (256, 512, 1024)
LONG = (256, 512, 1024, 2048)
CURVES: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {
    "cliff 0.95/0.95/0.50": (SHORT, (0.95, 0.95, 0.50)),
    "ceiling 0.97/0.97/0.97": (SHORT, (0.97, 0.97, 0.97)),
    "just under 0.90/0.90/0.75": (SHORT, (0.90, 0.90, 0.75)),
    "just over 0.90/0.90/0.78": (SHORT, (0.90, 0.90, 0.78)),
    "gentle 0.95/0.85/0.75/0.60": (LONG, (0.95, 0.85, 0.75, 0.60)),
    "decline 0.95/0.90/0.70": (SHORT, (0.95, 0.90, 0.70)),
    "p just under 0.90/0.90/0.79": (SHORT, (0.90, 0.90, 0.79)),
    "p just over 0.90/0.90/0.81": (SHORT, (0.90, 0.90, 0.81)),
    "flat 0.60/0.60/0.60": (SHORT, (0.60, 0.60, 0.60)),
}
"""Accuracy curves; the likelihood's own curve is ``likelihood_curve`` (the ``p just`` curves put
its last length just under and just over 0.85 of its base: 0.845 and 0.869 there)."""
INSTANCES = (10, 16, 30, 60)
RHOS = (0.0, 0.9)
ITEMS = (1, 3)
VARIANTS = (0, 3)


def fit_rows(folders: list[Path]) -> list[tuple[str, int, float, float]]:
    """Each evidence-present row with a likelihood of ``folders``' runs: (case, group, outcome, logit
    p), the group its run and length."""
    import sqlite3

    found: list[tuple[str, int, float, float]] = []
    groups: list[tuple[int, int]] = []
    for k, folder in enumerate(folders):
        with sqlite3.connect(f"file:{folder / 'run.db'}?mode=ro", uri=True) as db:
            rows = db.execute(
                "select case_id, length_target, outcome, answer_logprob from items "
                "where control = 0 and status = 'ok' and answer_logprob is not null "
                "order by case_id, length_target"
            ).fetchall()
        for case, length, outcome, logprob in rows:
            if (k, length) not in groups:
                groups.append((k, length))
            p = math.exp(logprob)
            found.append(
                (f"{k}/{case}", groups.index((k, length)), float(outcome == "correct"), math.log(p / (1 - p)))
            )
    return found


def _negative_log_likelihood(
    theta: np.ndarray, group: np.ndarray, outcome: np.ndarray, y: np.ndarray
) -> float:
    """Each row: z ~ N(mu_group, INSTANCE_SD^2), outcome ~ Bernoulli(expit(z)), logit p ~ N(a + b z,
    s^2); z integrated out (Gauss-Hermite), the rows taken as independent (a pseudo-likelihood)."""
    from scipy.special import log_expit
    from scipy.stats import norm

    groups = int(group.max()) + 1
    mu, (a, b, log_s) = theta[:groups], theta[groups:]
    z = mu[group][:, None] + INSTANCE_SD * _FIT_NODES[None, :]
    reads = np.where(outcome[:, None] == 1, log_expit(z), log_expit(-z))
    reads = reads + norm.logpdf(y[:, None], a + b * z, math.exp(log_s))
    return float(-np.log((_FIT_WEIGHTS * np.exp(reads)).sum(axis=1)).sum())


def _fit_once(group: np.ndarray, outcome: np.ndarray, y: np.ndarray, start: np.ndarray | None) -> np.ndarray:
    groups = int(group.max()) + 1
    x0 = np.r_[np.ones(groups), 0.0, 0.3, 0.0] if start is None else start
    found = optimize.minimize(_negative_log_likelihood, x0, args=(group, outcome, y), method="L-BFGS-B")
    return np.asarray(found.x)


def fit(folders: list[Path], resamples: int = 50, seed: int = 49) -> dict[str, float]:
    """The world's p from runs with a likelihood (``--score both``): logit p = a + b z + e per row,
    z the outcome's latent logit (sd ``INSTANCE_SD``, the world's; a mean per run and length), e ~
    N(0, s^2), by maximum likelihood; a case bootstrap's 90% of b; the outcome's own effect on p
    beyond z (a fourth term c on a right reply); the residual's covariance between two lengths of a
    case against its variance (the instance's share, which the world's rho and an instance part of
    e would split: not identified)."""
    found = fit_rows(folders)
    case = [row[0] for row in found]
    group = np.array([row[1] for row in found])
    outcome = np.array([row[2] for row in found])
    y = np.array([row[3] for row in found])
    theta = _fit_once(group, outcome, y, None)
    groups = int(group.max()) + 1
    mu, (a, b, log_s) = theta[:groups], theta[groups:]

    def with_right(extra: np.ndarray) -> float:
        return _negative_log_likelihood(extra[:-1], group, outcome, y - extra[-1] * outcome)

    right = optimize.minimize(with_right, np.r_[theta, 0.0], method="L-BFGS-B").x[-1]
    residual = y - (a + b * mu[group])
    by_case: dict[str, list[float]] = {}
    for key, value in zip(case, residual, strict=True):
        by_case.setdefault(key, []).append(float(value))
    products = [u * v for values in by_case.values() for i, u in enumerate(values) for v in values[i + 1 :]]
    rng = np.random.default_rng(seed)
    keys = list(by_case)
    index = {key: [i for i, c in enumerate(case) if c == key] for key in keys}
    slopes = []
    for _ in range(resamples):
        drawn = np.array([i for j in rng.integers(0, len(keys), len(keys)) for i in index[keys[j]]])
        slopes.append(_fit_once(group[drawn], outcome[drawn], y[drawn], theta)[groups + 1])
    return {
        "rows": float(len(y)),
        "wrong replies": float((outcome == 0).sum()),
        "right replies' mean logit p": float(y[outcome == 1].mean()),
        "wrong replies' mean logit p": float(y[outcome == 0].mean()),
        "a": float(a),
        "b": float(b),
        "b 5%": float(np.quantile(slopes, 0.05)),
        "b 95%": float(np.quantile(slopes, 0.95)),
        "b x INSTANCE_SD": float(b * INSTANCE_SD),
        "s": math.exp(log_s),
        "c (a right reply's own effect)": float(right),
        "residual variance": float(np.mean(residual**2)),
        "residual covariance between lengths": float(np.mean(products)),
        **{f"mu group {k}": float(m) for k, m in enumerate(mu)},
    }


_FIT_NODES, _FIT_WEIGHTS = np.polynomial.hermite_e.hermegauss(40)
_FIT_WEIGHTS = _FIT_WEIGHTS / _FIT_WEIGHTS.sum()


def simulate(
    rng: np.random.Generator, curve: tuple[float, ...], rho: float, n: int, items: int, datasets: int,
    variants: int = 0,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Per item: outcomes and probabilities, shape (datasets, n, lengths, items)."""
    sd = float(np.hypot(INSTANCE_SD, VARIANT_SD)) if variants else INSTANCE_SD
    mu = np.array([solve_mu(p, sd) for p in curve])
    shared = rng.standard_normal((datasets, n, 1))
    own = rng.standard_normal((datasets, n, len(curve)))
    effect = INSTANCE_SD * (np.sqrt(rho) * shared + np.sqrt(1 - rho) * own)
    if variants:
        used = min(variants, n)
        common = rng.standard_normal((datasets, used, 1))
        apart = rng.standard_normal((datasets, used, len(curve)))
        effect = (
            effect
            + (VARIANT_SD * (np.sqrt(rho) * common + np.sqrt(1 - rho) * apart))[
                :, variant_labels(n, variants)
            ]
        )
    logit = mu + effect
    chance = expit(logit)[..., None]
    outcome = (rng.random((datasets, n, len(curve), items)) < chance).astype(float)
    noise = row_noise(rng, (datasets, n, len(curve), items), (0, 1))
    return outcome, probability(logit[..., None], noise)


def brackets(
    x: np.ndarray, items: int, relative: bool, continuous: bool, labels: np.ndarray | None,
    flip_from: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(lower index, upper index, signal) per dataset as ``analysis.bracket`` decides them; ``x``
    the instance means (datasets, n, lengths), ``continuous`` the likelihood's rules; ``flip_from``
    moves the sign-flip test's threshold (a study; by default rotscope's rule, ``SIGN_FLIP_FROM``
    or on a continuous score ``SIGN_FLIP_FROM_CONTINUOUS``)."""
    if flip_from is None:
        flip_from = SIGN_FLIP_FROM_CONTINUOUS if continuous else SIGN_FLIP_FROM
    datasets, n, count = x.shape
    one_sided = end_confidence(BRACKET_CONFIDENCE)
    if relative:
        fail = 1 - (1 - one_sided) / (count - 1)
        margins = np.moveaxis(threshold_margins(x[..., 1:], x[..., :1], NOLIMA_RATIO), -1, 1)
        groups = np.arange(n) if labels is None else labels
        if len(set(groups.tolist())) >= flip_from:
            flip_passes, flip_fails = sign_flip_margin_tests(margins, groups, one_sided, fail)
            lower = np.where(flip_passes, 0.0, -1.0)
            fail_upper = np.where(flip_fails, -1.0, 0.0)
        elif labels is None:
            lower, _ = margin_bounds(margins, one_sided)
            _, fail_upper = margin_bounds(margins, fail)
        else:
            lower, _ = cluster_margin_bounds(margins, labels, one_sided)
            _, fail_upper = cluster_margin_bounds(margins, labels, fail)
        passes = np.concatenate([np.ones((datasets, 1), bool), lower >= 0], axis=1)
        fails = np.concatenate([np.zeros((datasets, 1), bool), fail_upper < 0], axis=1)
        base = x[..., 0]
        if labels is not None:  # the base's 95% interval clustered (``stats.mean_interval``)
            highs = cluster_score_bounds(base, labels, end_confidence(0.95))[1]
        elif continuous:  # the cell's interval on the cases (``analysis.tasks._base_interval``)
            highs = cluster_score_bounds(base, np.arange(n), end_confidence(0.95))[1]
        else:
            counts = np.rint(base.sum(axis=1) * items).astype(int)
            highs = np.array([proportion_interval(k / items, n)[1] for k in range(n * items + 1)])[counts]
        signal = (base.sum(axis=1) > 0) & (highs >= NO_SIGNAL_CEILING)
    else:
        fail = 1 - (1 - one_sided) / count
        means = np.moveaxis(x, -1, 1)
        if labels is not None:
            passes = cluster_score_bounds(means, labels, one_sided)[0] >= RULER_THRESHOLD
            fails = cluster_score_bounds(means, labels, fail)[1] < RULER_THRESHOLD
        elif continuous:
            passes = instance_score_bounds(means, one_sided)[0] >= RULER_THRESHOLD
            fails = instance_score_bounds(means, fail)[1] < RULER_THRESHOLD
        else:
            counts = np.rint(x.sum(axis=1) * items).astype(int)
            table = [score_bounds(k / items, n, one_sided)[0] for k in range(n * items + 1)]
            fail_table = [score_bounds(k / items, n, fail)[1] for k in range(n * items + 1)]
            passes = np.array(table)[counts] >= RULER_THRESHOLD
            fails = np.array(fail_table)[counts] < RULER_THRESHOLD
        signal = np.ones(datasets, bool)
    low, high = bracket_indices(passes, fails)
    return low, high, signal


def as_rows(outcome: np.ndarray, p: np.ndarray, lengths: tuple[int, ...], variants: int) -> list[Row]:
    """One dataset's items as rows with their likelihood (``answer_logprob``)."""
    n, _, items = outcome.shape
    rows = [
        {"task": "niah", "case_id": f"c{case}", "instance_id": f"c{case}", "item": item,
         "length_target": length, "depth": item / max(1, items - 1), "position": None, "status": "ok",
         "judge_verdict": None, "outcome": "correct" if outcome[case, j, item] else "incorrect",
         "category": None if outcome[case, j, item] else "wrong",
         "haystack_variant": case % variants if variants else None,
         "answer_logprob": float(np.log(p[case, j, item]))}
        for case in range(n) for j, length in enumerate(lengths) for item in range(items)
    ]  # fmt: skip
    return cast(list[Row], rows)


def check_rows(
    outcome: np.ndarray, p: np.ndarray, found: dict[tuple[str, bool], tuple[np.ndarray, ...]],
    lengths: tuple[int, ...], variants: int, rows: int,
) -> None:  # fmt: skip
    """The first ``rows`` datasets through ``rows.on_score`` and ``analysis.tasks``: the same ends."""
    for d in range(min(rows, outcome.shape[0])):
        stored = as_rows(outcome[d], p[d], lengths, variants)
        for score in ("accuracy", "likelihood"):
            chosen = on_score(stored, score)
            per_length = {n: length_cell(n, [r for r in chosen if r["length_target"] == n]) for n in lengths}
            effective = effective_lengths(per_length, chosen)
            for definition in effective.definitions or []:
                relative = definition.definition.startswith("nolima")
                low, high, signal = found[(score, relative)]
                bracket = definition.bracket
                assert bracket is not None
                if bracket.state == "no-signal":
                    assert not signal[d], (score, definition.definition, d)
                    continue
                ends = (index_of(bracket.low, lengths, -1), index_of(bracket.high, lengths, len(lengths)))
                assert ends == (low[d], high[d]), (score, definition.definition, d, ends, low[d], high[d])


def coverage(
    low: np.ndarray, high: np.ndarray, signal: np.ndarray, truth: int, count: int
) -> dict[str, float]:
    claims = int(signal.sum())
    return {
        "claims": claims,
        "coverage": ((low <= truth) & (truth < high) & signal).sum() / max(1, claims),
        "low_miss": ((low > truth) & signal).sum() / max(1, claims),
        "high_miss": ((high <= truth) & signal).sum() / max(1, claims),
        "placed": (~((low <= 0) & (high >= count)) & signal).sum() / max(1, claims),
    }


def bracket_part(args: argparse.Namespace) -> None:
    print("| curve | items | rho | n | variants | definition | truth | accuracy: coverage | placed "
          "| likelihood: coverage | low misses | high misses | claims | placed |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    worst: dict[tuple[str, int], tuple[float, str]] = {}
    for variants in VARIANTS:
        rng = np.random.default_rng([args.seed, variants])
        for name, (lengths, curve) in CURVES.items():
            for items in ITEMS:
                for rho in RHOS:
                    for n in INSTANCES:
                        outcome, p = simulate(rng, curve, rho, n, items, args.datasets, variants)
                        labels = cluster_labels(n, variants)
                        x = {"accuracy": outcome.mean(axis=-1), "likelihood": p.mean(axis=-1)}
                        found = {
                            (score, relative): brackets(
                                x[score], items, relative, score == "likelihood", labels
                            )
                            for score in x
                            for relative in (True, False)
                        }
                        check_rows(outcome, p, found, lengths, variants, args.rows)
                        if args.flip_study:  # the likelihood's relative test from --flip-from clusters
                            found[("likelihood", True)] = brackets(
                                x["likelihood"], items, True, True, labels, args.flip_from
                            )
                        for relative in (True, False):
                            definition = (
                                f"nolima-{NOLIMA_RATIO}" if relative else f"absolute-{RULER_THRESHOLD}"
                            )
                            truth_acc = true_index(lengths, curve, relative)
                            scaled = likelihood_curve(curve, variants)
                            truth_lik = true_index(lengths, scaled, relative)
                            acc = coverage(*found[("accuracy", relative)], truth_acc, len(lengths))
                            lik = coverage(*found[("likelihood", relative)], truth_lik, len(lengths))
                            key = (definition, variants)
                            if lik["claims"] >= 100 and lik["coverage"] < worst.get(key, (2.0, ""))[0]:
                                worst[key] = (lik["coverage"], f"{name}, {items} item(s), rho {rho}, n {n}")
                            shown = lengths[truth_lik] if truth_lik >= 0 else f"<{lengths[0]}"
                            print(
                                f"| {name} | {items} | {rho} | {n} | {variants} | {definition} | {shown} "
                                f"| {acc['coverage']:.3f} | {acc['placed']:.3f} | {lik['coverage']:.3f} "
                                f"| {lik['low_miss']:.3f} | {lik['high_miss']:.3f} | {lik['claims']} "
                                f"| {lik['placed']:.3f} |",
                                flush=True,
                            )
    print("\nworst likelihood coverage over settings with >= 100 claims:")
    for (definition, variants), (value, where) in sorted(worst.items()):
        print(f"- {definition}, {variants} variants: {value:.3f} ({where})")


FLIP_CURVES = (
    "cliff 0.95/0.95/0.50",
    "decline 0.95/0.90/0.70",
    "ceiling 0.97/0.97/0.97",
    "just under 0.90/0.90/0.75",
    "p just under 0.90/0.90/0.79",
    "p just over 0.90/0.90/0.81",
    "flat 0.60/0.60/0.60",
)
FLIP_SIZES = tuple(range(6, 17))


def flip_part(args: argparse.Namespace) -> None:
    """The likelihood's relative bracket with the sign-flip test at every cluster count from 6 to
    16 (one haystack per case: the cases are the clusters; with 3 shared variants there are 3
    clusters, below any threshold studied), beside the shipped rule on the same draws: a threshold
    K is valid where every size from K up covers."""
    datasets = args.datasets
    print(f"{datasets} datasets per setting, one haystack per case; each dataset's first n instances")
    print("| curve | items | rho | n | truth | sign-flip: coverage | low misses | high misses | placed "
          f"| from {SIGN_FLIP_FROM}: coverage | placed |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst: dict[int, tuple[float, str]] = {}
    for name in FLIP_CURVES:
        lengths, curve = CURVES[name]
        truth = true_index(lengths, likelihood_curve(curve), True)
        for items in ITEMS:
            for rho in RHOS:
                rng = np.random.default_rng([args.seed, FLIP_CURVES.index(name), items, int(rho * 10)])
                _, p = simulate(rng, curve, rho, FLIP_SIZES[-1], items, datasets)
                x = p.mean(axis=-1)
                for n in FLIP_SIZES:
                    flipped = coverage(*brackets(x[:, :n], items, True, True, None, n), truth, len(lengths))
                    shipped = coverage(
                        *brackets(x[:, :n], items, True, True, None, SIGN_FLIP_FROM), truth, len(lengths)
                    )
                    if flipped["coverage"] < worst.get(n, (2.0, ""))[0]:
                        worst[n] = (flipped["coverage"], f"{name}, {items} item(s), rho {rho}")
                    print(
                        f"| {name} | {items} | {rho} | {n} | {lengths[truth] if truth >= 0 else '<'} "
                        f"| {flipped['coverage']:.3f} | {flipped['low_miss']:.3f} "
                        f"| {flipped['high_miss']:.3f} "
                        f"| {flipped['placed']:.3f} | {shipped['coverage']:.3f} | {shipped['placed']:.3f} |",
                        flush=True,
                    )
    se = math.sqrt(0.95 * 0.05 / datasets)
    print(
        f"\nworst sign-flip coverage per size (MC se at 0.95: {se:.4f}; "
        f"within noise: >= {0.95 - 1.96 * se:.3f}):"
    )
    for n, (value, where) in sorted(worst.items()):
        print(f"- {n}: {value:.3f} ({where})")
    for k in FLIP_SIZES:
        low = min(worst[n][0] for n in FLIP_SIZES if n >= k)
        print(f"- from {k}: worst {low:.3f} {'ok' if low >= 0.95 - 1.96 * se else 'below'}")


NEEDED_SIZES = (*range(4, 17), *range(18, 41, 2), *range(44, 81, 4), *range(88, 121, 8))
"""The sizes at which each dataset's first instances are bracketed."""


def needed_part(args: argparse.Namespace) -> None:
    """The fewest of a dataset's first instances at which the relative bracket places the cliff
    (narrower than "the base to beyond the longest"), per score; the median over datasets."""
    name = args.needed_curve
    lengths, curve = CURVES[name]
    datasets = args.needed_datasets
    flip = args.flip_from
    print(f"{name}, one haystack per case, {datasets} datasets, sizes {NEEDED_SIZES[0]}"
          f"..{NEEDED_SIZES[-1]}; median (quartiles) of the fewest instances that place it; the likelihood's "
          f"sign-flip from {flip} clusters")  # fmt: skip
    print("| items | rho | accuracy | likelihood | ratio of medians | placed by 120: accuracy, likelihood |")
    print("|---|---|---|---|---|---|")
    for items in args.items:
        for rho in args.rhos:
            rng = np.random.default_rng([args.seed, items, int(rho * 10)])
            outcome, p = simulate(rng, curve, rho, NEEDED_SIZES[-1], items, datasets)
            needed: dict[str, np.ndarray] = {}
            for score, values in (("accuracy", outcome.mean(axis=-1)), ("likelihood", p.mean(axis=-1))):
                first = np.full(datasets, np.inf)
                for n in NEEDED_SIZES:
                    continuous = score == "likelihood"
                    low, high, signal = brackets(
                        values[:, :n], items, True, continuous, None, flip if continuous else SIGN_FLIP_FROM
                    )
                    placed = ~((low <= 0) & (high >= len(lengths))) & signal
                    first = np.where(np.isinf(first) & placed, n, first)
                needed[score] = first
            a, lk = needed["accuracy"], needed["likelihood"]

            def show(v: np.ndarray) -> str:
                q = np.quantile(v, [0.25, 0.5, 0.75])
                return "/".join(">120" if np.isinf(x) else f"{x:g}" for x in q)

            ratio = np.median(lk) / np.median(a)
            print(f"| {items} | {rho} | {show(a)} | {show(lk)} | {ratio:.3f} "
                  f"| {np.isfinite(a).mean():.3f}, {np.isfinite(lk).mean():.3f} |", flush=True)  # fmt: skip


# --- the gate -------------------------------------------------------------------------------

GATE_SLICES = 6


def gate_world(
    rng: np.random.Generator, datasets: int, cases: int, accuracy: float, shift: float, variants: int,
    identical: bool = False,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """[datasets, cases, slices] gold probabilities of a baseline and a candidate (one item per case
    and slice, gate_tests' shape): instance sd 1.5 logit correlated 0.9 between the runs, item
    copula 0.5 within a case, ``shift`` on the candidate's logit; ``identical``: the candidate's
    probabilities are the baseline's (a bit-identical rerun)."""
    sd = float(np.hypot(INSTANCE_SD, VARIANT_SD)) if variants else INSTANCE_SD
    mu = solve_mu(accuracy, sd)
    common = rng.standard_normal((datasets, cases, 1))
    effect = []
    for _ in range(2):
        own = rng.standard_normal((datasets, cases, 1))
        case = INSTANCE_SD * (np.sqrt(0.9) * common + np.sqrt(0.1) * own)
        item = rng.standard_normal((datasets, cases, GATE_SLICES))
        effect.append(case + 0.5 * item)
    if variants:
        v = VARIANT_SD * rng.standard_normal((datasets, variants, 1))[:, np.arange(cases) % variants]
        w = [
            0.5 * rng.standard_normal((datasets, variants, 1))[:, np.arange(cases) % variants]
            for _ in range(2)
        ]
        effect = [effect[k] + v + w[k] for k in range(2)]
    noise = [row_noise(rng, (datasets, cases, GATE_SLICES), (0, 1)) for _ in range(2)]
    base = probability(mu + effect[0], noise[0])
    if identical:
        return base, base.copy()
    return base, probability(mu + shift + effect[1], noise[1])


def shift_for(accuracy: float, loss: float, variants: int) -> float:
    """The candidate's logit shift whose population mean probability is the baseline's less ``loss``
    (Gauss-Hermite over every effect of ``gate_world``: case, item, variant and model x variant)."""
    sd = float(np.hypot(INSTANCE_SD, VARIANT_SD)) if variants else INSTANCE_SD
    mu = solve_mu(accuracy, sd)
    spread = float(np.sqrt(sd**2 + 0.25 + (0.25 if variants else 0.0)))

    def mean_at(shift: float) -> float:
        return mean_probability(mu + shift, spread)

    target = mean_at(0.0) - loss
    return float(optimize.brentq(lambda shift: mean_at(shift) - target, -20, 5))


def check_gate(seed: int) -> None:
    """``decide`` on arrays against the gate's path on rows carrying the likelihood."""
    from benchmarks.gate_power import runs
    from benchmarks.gate_tests import design_of

    from rotscope.config.experiment import GateConfig
    from rotscope.gate.decision import Rule, decide
    from rotscope.gate.judgement import judge_slices
    from rotscope.gate.pairing import build_slices

    rng = np.random.default_rng(seed)
    for variants in (0, 3):
        base, cand = gate_world(rng, 3, 12, 0.9, -0.3, variants)
        design = design_of(12)
        rule = Rule(margin=0.05, alpha=0.05, floor=0.0, min_instances=5)
        index = np.arange(12) % variants if variants else None
        fast = decide(base, cand, design.count, rule, index)
        for d in range(3):
            baseline, candidate = runs(
                design, np.ones((12, GATE_SLICES)), np.ones((12, GATE_SLICES)), variants
            )
            for run, values in ((baseline, base[d]), (candidate, cand[d])):
                for row in run.rows:
                    column = design.keys.index(
                        next(
                            k for k in design.keys if (k[1], k[2]) == (row["length_target"], row["position"])
                        )
                    )
                    row["answer_logprob"] = float(np.log(values[int(row["case_id"][1:]), column]))
                    row["score_value"] = float(values[int(row["case_id"][1:]), column])
            slices, _ = build_slices(baseline, candidate, [])
            pooled = judge_slices(slices, GateConfig(margin=0.05, floor=0.0, min_instances=5))
            assert pooled.p_noninferior is not None
            assert abs(pooled.p_noninferior - float(fast.pooled.p_noninferior[d])) < 1e-9, (variants, d)
    print(
        "check: decide's pooled p on arrays equals build_slices -> judge_slices "
        "on likelihood rows (6 datasets)"
    )


def gate_part(args: argparse.Namespace) -> None:
    from benchmarks.gate_tests import design_of

    from rotscope.gate.decision import FAIL, PASS, Rule, decide

    check_gate(args.seed)
    datasets = args.datasets
    print(f"{datasets} datasets per setting; the likelihood's population mean drops by the loss")
    print("| margin | variants | accuracy | cases | candidate | PASS | FAIL | MC se |")
    print("|---|---|---|---|---|---|---|---|")
    for margin in (0.15, 0.05):
        rule = Rule(margin=margin, alpha=0.05, floor=0.10, min_instances=10)
        for variants in (0, 3):
            for accuracy in (0.30, 0.90, 0.97):
                for cases in (10, 16, 30, 75):
                    design = design_of(cases)
                    index = np.arange(cases) % variants if variants else None
                    truths = {"identical": 0.0, "bit-identical": 0.0, "loss = margin": margin,
                              "loss = 2x margin": 2 * margin}  # fmt: skip
                    for label, loss in truths.items():
                        sd = float(np.hypot(INSTANCE_SD, VARIANT_SD)) if variants else INSTANCE_SD
                        if mean_probability(solve_mu(accuracy, sd), sd) - loss < 0.02:
                            continue
                        rng = np.random.default_rng([args.seed, int(margin * 100), variants, cases])
                        shift = shift_for(accuracy, loss, variants) if loss else 0.0
                        base, cand = gate_world(rng, datasets, cases, accuracy, shift, variants,
                                                identical=label == "bit-identical")  # fmt: skip
                        verdict = decide(base, cand, design.count, rule, index, bounds=False).verdict
                        passed, failed = float(np.mean(verdict == PASS)), float(np.mean(verdict == FAIL))
                        se = math.sqrt(max(passed * (1 - passed), failed * (1 - failed), 0.0025) / datasets)
                        print(f"| {margin} | {variants} | {accuracy} | {cases} | {label} | {passed:.3f} "
                              f"| {failed:.3f} | {se:.3f} |", flush=True)  # fmt: skip


# --- compare --------------------------------------------------------------------------------

COMPARE_LENGTHS = (256, 512, 1024)


def compare_world(
    rng: np.random.Generator, datasets: int, models: int, n: int, shared: bool, accuracy: float, depths: int
) -> np.ndarray:
    """[datasets, models, lengths, n, depths] probabilities of equal models (compare_tests' world:
    instance sd 1.5 correlated 0.8, variant sd 1.0, model x variant sd 0.5)."""
    variants = 3 if shared else n
    variant = np.arange(n) % variants
    sd = float(np.sqrt(1.5**2 + 1.0 + 0.25))
    mu = float(
        optimize.brentq(lambda m: float((_WEIGHTS * expit(m + sd * _NODES)).sum()) - accuracy, -15, 15)
    )
    common = rng.normal(size=(datasets, 1, n))
    own = rng.normal(size=(datasets, models, n))
    a = 1.5 * (np.sqrt(0.8) * common + np.sqrt(0.2) * own)
    v = 1.0 * rng.normal(size=(datasets, 1, variants))[..., variant]
    w = 0.5 * rng.normal(size=(datasets, models, variants))[..., variant]
    logit = mu + (a + v + w)[:, :, None, :, None]
    noise = row_noise(rng, (datasets, models, len(COMPARE_LENGTHS), n, depths), (0, 1, 3))
    return probability(logit, noise)


def compare_p(p: np.ndarray, shared: bool) -> np.ndarray:
    """Per (dataset, pair, length) the sign-flip p on the rule's clusters, as compare computes it."""
    models, n = p.shape[1], p.shape[3]
    means = p.mean(axis=-1)
    diffs = np.stack([means[:, j] - means[:, i] for i, j in combinations(range(models), 2)], axis=1)
    if shared:
        variant = np.arange(n) % 3
        totals = np.stack([diffs[..., variant == h].sum(axis=-1) for h in range(3)], axis=-1)
        sizes = np.array([(variant == h).sum() for h in range(3)], dtype=float)
    else:
        order = sorted(range(n), key=lambda i: f"t/c{i}")
        totals, sizes = diffs[..., order], np.ones(n)
    return np.asarray(sign_flip_p(totals, sizes))


def check_compare(seed: int) -> None:
    from rotscope.compare.pairwise import family_verdicts, pair_tests

    rng = np.random.default_rng(seed)
    for shared, n in ((False, 16), (True, 16), (False, 6)):
        p = compare_world(rng, 3, 3, n, shared, 0.9, 3)
        fast = compare_p(p, shared)
        for d in range(3):
            runs: list[list[Row]] = []
            for m in range(3):
                rows = [
                    {"task": "t", "case_id": f"c{i}", "instance_id": f"c{i}", "control": 0,
                     "length_target": length, "position": f"{k / 10:.1f}", "depth": k / 10, "trial": 0,
                     "filler": None, "status": "ok", "haystack_variant": i % 3 if shared else i,
                     "outcome": "correct", "answer_logprob": float(np.log(p[d, m, j, i, k]))}
                    for j, length in enumerate(COMPARE_LENGTHS) for i in range(n) for k in range(3)
                ]  # fmt: skip
                runs.append(on_score(cast(list[Row], rows), "likelihood"))
            tested = [
                pair_tests(runs[i], runs[j], "t", COMPARE_LENGTHS) for i, j in combinations(range(3), 2)
            ]
            family_verdicts(tested)
            for pair, found in enumerate(tested):
                assert np.allclose([e.p_value for e in found], fast[d, pair]), (shared, n, d, pair)
    print("check: the vectorised sign-flip p equals compare.pairwise's on likelihood rows (9 datasets)")


def compare_part(args: argparse.Namespace) -> None:
    check_compare(args.seed)
    datasets = args.datasets
    print(f"{datasets} datasets per setting; equal models, 3 depths per instance, the quick grid's 3 lengths")
    print("| models | variants | accuracy | n | any false verdict (Holm over pairs x lengths) | MC se |")
    print("|---|---|---|---|---|---|")
    for models in (2, 3):
        for shared in (False, True):
            for accuracy in (0.30, 0.90, 0.97):
                for n in (16, 50):
                    rng = np.random.default_rng([args.seed, models, int(shared), n, int(accuracy * 100)])
                    p = compare_world(rng, datasets, models, n, shared, accuracy, 3)
                    raw = compare_p(p, shared)
                    d, pairs, lengths = raw.shape
                    held = holm_array(raw.reshape(d, pairs * lengths))
                    rate = float((held <= 0.05).any(axis=-1).mean())
                    se = math.sqrt(max(rate * (1 - rate), 0.0025) / datasets)
                    print(f"| {models} | {'3 shared' if shared else 'one per case'} | {accuracy} | {n} "
                          f"| {rate:.3f} | {se:.3f} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--needed-datasets", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--rows", type=int, default=5, help="datasets per setting also run through rows")
    parser.add_argument("--part", choices=("fit", "bracket", "flip", "needed", "gate", "compare"), nargs="*",
                        default=["fit", "bracket", "flip", "needed", "gate", "compare"])  # fmt: skip
    parser.add_argument("--needed-curve", default="cliff 0.95/0.95/0.50", choices=list(CURVES))
    parser.add_argument("--flip-from", type=int, default=SIGN_FLIP_FROM_CONTINUOUS,
                        help="the likelihood's sign-flip threshold (a study)")  # fmt: skip
    parser.add_argument("--items", type=int, nargs="*", default=list(ITEMS))
    parser.add_argument("--rhos", type=float, nargs="*", default=[0.0, 0.5, 0.9])
    parser.add_argument("--flip-study", action="store_true",
                        help="the bracket part's likelihood with --flip-from")  # fmt: skip
    parser.add_argument(
        "--data",
        type=Path,
        nargs="*",
        default=[Path("/tmp/views-quick"), Path("/tmp/lk5")],
        help="run folders (--score both) to fit the world's p on",
    )
    for name in ("intercept", "slope", "row_sd", "instance_share"):
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=float, help="the world's, for a sensitivity run"
        )
    args = parser.parse_args()
    for name in ("intercept", "slope", "row_sd", "instance_share"):
        if getattr(args, name) is not None:
            globals()[name.upper()] = getattr(args, name)
    started = time.perf_counter()
    data = [folder for folder in args.data if (folder / "run.db").exists()]
    if "fit" in args.part and data:
        found = fit(data, seed=args.seed)
        print(f"fit on {', '.join(map(str, data))}: " + ", ".join(f"{k} {v:.3f}" for k, v in found.items()))
    print(
        f"the world: INTERCEPT {INTERCEPT}, SLOPE {SLOPE}, ROW_SD {ROW_SD}, INSTANCE_SHARE {INSTANCE_SHARE}"
    )
    parts: dict[str, Any] = {"bracket": bracket_part, "flip": flip_part, "needed": needed_part,
                             "gate": gate_part, "compare": compare_part}  # fmt: skip
    for name in args.part:
        if name in parts:
            print(f"\n## {name}\n")
            parts[name](args)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
