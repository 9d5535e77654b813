"""The gate slices a plan fills: the (task, length, position, slice fields) cells the gate pairs
rows into, each with its clusters (cases) and their item counts; what the gate's power rests on."""

from __future__ import annotations

from collections import defaultdict

from rotscope.plan.workitems import Plan
from rotscope.position import Position
from rotscope.types import EVIDENCE_ONLY_POSITION
from rotscope.types.clusters import case_cluster
from rotscope.types.manifest import SliceShape


def cluster_of(task: str, instance_id: str) -> str:
    """The case an instance belongs to (``rotscope.types.clusters.case_cluster``)."""
    return case_cluster(task, instance_id)


SliceKey = tuple[str, int, str, tuple[tuple[str, str], ...]]
"""(task, length, position label, slice fields): a gate slice, as ``rotscope.gate.pairing`` keys it."""


def gate_slices(plan: Plan, slice_fields: list[str] | None) -> dict[SliceKey, dict[str, int]]:
    """The gate slices the plan fills, each with its clusters' paired item counts, keyed as the
    gate keys rows (``rotscope.gate.pairing``): an evidence-only item at length 0 whatever its
    unpadded length, a question pinned at a depth of its own (multikey) at that depth, a family's
    own filler stream before the position, the rows' slice fields crossed."""
    found: dict[SliceKey, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item in plan.items:
        for _, part in item.case.scored_parts():
            depth, name = (
                part.at_depth
                if part.at_depth and not part.control
                else (item.layout.depth, item.layout.position)
            )
            label = Position.from_stored(name, depth).label
            if item.layout.filler:
                label = f"{item.layout.filler}/{label}"
            length = 0 if name == EVIDENCE_ONLY_POSITION else item.layout.length_tokens
            fields = tuple(
                (key, value)
                for key, value in sorted(part.slices)
                if slice_fields is None or key in slice_fields
            )
            found[(part.task, length, label, fields)][cluster_of(part.task, item.instance_id)] += 1
    return {key: dict(clusters) for key, clusters in sorted(found.items())}


def slice_shape(plan: Plan, slice_fields: list[str] | None = None) -> SliceShape:
    """How many gate slices (``gate_slices``) the plan fills, the fewest instances one of them
    holds and the clusters (cases) in all: what the gate's power rests on."""
    slices = gate_slices(plan, slice_fields)
    clusters = {cluster for found in slices.values() for cluster in found}
    return {
        "slices": len(slices),
        "instances_per_slice": min(map(len, slices.values()), default=0),
        "clusters": len(clusters),
    }
