"""``compare --definition ID``: a leaderboard ranked by any effective-length definition of the
summaries (``analysis.definitions``): its length, or its number for ``longscore`` and ``auc-L``,
higher first; a definition with nothing to rank by (no data, no signal, no length) last."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rotscope.errors import BadInput
from rotscope.records.effective import Definition
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis

UNRANKED = ("no-data", "no-signal")


def matches(definition: str, wanted: str) -> bool:
    """``wanted`` names ``definition``: its whole id (``auc-8000``), or the id up to its first '-'
    (``auc``, ``absolute``, ``nolima``), so a name holds across grids and thresholds."""
    return definition == wanted or definition.split("-")[0] == wanted


def definition_of(analysis: TaskAnalysis | None, wanted: str) -> Definition | None:
    """The task's definition ``wanted`` names, if it has one."""
    if analysis is None or analysis.effective_length is None:
        return None
    found = analysis.effective_length.definitions or []
    return next((definition for definition in found if matches(definition.definition, wanted)), None)


def rank_value(definition: Definition | None) -> float:
    """What ranks a model by ``definition``: higher first; ``-inf`` with nothing to rank by, 0 below
    the shortest length (ahead of nothing measured, as the primary ranking does)."""
    if definition is None or definition.state in UNRANKED:
        return -math.inf
    if definition.measure is not None:
        return definition.measure
    return float(definition.value or 0)


def check_definition(summaries: Sequence[Summary], wanted: str) -> None:
    """Refuse (``BadInput``) a definition no task of any run has, naming those they have."""
    held = {
        definition.definition
        for summary in summaries
        for analysis in summary.tasks
        if analysis.effective_length is not None
        for definition in analysis.effective_length.definitions or []
    }
    if not any(matches(definition, wanted) for definition in held):
        raise BadInput(
            f"compare --definition: no definition {wanted!r} (the runs have: {', '.join(sorted(held))})"
        )
