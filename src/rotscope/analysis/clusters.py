"""What an interval clusters on: the instances (prompts) of a group of rows, and the haystack
variant they share where variants are fewer than instances.

Cases in one haystack variant share its filler, so their outcomes are correlated; counting them as
independent makes an interval too narrow (``benchmarks/cluster_coverage.py``). Questions of one
prompt (a bundle, multikey's keys) are one instance already (``instance_id``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rotscope.records.cells import ClusterOn
from rotscope.rows import Row, column, scored
from rotscope.types.clusters import (
    IMPORTED_BACKEND,
    NO_VARIANT_NOTE,
    ONE_HAYSTACK_NOTE,
    case_cluster,
    shares_variants,
    variant_cluster,
)


@dataclass(frozen=True)
class Clusters:
    """Each instance's cluster, what the clusters are (``variant``, ``instance``) and why."""

    of: Mapping[str, str]
    """Each key's cluster: its instance, or ``variant N``."""
    unit: ClusterOn
    count: int
    note: str | None = None

    def label(self, method: str) -> str:
        """``method`` with the clusters it used, e.g. "adjusted t, clustered on 3 haystack variants"."""
        if self.unit == "variant":
            return f"{method}, clustered on {self.count} haystack variants"
        return method if self.note is None else f"{method} ({self.note})"


def clusters_of(rows: Iterable[Row], key: str = "instance_id") -> Clusters:
    """The cluster of each ``key`` (an instance, or a case paired across lengths) of the scored
    ``rows`` by the one rule of ``rotscope.types.clusters``: its haystack variant where the cases
    read more than one and fewer than there are cases, else its case (a prompt's controls and the
    keys of one multikey prompt share it). An instance with no variant recorded (a row stored
    before variants were, of a run with several; a family that plans its own prompts) or a single
    shared haystack leaves the cases as clusters, and says so in ``note``."""
    variant_of_key: dict[str, int | None] = {}
    case_of_key: dict[str, str] = {}
    variant_of_case: dict[str, int | None] = {}
    unknown = False
    for row in scored(rows):
        variant = row.get("haystack_variant")
        unknown = unknown or variant is None
        case = case_cluster(row["task"], row["instance_id"], imported=row.get("backend") == IMPORTED_BACKEND)
        variant_of_key.setdefault(column(row, key), variant)
        case_of_key.setdefault(column(row, key), case)
        variant_of_case.setdefault(case, variant)
    if shares_variants(variant_of_case):
        of = {k: variant_cluster(v or 0) for k, v in variant_of_key.items()}  # all known when shared
        return Clusters(of, "variant", len(set(of.values())))
    count = len(set(case_of_key.values()))
    if unknown:
        return Clusters(case_of_key, "instance", count, NO_VARIANT_NOTE)
    if len(set(variant_of_case.values())) == 1 and len(variant_of_case) > 1:
        return Clusters(case_of_key, "instance", count, ONE_HAYSTACK_NOTE)
    return Clusters(case_of_key, "instance", count)
