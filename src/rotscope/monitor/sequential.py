"""The canary's sequential test: is the endpoint now worse than its baseline, per length bin ×
position bin and pooled, in a way that stays valid however often it is checked?

Each probe re-asks one baseline item. Its **paired difference** ``d = baseline − canary`` (each a
score in [0, 1], so ``d`` in [-1, 1]) is mapped to ``x = (d + 1) / 2`` in [0, 1]; a drop of the
endpoint's accuracy by ``δ`` on a bin's items is a mean of ``x`` of ``(1 + δ) / 2``. Per bin, and
pooled over all probes, a **one-sided confidence sequence** bounds the drop from below: the
betting capital of Waudby-Smith and Ramdas (2023, JRSS-B), as ``rotscope.search.confseq`` (which is
two-sided) uses it, here only the capital that bets on the mean being *above* a candidate ``m``,
``K_t(m) = prod(1 + λ_i (x_i − m))``, each bet ``λ_i ≥ 0`` chosen from the probes before it
(``Bets``) and truncated at 3/4 of the largest that keeps the capital positive. Under any
mean at or below ``m`` it is a nonnegative supermartingale, so by Ville's inequality it ever reaches
``1 / α`` with chance at most ``α``: ``m`` is ruled out once it does, and stays ruled out (the
sequence is intersected over time). Checking after every probe, every hour, for ever does not
raise the false-alarm rate above ``α``.

**Alpha is split across the bins** (Bonferroni): with ``B`` bins and the pooled sequence, each runs
at ``α / (B + 1)``, so the chance that *any* bin ever ALERTs, given the baseline's recorded
outcomes, under no change is at most ``α``. WARN
and ALERT are two margins of the same sequence, not two tests: a bin WARNs once a drop of more
than ``warn`` is ruled in (its lower bound crossed ``warn``), ALERTs once a drop of more than
``fail`` is. A crossed margin stays crossed; a new baseline starts a new sequence.

What the guarantee is conditional on: the baseline's recorded outcomes. The probes draw items of a
bin uniformly, so under an unchanged deterministic endpoint (temperature 0) every ``d`` is 0 and
nothing can cross. An endpoint whose replies vary from call to call makes ``d`` noisy around the
baseline's own luck on its items; ``fail`` must then exceed that luck (the simulation in
``benchmarks/canary_sequential.py`` measures both).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

Status = Literal["OK", "WARN", "ALERT"]
Bets = Literal["growth", "plugin"]
"""How each probe's bet is chosen (both predictable, so both valid): ``growth`` from the recent
probes (the default: an unchanged period costs nothing, so a drop after months is caught as fast as
one on the first day), ``plugin`` the paper's predictable plug-in of ``confseq`` (its capital decays
under no change, which delays a later drop; kept for the simulation's comparison)."""
WINDOW = 50.0
"""Probes the growth bet's recent mean and variance weigh (an exponential window)."""
STATUS_EXIT: Mapping[Status, int] = {"OK": 0, "ALERT": 1, "WARN": 3}
"""The exit code a check's status is (a scheduler acts on it); 2 stays bad input."""
POOLED = "pooled"
"""The name of the sequence over all probes."""
_TRUNCATION = 0.75
"""A bet is at most this share of the largest that keeps the capital positive (as in ``confseq``)."""
_GRID = np.linspace(-1.0, 1.0, 401)
"""Candidate drops whose exclusion gives the shown lower bound (resolution 0.005)."""


def mapped(baseline: NDArray[np.float64], canary: NDArray[np.float64]) -> NDArray[np.float64]:
    """The paired differences ``baseline − canary`` mapped to [0, 1]."""
    difference = np.asarray(baseline, dtype=float) - np.asarray(canary, dtype=float)
    return np.asarray((difference + 1.0) / 2.0, dtype=float)


class DropSequence:
    """One-sided confidence sequences for the drop, updated one probe at a time and vectorised
    over any batch shape (bins, or simulated runs × bins): ``drops`` are the candidate drops
    tested, each ruled out or not. Pure arithmetic, no I/O; the simulation and the canary share it."""

    def __init__(
        self,
        shape: tuple[int, ...],
        alpha: float,
        drops: Sequence[float],
        *,
        bets: Bets = "growth",
        window: float = WINDOW,
    ) -> None:
        if not 0 < alpha < 1:
            raise ValueError("alpha must be in (0, 1)")
        self.alpha = alpha
        self.bets = bets
        self.drops = np.asarray(drops, dtype=float)
        self._m = (1.0 + self.drops) / 2.0
        self._cap = _TRUNCATION / np.maximum(self._m, 1e-12)
        self._limit = math.log(1.0 / alpha)
        self._window = window
        self.n = np.zeros(shape)
        self._total = np.zeros(shape)
        self._squares = np.full(shape, 0.25)
        self._mean = np.full(shape, 0.5)
        self._recent_mean = np.full(shape, 0.5)
        self._recent_variance = np.full(shape, 0.25)
        self._log_capital = np.zeros((*shape, self.drops.size))
        self.ruled_out = np.zeros((*shape, self.drops.size), dtype=bool)

    def _bet(self) -> NDArray[np.float64]:
        """Each entry's bet on each candidate, from the probes before this one (predictable)."""
        if self.bets == "plugin":
            i = self.n + 1.0
            bet = np.sqrt(2.0 * self._limit / (self._squares / i * i * np.log1p(i)))
            return np.minimum(bet[..., None], self._cap)
        # growth: (mean - m) / (variance + (mean - m)^2) of the recent probes, the bet that
        # maximises the capital's growth to second order; never below 0, so an unchanged
        # endpoint (recent mean at or under m) costs the capital nothing
        gap = self._recent_mean[..., None] - self._m
        bet = gap / (self._recent_variance[..., None] + gap**2)
        return np.clip(bet, 0.0, self._cap)

    def update(self, x: NDArray[np.float64], observed: NDArray[np.bool_] | None = None) -> None:
        """One probe's mapped difference ``x`` per entry of the batch; entries where ``observed`` is
        False (no probe of that bin this step) are left as they were."""
        x = np.asarray(x, dtype=float)
        seen = np.ones(self.n.shape, dtype=bool) if observed is None else np.asarray(observed)
        step = np.log1p(self._bet() * (x[..., None] - self._m))
        self._log_capital += np.where(seen[..., None], step, 0.0)
        self.ruled_out |= self._log_capital >= self._limit
        self._squares += np.where(seen, (x - self._mean) ** 2, 0.0)
        self._total += np.where(seen, x, 0.0)
        self.n = np.where(seen, self.n + 1.0, self.n)
        self._mean = (0.5 + self._total) / (self.n + 1.0)
        # the weight of the newest probe: the plain running mean's (the prior counted as one
        # probe) until the window is full, so the first probes move the bet as fast as they can
        weight = np.maximum(1.0 / (self.n + 1.0), 1.0 / self._window)
        deviation = x - self._recent_mean
        self._recent_variance = np.where(
            seen, (1 - weight) * (self._recent_variance + weight * deviation**2), self._recent_variance
        )
        self._recent_mean = np.where(seen, self._recent_mean + weight * deviation, self._recent_mean)

    def crossed(self, drop: float) -> NDArray[np.bool_]:
        """Whether a drop of more than ``drop`` is ruled in (``drop`` one of the tested drops)."""
        where = np.flatnonzero(np.isclose(self.drops, drop))
        if where.size == 0:
            raise ValueError(f"drop {drop} is not one of the tested drops")
        return np.asarray(self.ruled_out[..., int(where[0])])

    def lower_bound(self) -> NDArray[np.float64]:
        """The smallest tested drop not ruled out (the largest tested when all are): the drop is
        above it with the sequence's confidence. Meaningful when ``drops`` is a grid."""
        kept = ~self.ruled_out
        first = np.argmax(kept, axis=-1)
        bound = self.drops[first]
        return np.asarray(np.where(kept.any(axis=-1), bound, self.drops[-1]), dtype=float)


@dataclass(frozen=True)
class Margins:
    """How large a drop (in accuracy, 0-1) a check tolerates."""

    warn: float = 0.01
    """WARN once the drop is surely above this (at 0, a little serving nondeterminism WARNs: the
    baseline's own luck on its items is then a real difference; see the simulation)."""
    fail: float = 0.02
    """ALERT once the drop is surely above this: more than a tolerated drop."""
    alpha: float = 0.05
    """A bound on the chance of a false ALERT (or WARN) anywhere, ever, given the baseline's
    recorded outcomes: while each probe's expected canary score on its item is at least the
    baseline's recorded score there (an endpoint at temperature 0 repeating its replies). An
    endpoint whose replies are redrawn differs from the baseline's own luck on its items, and the
    bound does not cover that (``benchmarks/results/canary_sequential.md``: with a fifth of
    replies redrawn a WARN in 1.1% of simulated 30-day runs; every reply redrawn, an ALERT at a
    0.03 margin in 32%). Split over the bins."""

    def __post_init__(self) -> None:
        if not -1 < self.warn <= self.fail < 1:
            raise ValueError("margins: need -1 < warn <= fail < 1")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be in (0, 1)")


@dataclass(frozen=True)
class BinResult:
    """One bin's sequence after the probes so far."""

    name: str
    probes: int
    baseline: float
    """The mean baseline score of the probes."""
    canary: float
    """The mean canary score of the probes."""
    lower: float
    """The drop's lower confidence bound (baseline − canary, accuracy points)."""
    status: Status


@dataclass(frozen=True)
class Verdict:
    """A check's result: the status, the bins responsible (those at the status), every bin."""

    status: Status
    responsible: tuple[str, ...]
    bins: tuple[BinResult, ...]
    alpha_per_bin: float


def run_sequences(
    where: NDArray[np.int_],
    x_bins: NDArray[np.float64],
    x_pooled: NDArray[np.float64],
    bins: int,
    alpha: float,
    drops: Sequence[float],
    bets: Bets = "growth",
) -> Joined:
    """Each bin's sequence over its own values of ``x_bins`` (``where`` says whose each is) and
    the pooled one over ``x_pooled``, in order. The bins' sequences are independent, so they
    advance in lockstep: the k-th value of every bin at once."""
    per_bin = DropSequence((bins,), alpha, drops, bets=bets)
    own = [x_bins[where == i] for i in range(bins)]
    for k in range(max((len(values) for values in own), default=0)):
        step = np.array([values[k] if k < len(values) else 0.5 for values in own])
        per_bin.update(step, np.array([k < len(values) for values in own]))
    pooled = DropSequence((1,), alpha, drops, bets=bets)
    for value in x_pooled:
        pooled.update(np.array([value]))
    return Joined(per_bin, pooled)


class Joined:
    """The bins' sequences and the pooled one read as one batch (the pooled last)."""

    def __init__(self, per_bin: DropSequence, pooled: DropSequence) -> None:
        self._parts = (per_bin, pooled)
        self.alpha = per_bin.alpha
        self.n = np.concatenate([per_bin.n, pooled.n])

    def crossed(self, drop: float) -> NDArray[np.bool_]:
        return np.concatenate([part.crossed(drop) for part in self._parts])

    def lower_bound(self) -> NDArray[np.float64]:
        return np.concatenate([part.lower_bound() for part in self._parts])


def drops_tested(margins: Margins) -> list[float]:
    """The grid of candidate drops (for the lower bound) with both margins on it."""
    return [float(d) for d in np.unique(np.concatenate([_GRID, [margins.warn, margins.fail]]))]


def status_of(warned: bool, alerted: bool) -> Status:
    return "ALERT" if alerted else "WARN" if warned else "OK"


def sequential_test(
    probes: Sequence[tuple[str, float, float]],
    bins: Sequence[str],
    margins: Margins = Margins(),
    bets: Bets = "growth",
) -> Verdict:
    """The verdict after ``probes`` (``(bin, baseline score, canary score)`` in the order they were
    made) on ``bins`` (every bin the canary probes, so alpha splits the same way from the first
    check on) and the pooled sequence."""
    names = [*bins, POOLED]
    index = {name: i for i, name in enumerate(bins)}
    alpha = margins.alpha / len(names)
    drops = drops_tested(margins)
    unknown = next((name for name, _, _ in probes if name not in index), None)
    if unknown is not None:
        raise ValueError(f"probe of an unknown bin {unknown!r}")
    where = np.array([index[name] for name, _, _ in probes], dtype=int)
    base_scores = np.array([probe[1] for probe in probes], dtype=float)
    canary_scores = np.array([probe[2] for probe in probes], dtype=float)
    x = mapped(base_scores, canary_scores)
    sequence = run_sequences(where, x, x, len(bins), alpha, drops, bets)
    base = np.append(np.bincount(where, base_scores, len(bins)), base_scores.sum())
    canary = np.append(np.bincount(where, canary_scores, len(bins)), canary_scores.sum())
    warned, alerted = sequence.crossed(margins.warn), sequence.crossed(margins.fail)
    lower = sequence.lower_bound()
    results = tuple(
        BinResult(
            name=name,
            probes=int(sequence.n[i]),
            baseline=float(base[i] / sequence.n[i]) if sequence.n[i] else math.nan,
            canary=float(canary[i] / sequence.n[i]) if sequence.n[i] else math.nan,
            lower=float(lower[i]) if sequence.n[i] else -1.0,
            status=status_of(bool(warned[i]), bool(alerted[i])),
        )
        for i, name in enumerate(names)
    )
    status = status_of(bool(warned.any()), bool(alerted.any()))
    responsible = tuple(result.name for result in results if result.status == status and status != "OK")
    return Verdict(status, responsible, results, alpha)
