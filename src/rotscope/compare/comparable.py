"""Whether run folders can be compared (``rotscope compare``): the same cases, tasks, lengths,
positions, filler and seeds, read from each run's frozen manifest; their subjects (model,
template, system prompt, engine options) may differ. The first field that differs is named.

An imported folder (``meta["imported"]``: results of another harness brought in by
``rotscope import``) has no manifest of its own making: it compares on the lengths and positions
it shares with the others (``common_lengths``), so its grid is not checked here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rotscope.errors import BadInput
from rotscope.plan.manifest import SHARED_GROUPS, deviations

COMPARED_GROUPS = tuple(group for group in SHARED_GROUPS if group not in ("decoding", "analysis"))
"""The manifest groups two compared runs must share (the grid, seeds, case set and filler of the
gate's shared groups), in the order their first difference is looked for; the subject group is
what a comparison compares, and decoding and the gate's analysis settings may differ."""
CONFIG_FIELDS = ("tasks", "lengths", "depths", "trials", "limit", "seed", "filler")
"""What a run stored without a manifest (an older rotscope) is compared on instead: its config's
grid, seed and filler, in this order."""
IMPORTED = "imported"
"""The key of a run's meta that marks it as imported from another harness."""


def is_imported(meta: Mapping[str, Any]) -> bool:
    """Whether the run folder holds imported results (no prompts, no manifest of rotscope's)."""
    return bool(meta.get(IMPORTED))


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def first_difference(left: Mapping[str, Any], right: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """The first field (dotted) in which two runs' metas differ where a comparison needs them equal,
    with its two values; ``None`` when they match. Manifests are compared by ``COMPARED_GROUPS``
    (each read as today's code reads it), runs without one by ``CONFIG_FIELDS`` of their config."""
    if is_imported(left) or is_imported(right):
        return None  # compared on their common cells (``common_lengths``), not on a grid
    planned, actual = left.get("manifest"), right.get("manifest")
    if isinstance(planned, Mapping) and isinstance(actual, Mapping):
        found = deviations(planned, actual, COMPARED_GROUPS)
        return (found[0].field, found[0].planned, found[0].actual) if found else None
    config_left, config_right = left.get("config") or {}, right.get("config") or {}
    for name in CONFIG_FIELDS:
        if config_left.get(name) != config_right.get(name):
            return (f"config.{name}", config_left.get(name), config_right.get(name))
    return None


def check_comparable(names: Sequence[str], metas: Sequence[Mapping[str, Any]]) -> None:
    """Refuse (``BadInput``, one line) runs that cannot be compared: fewer than two, or one that
    differs from the first run in a field a comparison needs equal, naming the first such field."""
    if len(metas) < 2:
        raise BadInput("compare: give two or more run folders (or a --models session folder)")
    for name, meta in zip(names[1:], metas[1:], strict=True):
        found = first_difference(metas[0], meta)
        if found is not None:
            field, first, other = found
            raise BadInput(
                f"compare: {name} is not comparable with {names[0]}: {field} differs "
                f"({names[0]} {_shown(first)}, {name} {_shown(other)})"
            )


def common_lengths(lengths: Sequence[Sequence[int]]) -> list[int]:
    """The lengths every run measured, ascending (equal to each run's own where their grids match)."""
    if not lengths:
        return []
    shared = set(lengths[0]).intersection(*map(set, lengths[1:]))
    return sorted(shared)
