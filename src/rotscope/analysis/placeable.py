"""Whether a plan's design lets the effective-length bracket place any length, before a call is
made (issue 48; docs/statistics.md, "The bracket").

The best data a model can give for placing a cliff of the relative threshold are a model right on
every item (every length passes: the lower end is the longest) and one right on every item at the
base and wrong on every item at the next length (that length fails: the upper end is placed). Each
is run through the bracket's own per-length test (``analysis.bracket.margin_test``, clustered by
the one rule of ``types.clusters``) and its ends (``stats.bracket_indices``); where neither is
placed at the plan's size, no data the run can produce will be, and the smallest size that could
is found the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from rotscope.analysis.bracket import margin_test
from rotscope.analysis.tasks import NOLIMA_RATIO
from rotscope.stats.bracket_ends import BRACKET_CONFIDENCE, bracket_indices, end_confidence
from rotscope.types import WorkItem
from rotscope.types.clusters import case_cluster, cluster_of, shares_variants

MOST_CASES = 1000
"""The most cases per task the search for a size that could place a length tries."""


Kind = Literal["right", "lost"]
"""The best data for placing a length: ``right``, a model right on every item (the lower end
reaches the longest length); ``lost``, one right at the base and wrong on every item past it (the
upper end is the next length)."""


@dataclass(frozen=True)
class Placeable:
    """What one task's design lets the bracket place, and what would let it."""

    task: str
    cases: int
    shared_variants: int | None
    """The haystack variants the cases share (clustered on them); ``None``: each case its own."""
    lengths: int
    right: bool
    """A model right on every item is placed: its lower end is the longest length."""
    lost: bool
    """A model that loses every item past the base is placed: the next length is shown to fail."""
    could: dict[Kind, int | None]
    """For each kind not placed, the fewest cases per task that would place it with the same
    haystacks (``None``: none up to ``MOST_CASES``)."""
    could_per_case: dict[Kind, int | None]
    """For each kind that the shared haystacks never could, the fewest cases each with its own."""


KINDS: tuple[Kind, ...] = get_args(Kind)


def placed(
    variant_of_case: Mapping[str, int | None], lengths: int, kind: Kind, ratio: float = NOLIMA_RATIO
) -> bool:
    """Whether the bracket of ``lengths`` tested lengths (the shortest the base) places a length for
    the data of ``kind`` when the cases (keys) read these haystack variants."""
    if lengths < 2 or not variant_of_case:
        return False
    shared = shares_variants(variant_of_case)
    groups = [cluster_of("", case, variant, shared=shared) for case, variant in variant_of_case.items()]
    one_sided = end_confidence(BRACKET_CONFIDENCE)
    fail = 1.0 - (1.0 - one_sided) / (lengths - 1)
    margin = 1.0 - ratio if kind == "right" else -ratio
    test, _ = margin_test(np.full(len(groups), margin), groups, shared, one_sided, fail)
    passes, fails = (test.passes(), False) if kind == "right" else (False, test.fails())
    low, high = bracket_indices(np.array([True, *[passes] * (lengths - 1)]),
                                np.array([False, *[fails] * (lengths - 1)]))  # fmt: skip
    return int(low) > 0 or int(high) < lengths


def _design(cases: int, variants: int | None) -> dict[str, int | None]:
    """``cases`` cases, case ``i`` in variant ``i mod variants`` (each its own where ``None``)."""
    return {f"c{i}": i if variants is None else i % variants for i in range(cases)}


def _fewest(variants: int | None, lengths: int, kind: Kind, start: int) -> int | None:
    if not placed(_design(MOST_CASES, variants), lengths, kind):
        return None  # shared haystacks keep their clusters whatever the cases
    for cases in range(start, MOST_CASES + 1):
        if placed(_design(cases, variants), lengths, kind):
            return cases
    return None


def placeable(items: Iterable[WorkItem]) -> list[Placeable]:
    """Each task's ``Placeable`` from a plan's work items (its measured cases; controls, which the
    bracket does not read, left out), the shortest length its base."""
    variant_of: dict[str, dict[str, int | None]] = {}
    lengths_of: dict[str, set[int]] = {}
    for item in items:
        if item.case.control:
            continue
        task = item.case.task
        variant_of.setdefault(task, {})[case_cluster(task, item.instance_id)] = item.haystack_variant
        lengths_of.setdefault(task, set()).add(item.layout.length_tokens)
    found = []
    for task, variants in variant_of.items():
        lengths = len(lengths_of[task])
        used = len(set(variants.values())) if shares_variants(variants) else None
        cases = len(variants)
        ok = {kind: placed(variants, lengths, kind) for kind in KINDS}
        could = {kind: _fewest(used, lengths, kind, cases + 1) for kind in KINDS if not ok[kind]}
        per_case = {
            kind: _fewest(None, lengths, kind, 2) for kind, size in could.items() if size is None and used
        }
        found.append(Placeable(task, cases, used, lengths, ok["right"], ok["lost"], could, per_case))
    return found
