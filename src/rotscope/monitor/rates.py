"""The rates ``rotscope monitor show`` prints: each rated outcome's share of a group's rated
records (every outcome but ``forbidden_claim``), per length bin (powers of two), per
evidence-position bin (``position_bins`` equal parts of [0, 1] of the mean quantile: thirds by
default) and per value of each further dimension.

Intervals are the project's own: Wilson on records where no record of the group carries a
``cluster_id``; otherwise the cluster-robust adjusted t of ``stats.intervals``
(``cluster_t_from_totals``: its centre, with one pseudo-cluster at each bound) on the clusters
(requests of one conversation share a cause; a record without a ``cluster_id`` is a cluster of its
own), made to hold where a few conversations are very long (``clustered_interval``). A forbidden
claim is counted, per group and in all, on its own: never averaged into a rate."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import stats as scipy_stats

from rotscope.errors import BadInput
from rotscope.monitor.record import Breakdown, Group, MonitorRates, Rate
from rotscope.monitor.schema import OUTCOMES, RATED_OUTCOMES
from rotscope.monitor.store import SCHEMA_VERSION, MonitorStore
from rotscope.stats.intervals import CELL_PSEUDO_WEIGHT, proportion_interval

KNOWN_DIMENSIONS = ("language", "risk", "evidence_count", "hops", "model_digest", "template_digest")
_FORBIDDEN = OUTCOMES.index("forbidden_claim")


def length_bin(tokens: int) -> tuple[int, str]:
    low = 1 << (tokens.bit_length() - 1)
    return low, f"[{low}, {2 * low})"


def position_bin(position: float, bins: int) -> tuple[int, str]:
    index = min(int(position * bins), bins - 1)
    return index, f"{index / bins:.2f}-{(index + 1) / bins:.2f}"


class Tally:
    """A group's counts per outcome, and per cluster where records carry one."""

    __slots__ = ("clusters", "counts", "singles")

    def __init__(self) -> None:
        self.counts = [0] * len(OUTCOMES)
        self.clusters: dict[str, list[int]] = {}
        self.singles = 0  # rated records without a cluster id

    def add(self, outcome: int, cluster: str | None) -> None:
        self.counts[outcome] += 1
        if outcome == _FORBIDDEN:
            return
        if cluster is None:
            self.singles += 1
        else:
            self.clusters.setdefault(cluster, [0] * len(OUTCOMES))[outcome] += 1


_MAX_LEVERAGE = 0.95
"""A cluster's leverage is capped here (one cluster holding nearly every record)."""


def clustered_interval(
    totals: NDArray[np.float64],
    sizes: NDArray[np.float64],
    *,
    confidence: float,
    weight: float = CELL_PSEUDO_WEIGHT,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The rate's interval from each cluster's total and size (clusters on the last axis, any
    leading axes: the simulation runs thousands of datasets through it).

    The centre and pseudo-clusters of ``stats.cluster_t_from_totals`` (which it widens by
    ``G / (G − 1)`` in variance where all ``G`` clusters have one size), with two changes for
    unequal sizes, chosen by simulation (``benchmarks/monitor_rates.py``; ``docs/statistics.md``,
    "Production monitoring"): each cluster's squared residual divided by ``1 − h`` (``h = size /
    records``, its leverage: CR2), and the t's degrees of freedom at most the Satterthwaite df of
    that variance under clusters whose means vary alike, ``(Σ a)² / Σ a²`` with ``a = size² /
    (1 − h)``: a few very long conversations leave few degrees of freedom however many short ones
    there are. Before, the t took one df per cluster and covered 0.73-0.86 with heavy-tailed
    sizes (0.52 where 1% of 100 conversations held 2,000 requests each)."""
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    count = sizes.sum(axis=-1)
    groups = sizes.shape[-1]
    total = count + 2 * weight
    centre = (totals.sum(axis=-1) + weight) / total
    leverage = np.minimum(sizes / count[..., None], _MAX_LEVERAGE)
    residual = totals - sizes * centre[..., None]
    squares = (residual**2 / (1 - leverage)).sum(axis=-1) + weight * (centre**2 + (1 - centre) ** 2)
    effective = groups + 2 * weight * groups / count
    standard_error = np.sqrt(squares / total**2 * effective / (effective - 1))
    share = sizes**2 / (1 - leverage)
    df = np.maximum(np.minimum(effective - 1, share.sum(axis=-1) ** 2 / (share**2).sum(axis=-1)), 1.0)
    half = scipy_stats.t.ppf(0.5 + confidence / 2, df) * standard_error
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def _interval(tally: Tally, outcome: int, rated: int, confidence: float) -> tuple[float, float]:
    if not tally.clusters or rated == 0:
        return proportion_interval(tally.counts[outcome], rated, confidence)
    cluster_counts = list(tally.clusters.values())
    sizes = [sum(c) - c[_FORBIDDEN] for c in cluster_counts]
    totals = [c[outcome] for c in cluster_counts]
    clustered = sum(totals)
    singles_hit = tally.counts[outcome] - clustered
    totals += [1] * singles_hit + [0] * (tally.singles - singles_hit)
    sizes += [1] * tally.singles
    low, high = clustered_interval(
        np.array(totals, dtype=float), np.array(sizes, dtype=float), confidence=confidence
    )
    return float(np.clip(round(float(low), 12), 0, 1)), float(np.clip(round(float(high), 12), 0, 1))


def group_rates(value: str, tally: Tally, confidence: float) -> Group:
    forbidden = tally.counts[_FORBIDDEN]
    rated = sum(tally.counts) - forbidden
    rates = {}
    for index, name in enumerate(RATED_OUTCOMES):
        low, high = _interval(tally, index, rated, confidence)
        count = tally.counts[index]
        rates[name] = Rate(count=count, rate=count / rated if rated else 0.0, low=low, high=high)
    clusters = len(tally.clusters) + tally.singles if tally.clusters else None
    return Group(
        value=value,
        records=rated + forbidden,
        rated=rated,
        forbidden_claim=forbidden,
        clusters=clusters,
        rates=rates,
    )


def rates(
    store: MonitorStore, *, by: Sequence[str] = (), position_bins: int = 3, confidence: float = 0.95
) -> MonitorRates:
    """The ``monitor`` record of ``store``: rates by length, by position and by each dimension in
    ``by`` (every dimension the records carry where ``by`` is empty)."""
    index = {name: number for number, name in enumerate(OUTCOMES)}
    tallies: dict[str, dict[tuple[int | str, str], Tally]] = defaultdict(lambda: defaultdict(Tally))
    total = forbidden = 0
    first: str | None = None
    last: str | None = None
    wanted = set(by)
    for length, position, outcome, cluster, *known, labels, ts in store.outcomes():
        total += 1
        number = index[outcome]
        forbidden += number == _FORBIDDEN
        first = ts if first is None or ts < first else first
        last = ts if last is None or ts > last else last
        tallies["length"][length_bin(length)].add(number, cluster)
        tallies["position"][position_bin(position, position_bins)].add(number, cluster)
        dims = [
            (name, value) for name, value in zip(KNOWN_DIMENSIONS, known, strict=True) if value is not None
        ]
        if labels != "{}":
            dims += json.loads(labels).items()
        for name, value in dims:
            if wanted and name not in wanted:
                continue
            key = (value, str(value)) if isinstance(value, int) else ("", value)
            tallies[name][key].add(number, cluster)
    missing = sorted(name for name in wanted if name not in tallies)
    if missing:  # a typo is refused, not a breakdown silently left out
        raise BadInput(f"--by {missing[0]!r}: no record of {store.path} has that dimension")
    order = ["length", "position"]
    order += [name for name in KNOWN_DIMENSIONS if name in tallies]
    order += sorted(name for name in tallies if name not in order)
    breakdowns = [
        Breakdown(
            dimension=name,
            groups=[group_rates(key[1], tallies[name][key], confidence) for key in sorted(tallies[name])],
        )
        for name in order
        if name in tallies
    ]
    return MonitorRates(
        schema_version=SCHEMA_VERSION,
        records=total,
        first_ts=first,
        last_ts=last,
        confidence=confidence,
        forbidden_claim=forbidden,
        breakdowns=breakdowns,
    )


def lines(record: MonitorRates) -> list[str]:
    """``record`` as terminal lines: per dimension a line per value, each rated outcome's rate and
    interval; forbidden claims on their own line."""
    out = [f"{record.records} records, {record.first_ts or '-'} to {record.last_ts or '-'}"]
    out.append(f"forbidden_claim: {record.forbidden_claim} records (counted on its own, in no rate)")
    level = f"{record.confidence:.0%}"
    for breakdown in record.breakdowns:
        out.append(f"by {breakdown.dimension} (rates of rated records, {level} intervals):")
        for group in breakdown.groups:
            parts = [
                f"{name} {rate.rate:.1%} [{rate.low:.1%}, {rate.high:.1%}]"
                for name, rate in group.rates.items()
            ]
            clustered = f", {group.clusters} clusters" if group.clusters is not None else ""
            extra = f"; forbidden_claim {group.forbidden_claim}" if group.forbidden_claim else ""
            out.append(f"  {group.value}: n={group.rated}{clustered}: {', '.join(parts)}{extra}")
    return out
