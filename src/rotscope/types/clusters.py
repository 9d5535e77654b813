"""The one rule for what a statistic clusters on (docs/statistics.md, "Clusters").

Every statistic that treats some rows as independent of others asks this module which cluster a
row belongs to: the summary's cells and gaps, the bracket, the position effect, the gate's slice
and pooled tests, compare's pairwise tests and the search. A cluster is what the rows share a cause
with:

- a **case**: its evidence-absent and evidence-only controls are the same case (one prompt's
  difficulty), and the questions of one prompt (a bundle, multikey's keys) are one instance of it;
- a **haystack variant**, where the cases of the rows read fewer haystack texts than there are
  cases (``filler.variants``): cases that read one text share its quirks, so they are one cluster.

A single haystack read by every case leaves the cases as clusters: the verdict is then
conditional on that one text, and the views say so (``ONE_HAYSTACK_NOTE``).
"""

from __future__ import annotations

from collections.abc import Mapping

from rotscope.types.case import ABSENT_SUFFIX, EVIDENCE_ONLY_SUFFIX

IMPORTED_BACKEND = "import"
"""The ``backend`` of every row ``rotscope import`` writes: its file's ``instance_id`` names one
instance across tasks (the same document read by two benchmarks is one cluster), where a run's
case ids are each task family's own."""

ONE_HAYSTACK_NOTE = "one haystack: conditional on it"
NO_VARIANT_NOTE = "no haystack variant recorded"


def case_cluster(task: str, instance_id: str, *, imported: bool = False) -> str:
    """The case an instance belongs to, named with its task (an imported row's instance is the
    file's, across tasks): its controls join it."""
    for suffix in (ABSENT_SUFFIX, EVIDENCE_ONLY_SUFFIX):
        instance_id = instance_id.removesuffix(suffix)
    return instance_id if imported else f"{task}/{instance_id}"


def variant_cluster(variant: int) -> str:
    """The cluster of every case that read haystack variant ``variant``."""
    return f"variant {variant}"


def shares_variants(variant_of_case: Mapping[str, int | None]) -> bool:
    """Whether the cases (keys) read fewer haystack variants than there are cases, more than one:
    the cases are then clustered on their variant. Unknown variants (rows stored before variants
    were, a family that plans its own prompts) never share."""
    if not variant_of_case or any(variant is None for variant in variant_of_case.values()):
        return False
    used = len(set(variant_of_case.values()))
    return 1 < used < len(variant_of_case)


def cluster_of(
    task: str, instance_id: str, variant: int | None, *, shared: bool, imported: bool = False
) -> str:
    """The cluster of a row of ``task`` and ``instance_id`` that read haystack ``variant``:
    its variant where ``shared`` (``shares_variants`` of the rows the statistic reads), else its
    case (``case_cluster``)."""
    if shared and variant is not None:
        return variant_cluster(variant)
    return case_cluster(task, instance_id, imported=imported)
