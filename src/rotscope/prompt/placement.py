"""Target depths of every evidence piece of a case: the answer piece at the grid's depth, the
others by the experiment's placement rule. Deterministic for a seed, case and layout."""

from __future__ import annotations

import random

from rotscope.config.experiment import PlacementConfig
from rotscope.errors import BadInput
from rotscope.evidence_roles import check_role
from rotscope.position import Position
from rotscope.prompt.separation import asked_tokens, fact_ids, group_depths
from rotscope.types import Case, Layout

_DECOY_DRAWS = 200
REGION_WIDTH = 0.5
"""The share of the haystack that ``spread`` pieces cover (a task over a region, ``aggregation``)."""


def _clamp(depth: float) -> float:
    return min(max(depth, 0.0), 1.0)


def _support_depths(count: int, depth: float, rule: PlacementConfig, case_id: str) -> list[float]:
    """Depths of support pieces in listed order; with ``before`` the last listed is nearest."""
    if rule.support == "before":
        return [_clamp(depth - (count - i) * rule.distance) for i in range(count)]
    if rule.support == "opposite":
        return [depth + 0.5 if depth < 0.5 else depth - 0.5] * count
    if len(rule.support_depths) < count:
        raise BadInput(
            f"placement.support_depths: case {case_id} has {count} support pieces but the list has "
            f"{len(rule.support_depths)}"
        )
    return list(rule.support_depths[:count])


def region(depth: float, width: float = REGION_WIDTH) -> tuple[float, float]:
    """The region of ``width`` that the grid's ``depth`` names for ``spread`` pieces: ``depth`` is
    the share of the haystack outside the region that precedes it, as a single piece's depth is
    the share of filler before it (0: the region opens the haystack, 1: it closes it)."""
    low = round(depth * (1.0 - width), 4)
    return low, round(low + width, 4)


def spread_depths(count: int, depth: float, width: float = REGION_WIDTH) -> list[float]:
    """``count`` depths evenly over the region ``depth`` names, first to last (one piece: its middle)."""
    low, high = region(depth, width)
    if count == 1:
        return [round((low + high) / 2, 4)]
    return [round(low + (high - low) * i / (count - 1), 4) for i in range(count)]


def _decoy_depths(count: int, taken: list[float], rule: PlacementConfig, rng: random.Random) -> list[float]:
    """Independent uniform depths, each at least ``decoy_min_gap`` from the answer and each other
    when that is possible; otherwise the best of many draws."""
    chosen: list[float] = []
    for _ in range(count):
        best, best_gap = 0.0, -1.0
        for _ in range(_DECOY_DRAWS):
            candidate = round(rng.random(), 4)
            gap = min((abs(candidate - other) for other in [*taken, *chosen]), default=1.0)
            if gap >= rule.decoy_min_gap:
                best = candidate
                break
            if gap > best_gap:
                best, best_gap = candidate, gap
        chosen.append(best)
    return chosen


def target_depths(
    case: Case, layout: Layout, rule: PlacementConfig, seed: int, filler_tokens: int | None = None
) -> dict[str, float]:
    """Evidence id -> the depth asked for it. A piece with its own ``depth`` keeps it, and at a
    pinned layout that gives each piece's depth (``Case.pin_depths``) every piece takes it; without
    a piece placed at the grid's depth (an ``answer``) every piece goes there (a single needle is
    its own answer piece). A role nobody registered is bad input naming the known ones. A layout
    with a separation (``prompt.separation``) places the case's facts as a group in ``filler_tokens``."""
    pinned = {e.evidence_id: e.depth for e in case.evidence if e.depth is not None}
    return {**_rule_depths(case, layout, rule, seed, filler_tokens), **pinned, **depths_at(case, layout)}


def depths_at(case: Case, layout: Layout) -> dict[str, float]:
    """The pieces' own depths at ``layout`` where the case pins them there (``Case.pin_depths``,
    a failure's layout saved with where each piece sat), else none: a pin matches the layout's
    length and its position (a name or ``@N`` by name, a fraction by value)."""
    for length, spec, depths in case.pin_depths:
        if length != layout.length_tokens:
            continue
        position = Position.parse(spec)
        same = (
            position.name == layout.position
            if position.name is not None
            else (layout.position is None and position.fraction == layout.depth)
        )
        if same:
            return dict(depths)
    return {}


def _rule_depths(
    case: Case, layout: Layout, rule: PlacementConfig, seed: int, filler_tokens: int | None = None
) -> dict[str, float]:
    depth = layout.depth
    if layout.separation is not None and filler_tokens is not None and len(fact_ids(case)) > 1:
        return _separated_depths(case, layout, layout.separation, rule, seed, filler_tokens)
    # Each piece is placed by its role's registered placement (``rotscope.evidence_roles``).
    placed = {
        e.evidence_id: check_role(e.role, f"case {case.case_id}: evidence {e.evidence_id}")
        for e in case.evidence
    }
    spread = [e.evidence_id for e in case.evidence if placed[e.evidence_id] == "spread"]
    if spread and not case.grouped:
        over = dict(zip(spread, spread_depths(len(spread), depth), strict=True))
        return {e.evidence_id: over.get(e.evidence_id, depth) for e in case.evidence}
    if case.grouped or "grid" not in placed.values():
        return {evidence.evidence_id: depth for evidence in case.evidence}
    rng = random.Random(f"{seed}:{case.case_id}:{layout.length_tokens}:{depth}")
    targets: dict[str, float] = {}
    supports = [e for e in case.evidence if placed[e.evidence_id] == "rule"]
    for evidence, target in zip(
        supports, _support_depths(len(supports), depth, rule, case.case_id), strict=True
    ):
        targets[evidence.evidence_id] = target
    for evidence in case.evidence:
        if placed[evidence.evidence_id] == "grid":
            targets[evidence.evidence_id] = depth
        elif placed[evidence.evidence_id] == "before":
            targets[evidence.evidence_id] = round(rng.uniform(0.0, depth), 4)
    decoys = [e for e in case.evidence if placed[e.evidence_id] == "seeded"]
    for evidence, target in zip(decoys, _decoy_depths(len(decoys), [depth], rule, rng), strict=True):
        targets[evidence.evidence_id] = target
    return targets


def _separated_depths(
    case: Case, layout: Layout, separation: int | float, rule: PlacementConfig, seed: int, filler: int
) -> dict[str, float]:
    """The facts as a group, ``separation`` apart (``separation.group_depths``; none where the
    filler cannot hold it: the builder names that layout unplaceable); a superseded piece before
    the group, decoys away from every fact."""
    facts = fact_ids(case)
    placed = group_depths(len(facts), layout.depth, asked_tokens(separation, filler), filler)
    if not placed:
        return {}
    targets = dict(zip(facts, placed, strict=True))
    rng = random.Random(f"{seed}:{case.case_id}:{layout.length_tokens}:{layout.depth}:{separation}")
    for evidence in case.evidence:
        if evidence.evidence_id not in targets and check_role(evidence.role) == "before":
            targets[evidence.evidence_id] = round(rng.uniform(0.0, placed[0]), 4)
    decoys = [e for e in case.evidence if e.evidence_id not in targets]
    for evidence, target in zip(decoys, _decoy_depths(len(decoys), placed, rule, rng), strict=True):
        targets[evidence.evidence_id] = target
    return targets
