"""The distance between the facts a case combines (``placement.separations``, a grid axis): which
pieces are its facts, the filler tokens a separation asks for, where the group of facts goes, and
the distance measured between them on a rendered prompt.

A case's facts are its ``support`` pieces (placed by the experiment's rule) in listed order, then
its ``answer`` piece (the grid's): a latent case's anchor and fraction, a join's two tables, a
multi-hop chain's hops. A separation is counted in filler tokens between consecutive facts, as a
depth is a share of the filler: evidence of another role that falls between two facts is not
counted. The grid's depth places the group as a whole, the share of the filler outside it that
precedes it, so every depth holds a separation the length can hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise

from rotscope.evidence_roles import placement_of
from rotscope.types import Case, Span

FACT_PLACEMENTS = ("rule", "grid")
"""The placements of the pieces a case combines: its support pieces, then its answer."""


def fact_ids(case: Case) -> list[str]:
    """The ids of ``case``'s facts in the order they go: support pieces as listed, then the answer
    piece(s); empty where the case has no support piece (nothing to combine)."""
    placed = {e.evidence_id: placement_of(e.role) for e in case.evidence}
    supports = [e.evidence_id for e in case.evidence if placed[e.evidence_id] == "rule"]
    if not supports:
        return []
    return [*supports, *(e.evidence_id for e in case.evidence if placed[e.evidence_id] == "grid")]


def combines_facts(cases: Iterable[Case]) -> bool:
    """Whether any of ``cases`` has facts to combine (``fact_ids``)."""
    return any(len(fact_ids(case)) > 1 for case in cases)


def asked_tokens(separation: int | float, filler_tokens: int) -> int:
    """The filler tokens a separation asks for between consecutive facts: a count as given, a share
    of the haystack's filler tokens rounded."""
    if isinstance(separation, int):
        return separation
    return round(separation * filler_tokens)


def group_depths(count: int, depth: float, gap: int, filler_tokens: int) -> list[float]:
    """Depths of ``count`` facts ``gap`` filler tokens apart, the group's start at the share
    ``depth`` of the filler outside it; ``[]`` where the filler cannot hold the group."""
    span = gap * (count - 1)
    if filler_tokens <= 0 or span > filler_tokens:
        return []
    start = depth * (filler_tokens - span)
    return [round((start + i * gap) / filler_tokens, 6) for i in range(count)]


def measured_gaps(spans: Sequence[Span], facts: Sequence[str]) -> list[int]:
    """Filler tokens between consecutive facts on a rendered prompt, in the facts' order: the tokens
    from one fact's end to the next one's start, less those of any other evidence piece between
    them (negative where the next fact comes first)."""
    by_id = {span.evidence_id: span for span in spans}
    gaps: list[int] = []
    for earlier, later in pairwise(facts):
        first, second = by_id[earlier], by_id[later]
        low, high = sorted((first.token_end, second.token_start))
        inside = sum(
            span.token_end - span.token_start
            for span in spans
            if span.token_start >= low and span.token_end <= high
        )
        sign = 1 if second.token_start >= first.token_end else -1
        gaps.append(sign * (high - low - inside))
    return gaps


def measured_separation(spans: Sequence[Span], facts: Sequence[str]) -> int | None:
    """The separation a rendered prompt reached: the mean filler gap between consecutive facts,
    rounded (the one gap of two facts); ``None`` without two facts."""
    gaps = measured_gaps(spans, facts) if len(facts) > 1 else []
    return round(sum(gaps) / len(gaps)) if gaps else None


def separation_tolerance(asked: int, depth_tolerance: float) -> int:
    """How far a measured gap may be from the asked one: ``depth_tolerance`` of it, at least the
    one token a line boundary may move it by (facts go where a filler line ends)."""
    return max(1, int(depth_tolerance * asked))
