"""How the views write a score, a gap or a bound: two decimals, a sign on request, ``-`` when
there is none."""

from __future__ import annotations


def score(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"
