"""NoLiMa's effective length (relative to a base of short lengths) and RULER's (absolute), and
the scan that says what its value means."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

BASE_LENGTHS = (250, 500, 1000)
"""NoLiMa's base: the mean score at these lengths, those of them that were tested."""


def choose_base_lengths(tested: Sequence[int], base_lengths: Sequence[int] = BASE_LENGTHS) -> list[int]:
    """The ``base_lengths`` that were tested (NoLiMa's rule); else the shortest tested length.

    The base is never a pool of the lengths being judged: a 256/512/1,024 grid has base [256], not
    the three lengths whose loss the effective length measures."""
    lengths = sorted(tested)
    return [length for length in base_lengths if length in lengths] or lengths[:1]


def base_score(scores: Mapping[int, float], base_lengths: Sequence[int] = BASE_LENGTHS) -> float:
    """Mean score at the base lengths (see ``choose_base_lengths``)."""
    chosen = choose_base_lengths(list(scores), base_lengths)
    return sum(scores[length] for length in chosen) / len(chosen)


def _last_passing(scores: Mapping[int, float], threshold: float) -> int | None:
    effective: int | None = None
    for length in sorted(scores):
        if scores[length] < threshold:
            break
        effective = length
    return effective


def effective_length(
    scores: Mapping[int, float],
    *,
    base: float | None = None,
    base_lengths: Sequence[int] = BASE_LENGTHS,
    ratio: float = 0.85,
) -> int | None:
    """NoLiMa's effective length: scanning up from the shortest tested length, the longest length
    before the first whose score falls below ``ratio * base``; ``None`` when the shortest already does.

    ``base`` defaults to the mean score at ``base_lengths`` (those that were tested; else the
    shortest length, see ``choose_base_lengths``).
    """
    if not scores:
        return None
    if base is None:
        base = base_score(scores, base_lengths)
    return _last_passing(scores, ratio * base)


EffectiveState = Literal["value", "below-shortest", "at-least-longest", "no-signal", "no-data"]


def scan_effective(scores: Mapping[int, float], threshold: float) -> tuple[int | None, EffectiveState]:
    """The scan of ``effective_length`` with what its value means: ``value`` (a length below the
    threshold follows it), ``at-least-longest`` (nothing tested fell below: the longest tested length,
    a lower limit), ``below-shortest`` (the shortest length already falls below; value ``None``),
    ``no-data`` (no scores)."""
    if not scores:
        return None, "no-data"
    value = _last_passing(scores, threshold)
    if value is None:
        return None, "below-shortest"
    return value, "at-least-longest" if value == max(scores) else "value"


def absolute_effective_length(scores: Mapping[int, float], threshold: float) -> int | None:
    """RULER-style: scanning up, the longest length before the first score below ``threshold``."""
    return _last_passing(scores, threshold)
