"""Statistics on independent instances: Wilson intervals and effective length."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from statsmodels.stats.proportion import proportion_confint


def wilson(k: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` independent instances.

    ``k`` may be fractional when each instance contributes its mean over repeated items, so
    that 270/270 items over 30 instances is judged as 30/30, not 270/270.
    """
    if n <= 0:
        return (0.0, 1.0)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    return (float(low), float(high))


def base_score(scores: Mapping[int, float], base_lengths: Sequence[int] = (250, 500, 1000)) -> float:
    """Mean score at ``base_lengths`` that were tested; else at every length up to 1K; else the shortest."""
    lengths = sorted(scores)
    chosen = [length for length in base_lengths if length in scores]
    chosen = chosen or [length for length in lengths if length <= 1000] or lengths[:1]
    return sum(scores[length] for length in chosen) / len(chosen)


def effective_length(
    scores: Mapping[int, float],
    *,
    base: float | None = None,
    base_lengths: Sequence[int] = (250, 500, 1000),
    ratio: float = 0.85,
) -> int | None:
    """NoLiMa's effective length: scanning up from the shortest tested length, the longest length
    before the first whose score falls below ``ratio * base``; ``None`` when the shortest already does.

    ``base`` defaults to the mean score at ``base_lengths`` (those that were tested; else every
    length up to 1K; else the shortest length).
    """
    if not scores:
        return None
    lengths = sorted(scores)
    if base is None:
        base = base_score(scores, base_lengths)
    threshold = ratio * base
    effective: int | None = None
    for length in lengths:
        if scores[length] < threshold:
            break
        effective = length
    return effective
