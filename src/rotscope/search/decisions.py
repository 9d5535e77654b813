"""Adaptive search for the effective length: which length to measure next, with how many new
instances, from what has been measured so far. No I/O: the caller measures.

The lengths are a log grid from the range's start to its end, twice as fine as the asked
resolution, so a bracket can close around a length that stays undecided. The search bisects on
the grid index between the last passing and the first failing length (a virtual pass below the
range and a virtual fail above it), adding instances at a length until it is decided: ``batch``
first, then as many as it already has (8, 16, 32, ...). It stops when a pass and a fail above it
are at most ``resolution`` apart, or when the lengths left between them stay undecided at ``cap``.

The statistics stay valid under optional stopping: each grid length carries an anytime-valid
confidence sequence (``confseq``) for the mean over instances (an instance is the cluster: its
mean over the experiment's depths). A relative definition (``nolima-0.85``) is tested on the
paired margin ``x - 0.85·b`` of each instance at the length (``x``) and at the base (``b``), so
the base needs no bounds of its own and pairing removes the spread between instances; an absolute
one on the score. A length passes when the lower bound is at or above the threshold and fails when
the upper bound is below it. Alpha is split by a union bound over every grid length the search
could test (one share more, which nothing spends), so all sequences hold at once with probability
at least ``1 - alpha`` whichever lengths are tested, how often they are looked at and when the
search stops: then a length that passes truly passes and one that fails truly fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from rotscope.search.confseq import confidence_sequence
from rotscope.stats.bracket_ends import threshold_margins

Verdict = Literal["decided", "undecided", "inconclusive"]
State = Literal["pass", "fail", "open"]
BASE = -1
"""The key of the base's measurements among the grid indices."""


def log_grid(lo: int, hi: int, resolution: float, subdivide: int = 1) -> list[int]:
    """Lengths from ``lo`` to ``hi`` (both included), evenly spaced in log length, adjacent ones at
    most ``resolution ** (1 / subdivide)`` apart (as ratios), rounded to whole tokens."""
    steps = max(1, math.ceil(subdivide * math.log(hi / lo) / math.log(resolution) - 1e-9))
    ratio = (hi / lo) ** (1.0 / steps)
    return sorted({round(lo * ratio**j) for j in range(steps + 1)})


@dataclass(frozen=True)
class Threshold:
    """``relative``: a length passes at ``value`` × the base score; else ``value`` is absolute."""

    value: float
    relative: bool

    @classmethod
    def parse(cls, definition: str) -> Threshold:
        """``nolima-0.85`` (relative to the base) or ``absolute-0.7``; ``ValueError`` otherwise."""
        kind, _, number = definition.partition("-")
        if kind not in ("nolima", "absolute"):
            raise ValueError(f"unknown definition {definition!r} (nolima-FRACTION or absolute-SCORE)")
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"definition {definition!r} needs a number after the dash") from None
        if not 0.0 < value <= 1.0:
            raise ValueError(f"definition {definition!r}: the number must be in (0, 1]")
        return cls(value=value, relative=kind == "nolima")

    def margins(self, scores: Sequence[float], base: Sequence[float]) -> list[float]:
        """Each instance's margin over the threshold, rescaled into [0, 1] so a confidence
        sequence for a bounded mean applies: ``(x - t·b + t) / (1 + t)`` for an instance scoring
        ``x`` at the length and ``b`` at the base (paired by instance), ``x`` when absolute."""
        if not self.relative:
            return list(scores)
        t = self.value
        count = min(len(scores), len(base))
        # The grid analysis's bracket tests the same paired margin (``stats.threshold_margins``).
        margins = threshold_margins(np.asarray(scores[:count], float), np.asarray(base[:count], float), t)
        return [float(margin) for margin in (margins + t) / (1 + t)]

    def zero(self) -> float:
        """The rescaled margin at which a length sits exactly on the threshold."""
        return self.value / (1 + self.value) if self.relative else self.value

    def unscale(self, margin: float) -> float:
        """A rescaled margin bound as ``score - t × base`` (relative) or as a score (absolute)."""
        return margin * (1 + self.value) - self.value if self.relative else margin


@dataclass(frozen=True)
class SearchSettings:
    """What the search is asked (one experiment's ``search:`` section, resolved)."""

    lengths: tuple[int, ...]
    """The candidate grid, ascending: ``log_grid(lo, hi, resolution, 2)``, twice as fine as the
    resolution, so a bracket can close around a length that stays undecided."""
    resolution: float
    base_length: int
    threshold: Threshold
    confidence: float = 0.95
    batch: int = 8
    cap: int = 64
    calls_per_instance: int = 1
    """Model calls one instance takes at one length (depths × trials × controls)."""
    max_calls: int | None = None
    max_tokens: int | None = None

    @property
    def alpha_per_length(self) -> float:
        """Alpha split evenly over every grid length, plus one share (the base's, unspent since the
        relative test is paired)."""
        return (1.0 - self.confidence) / (len(self.lengths) + 1)

    def length_of(self, index: int) -> int:
        return self.base_length if index == BASE else self.lengths[index]

    def cost(self, index: int, count: int) -> tuple[int, int]:
        """(calls, prompt tokens, estimated as the length) of ``count`` instances at ``index``."""
        calls = count * self.calls_per_instance
        return calls, calls * self.length_of(index)


@dataclass(frozen=True)
class Decision:
    """What the search concluded at one length after one batch."""

    index: int
    length: int
    instances: int
    score: float
    """The mean of the instance means at this length."""
    base: float
    """The mean of the same instances at the base length (relative definitions)."""
    lower: float
    """Lower confidence bound of ``score - t × base`` (relative) or of ``score`` (absolute)."""
    upper: float
    state: State


@dataclass(frozen=True)
class Step:
    """Measure ``count`` new instances, ``start`` to ``start + count - 1``, at grid ``index``."""

    index: int
    length: int
    start: int
    count: int


@dataclass
class SearchResult:
    verdict: Verdict
    bracket: tuple[int | None, int | None]
    """(longest length that passes, shortest above it that fails); ``None`` for a side outside the
    range (``(None, lo)``: the range's start already fails; ``(hi, None)``: its end passes)."""
    decisions: list[Decision]
    calls: int
    tokens: int
    non_monotone: list[tuple[int, int]] = field(default_factory=list)
    """(shorter failed length, longer length scoring above it beyond noise) pairs found."""
    reason: str = ""
    stopped_by: tuple[str, ...] = ()
    """The budgets (``max_calls``, ``max_tokens``, ``max_cost``) the next step would have passed,
    for an INCONCLUSIVE search; empty otherwise."""

    def final(self) -> dict[int, Decision]:
        """The last decision at each grid length, by grid index."""
        return {d.index: d for d in self.decisions}

    def instances_at_decided(self) -> list[int]:
        """Instances at each grid length the search decided (for the fixed-grid comparison)."""
        return [d.instances for d in self.final().values() if d.state != "open"]


Measure = Callable[[Step], Sequence[float]]
"""Instance means of a step's instances, in order."""


class BudgetSpent(Exception):
    """Raised by a ``Measure`` whose own budget (USD, known only call by call) ran out inside a
    step: the search ends INCONCLUSIVE, like a call or token budget it checks itself."""


class Search:
    """The search's state, replayed from measurements: ``next_step`` says what to measure,
    ``record`` takes the instance means, ``result`` the outcome so far.

    A relative definition compares each instance with itself at the base (paired, as the grid
    analysis pairs lengths): the sequence is on the instance margins ``x - t·b``, so the base
    needs no bounds of its own and pairing removes the spread between instances."""

    def __init__(self, settings: SearchSettings) -> None:
        self.settings = settings
        self.values: dict[int, list[float]] = {}
        self.states: dict[int, State] = {}
        self.decisions: list[Decision] = []
        self.calls = 0
        self.tokens = 0
        self.non_monotone: list[tuple[int, int]] = []
        self._checked: list[tuple[int, int]] = []
        self._bounds: dict[tuple[int, int], tuple[float, float]] = {}

    def _count(self, index: int) -> int:
        return len(self.values.get(index, []))

    def margin_bounds(self, index: int) -> tuple[float, float]:
        """Confidence bounds (rescaled) of the mean margin at grid ``index``."""
        key = (index, self._count(index))
        if key not in self._bounds:
            threshold = self.settings.threshold
            margins = threshold.margins(self.values.get(index, []), self.values.get(BASE, []))
            self._bounds[key] = confidence_sequence(margins, self.settings.alpha_per_length)
        return self._bounds[key]

    def score_bounds(self, index: int) -> tuple[float, float]:
        """Confidence bounds of the score itself (the monotonicity check compares lengths)."""
        key = (-2 - index, self._count(index))
        if key not in self._bounds:
            values = self.values.get(index, [])
            self._bounds[key] = confidence_sequence(values, self.settings.alpha_per_length)
        return self._bounds[key]

    def _indices(self, state: State) -> list[int]:
        return sorted(i for i, s in self.states.items() if s == state)

    def bracket_indices(self) -> tuple[int, int]:
        """(last pass below the first fail, first fail), with -1 and ``len`` as virtual ends."""
        fails = self._indices("fail")
        first_fail = fails[0] if fails else len(self.settings.lengths)
        below = [i for i in self._indices("pass") if i < first_fail]
        return (below[-1] if below else BASE), first_fail

    def closed(self, low: int, high: int) -> bool:
        """Whether the bracket is decided: its ends at most the resolution apart, or the range's
        start failing, or its end passing."""
        lengths = self.settings.lengths
        if low == BASE or high == len(lengths):
            return high - low == 1
        return lengths[high] <= lengths[low] * self.settings.resolution * (1 + 1e-3)

    def _target(self) -> tuple[int, int] | None:
        """The grid index to measure next and the instances it may reach, or ``None`` when
        nothing is left to test. An open length first grows to half the cap; while
        untested lengths remain inside the bracket (first those between a pair flagged by the
        monotonicity check), one stuck there is set aside for them, since a neighbour farther from
        the threshold may close the bracket at the resolution for less; the open lengths left then
        grow to the full cap, the one whose estimate sits farthest from the threshold (in
        half-widths of its bounds) first. Half the cap and that order spent the fewest calls in
        ``benchmarks/search_accuracy.py`` among a quarter, an eighth or all of it, and the
        bracket's middle first."""
        low, high = self.bracket_indices()
        if self.closed(low, high):
            return None
        cap, early = self.settings.cap, max(self.settings.batch, self.settings.cap // 2)
        inside = [i for i, state in self.states.items() if state == "open" and low < i < high]
        for index in inside:
            if self._count(index) < early:
                return index, early
        for shorter, longer in self._checked:
            between = [i for i in range(shorter + 1, longer) if i not in self.states]
            if between:
                return between[len(between) // 2], early
        untested = [i for i in range(low + 1, high) if i not in self.states]
        middle = (low + high) / 2
        if untested:
            return min(untested, key=lambda i: (abs(i - middle), i)), early
        growing = [i for i in inside if self._count(i) < cap]
        if not growing:
            return None
        return max(growing, key=lambda i: (self._clearance(i), -abs(i - middle), -i)), cap

    def _clearance(self, index: int) -> float:
        """How far the point estimate at ``index`` sits from the threshold, in units of its own
        confidence half-width: the open length most likely to be decided by more instances."""
        lower, upper = self.margin_bounds(index)
        margins = self.settings.threshold.margins(self.values[index], self.values.get(BASE, []))
        point = sum(margins) / len(margins)
        return abs(point - self.settings.threshold.zero()) / max((upper - lower) / 2, 1e-9)

    def next_step(self) -> Step | None:
        """The next measurement, or ``None`` when the search is over (see ``result``). The base
        is measured first on every instance a length is about to get, so each is paired (an
        absolute definition needs no base)."""
        chosen = self._target()
        if chosen is None:
            return None
        target, limit = chosen
        start = self._count(target)
        count = min(max(self.settings.batch, start), limit - start)
        base_count = self._count(BASE)
        if self.settings.threshold.relative and base_count < start + count:
            return Step(BASE, self.settings.base_length, base_count, start + count - base_count)
        return Step(target, self.settings.lengths[target], start, count)

    def budgets_passed(self, step: Step) -> tuple[str, ...]:
        """The call and token budgets ``step`` would pass; empty when it is affordable."""
        calls, tokens = self.settings.cost(step.index, step.count)
        settings = self.settings
        over_calls = settings.max_calls is not None and self.calls + calls > settings.max_calls
        over_tokens = settings.max_tokens is not None and self.tokens + tokens > settings.max_tokens
        return ("max_calls",) * over_calls + ("max_tokens",) * over_tokens

    def record(self, step: Step, means: Sequence[float]) -> None:
        """Take a step's instance means and decide its length (a base step decides nothing)."""
        if len(means) != step.count:
            raise ValueError(f"step at {step.length} asked {step.count} instances, got {len(means)}")
        calls, tokens = self.settings.cost(step.index, step.count)
        self.calls += calls
        self.tokens += tokens
        self.values.setdefault(step.index, []).extend(means)
        if step.index == BASE:
            return
        lower, upper = self.margin_bounds(step.index)
        zero = self.settings.threshold.zero()
        state: State = "pass" if lower >= zero else "fail" if upper < zero else "open"
        self.states[step.index] = state
        self.decisions.append(self._decision(step.index, state))
        self._check_monotone()

    def _decision(self, index: int, state: State) -> Decision:
        scores = self.values[index]
        base = self.values.get(BASE, [])[: len(scores)]
        lower, upper = self.margin_bounds(index)
        threshold = self.settings.threshold
        return Decision(
            index=index,
            length=self.settings.lengths[index],
            instances=len(scores),
            score=sum(scores) / len(scores),
            base=sum(base) / len(base) if base else 0.0,
            lower=threshold.unscale(lower),
            upper=threshold.unscale(upper),
            state=state,
        )

    def _check_monotone(self) -> None:
        """A longer length scoring above a shorter failed one beyond noise (its score's lower
        bound above the failed one's upper bound) makes the lengths between them worth testing."""
        for shorter in self._indices("fail"):
            upper = self.score_bounds(shorter)[1]
            for longer in sorted(i for i in self.states if i > shorter):
                if (shorter, longer) not in self._checked and self.score_bounds(longer)[0] > upper:
                    self._checked.append((shorter, longer))
                    lengths = self.settings.lengths
                    self.non_monotone.append((lengths[shorter], lengths[longer]))

    def result(self, *, stopped_by: tuple[str, ...] = ()) -> SearchResult:
        low, high = self.bracket_indices()
        lengths = self.settings.lengths
        bracket = (lengths[low] if low != BASE else None, lengths[high] if high < len(lengths) else None)
        if self.closed(low, high):
            verdict: Verdict = "decided"
            reason = ""
        elif stopped_by:
            verdict, reason = "inconclusive", "the budget was spent before the bracket closed"
        else:
            verdict = "undecided"
            reason = f"lengths inside the bracket stayed undecided at {self.settings.cap} instances"
        return SearchResult(
            verdict=verdict,
            bracket=bracket,
            decisions=list(self.decisions),
            calls=self.calls,
            tokens=self.tokens,
            non_monotone=list(self.non_monotone),
            reason=reason,
            stopped_by=stopped_by if verdict == "inconclusive" else (),
        )


def run_search(settings: SearchSettings, measure: Measure) -> SearchResult:
    """The whole search against ``measure``: deterministic given the measurements, so a resumed
    search that measures the same steps again (from its store) takes the same decisions."""
    search = Search(settings)
    while (step := search.next_step()) is not None:
        if passed := search.budgets_passed(step):
            return search.result(stopped_by=passed)
        try:
            means = measure(step)
        except BudgetSpent:
            return search.result(stopped_by=("max_cost",))
        search.record(step, means)
    return search.result()


def fixed_grid_calls(settings: SearchSettings, instances: int) -> int:
    """Calls of the fixed grid the search replaces: every grid length, ``instances`` each, and the
    base as well for a relative definition (an absolute one needs none)."""
    lengths = len(settings.lengths) + (1 if settings.threshold.relative else 0)
    return lengths * instances * settings.calls_per_instance
