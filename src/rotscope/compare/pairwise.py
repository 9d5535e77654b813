"""Two models on the same items: the paired difference per length (``stats.paired_gap`` of their
instance means over the items both answered), a two-sided p-value of its adjusted t, and Holm's
correction across the lengths of the pair, which decides each length's verdict.

Items pair on (case, length, position, trial); an item in error in either run is left out of both.
Each instance (a prompt's case at a length) is one pair: its items at several positions are
averaged first, so they are never counted as independent (as the paired statistics everywhere in
rotscope do)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rotscope.compare.record import PairLength
from rotscope.position import Position
from rotscope.rows import Row
from rotscope.stats.intervals import adjusted_t_parts
from rotscope.stats.multiplicity import holm
from rotscope.stats.paired import paired_gap

ALPHA = 0.05
"""The family-wise error rate of a pair's verdicts across its lengths (Holm)."""
PAIR_METHOD = (
    "adjusted t on paired instance differences (each instance its own cluster, as the gate pairs), "
    "two-sided; Holm across the pair's lengths"
)

Verdict = Literal["better", "worse", "no difference shown", "too few pairs"]
"""A length's verdict for the second model of a pair against the first."""


def item_key(row: Row) -> tuple[Any, ...]:
    """What pairs an item of one run with the other's: (case, length, position, trial)."""
    position = Position.from_stored(row["position"], row["depth"]).label
    filler = row.get("filler")
    return (
        row["case_id"],
        int(row["length_target"]),
        f"{filler}/{position}" if filler else position,
        row["trial"],
    )


def _probes(rows: Iterable[Row], task: str) -> dict[tuple[Any, ...], Row]:
    return {item_key(row): row for row in rows if row["task"] == task and not row["control"]}


def _means(pairs: Sequence[tuple[str, float, float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Each instance's mean correctness in the first and the second run, over its paired items."""
    first: dict[str, list[float]] = defaultdict(list)
    second: dict[str, list[float]] = defaultdict(list)
    for instance, a, b in pairs:
        first[instance].append(a)
        second[instance].append(b)
    return (
        {key: sum(values) / len(values) for key, values in first.items()},
        {key: sum(values) / len(values) for key, values in second.items()},
    )


def two_sided_p(differences: Sequence[float]) -> float:
    """Two-sided p-value of "the mean paired difference is 0" under the adjusted t of
    ``paired_gap`` (``stats.adjusted_t_parts``: never of zero spread, so all-equal pairs give 1)."""
    parts = adjusted_t_parts(np.asarray(differences, dtype=float))
    one_sided = min(float(parts.p_above(0.0)), float(parts.p_below(0.0)))
    return min(1.0, 2.0 * one_sided)


@dataclass(frozen=True)
class LengthDifference:
    """The second model's accuracy minus the first's at one length, on the items both answered."""

    length: int
    first_accuracy: float | None
    second_accuracy: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    pairs: int
    p_value: float | None
    p_holm: float | None = None
    verdict: Verdict = "too few pairs"

    def record(self) -> PairLength:
        """The length's entry of the comparison record."""
        return PairLength(**self.__dict__)


def length_differences(
    first: Iterable[Row], second: Iterable[Row], task: str, lengths: Sequence[int], *, alpha: float = ALPHA
) -> list[LengthDifference]:
    """Per length, the paired difference (second minus first) of one task's probes, with each
    length's verdict after Holm's correction across the lengths that have enough pairs."""
    left, right = _probes(first, task), _probes(second, task)
    found = []
    for length in lengths:
        pairs = [
            (row["instance_id"], float(row["outcome"] == "correct"), float(other["outcome"] == "correct"))
            for key, row in left.items()
            if key[1] == length
            and (other := right.get(key)) is not None
            and row["status"] == "ok"
            and other["status"] == "ok"
        ]
        a, b = _means(pairs)
        gap = paired_gap(a, b)
        tested = not gap.too_few  # fewer than MIN_PAIRS instances: no interval, no test
        found.append(
            LengthDifference(
                length=length,
                first_accuracy=sum(a.values()) / len(a) if a else None,
                second_accuracy=sum(b.values()) / len(b) if b else None,
                difference=gap.estimate,
                ci_low=gap.low,
                ci_high=gap.high,
                pairs=gap.pairs,
                p_value=two_sided_p([b[key] - a[key] for key in sorted(a)]) if tested else None,
            )
        )
    return with_verdicts(found, alpha)


def with_verdicts(found: Sequence[LengthDifference], alpha: float = ALPHA) -> list[LengthDifference]:
    """Each length's Holm-adjusted p-value (across the tested lengths) and its verdict: the second
    model ``better`` or ``worse`` where the adjusted p is at most ``alpha``, else ``no difference
    shown``; ``too few pairs`` where nothing was tested."""
    tested = [entry for entry in found if entry.p_value is not None]
    adjusted = dict(
        zip((entry.length for entry in tested), holm([e.p_value or 0.0 for e in tested], alpha), strict=True)
    )
    result = []
    for entry in found:
        if entry.p_value is None:
            result.append(entry)
            continue
        p = adjusted[entry.length]
        verdict: Verdict = "no difference shown"
        if p <= alpha and entry.difference is not None and entry.difference != 0:
            verdict = "better" if entry.difference > 0 else "worse"
        result.append(LengthDifference(**{**entry.__dict__, "p_holm": p, "verdict": verdict}))
    return result
