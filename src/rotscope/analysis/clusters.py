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
    ``rows``: its haystack variant where more than one and fewer than the instances are used,
    else its instance (a prompt: the keys of one multikey prompt share it). An instance with no
    variant recorded (a row stored before variants were, of a run with several; a family that
    plans its own prompts) or a single shared haystack leaves the instances as clusters, and says
    so in ``note``."""
    variants: dict[str, int | None] = {}
    instances: dict[str, str] = {}
    variant_of: dict[str, int | None] = {}
    unknown = False
    for row in scored(rows):
        variant = row.get("haystack_variant")
        unknown = unknown or variant is None
        variants.setdefault(column(row, key), variant)
        instances.setdefault(column(row, key), row["instance_id"])
        variant_of.setdefault(row["instance_id"], variant)
    count = len(set(instances.values()))
    if unknown:
        return Clusters(instances, "instance", count, "no haystack variant recorded")
    used = len(set(variant_of.values()))
    if 1 < used < len(variant_of):
        return Clusters({k: f"variant {v}" for k, v in variants.items()}, "variant", used)
    if used == 1 and len(variant_of) > 1:
        return Clusters(instances, "instance", count, "one haystack: conditional on it")
    return Clusters(instances, "instance", count)
