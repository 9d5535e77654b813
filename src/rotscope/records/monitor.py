"""The monitor's rates (``rotscope monitor show --json STORE``): outcome rates of a monitoring
store broken down by length bin, evidence-position bin and each further dimension, with intervals;
forbidden claims counted on their own, never in a rate."""

from __future__ import annotations

from rotscope.records._base import Count, Record, Share


class Rate(Record):
    """One outcome's rate in a group: its count over the group's rated records, and its interval."""

    count: Count
    """Records of the group with this outcome."""
    rate: Share
    """``count`` over the group's rated records (0 where it has none)."""
    low: Share
    """The interval's lower bound: Wilson, or cluster-robust adjusted t on ``cluster_id``."""
    high: Share
    """Its upper bound."""


class Group(Record):
    """The records of one value of a dimension."""

    value: str
    """The value (a length bin ``[lo, hi)``, a position bin ``lo-hi``, a label)."""
    records: Count
    """Records of this value."""
    rated: Count
    """Of them, those whose outcome is rated (every outcome but ``forbidden_claim``)."""
    forbidden_claim: Count
    """Records reporting a forbidden claim: counted here, never in a rate."""
    clusters: Count | None
    """Clusters the interval counted (records without a ``cluster_id`` each their own); null
    where no record of the group has a ``cluster_id`` (Wilson on records)."""
    rates: dict[str, Rate]
    """Per rated outcome (``answered``, ``missing_citation``, ``abstained``, ``truncation_rejected``)."""


class Breakdown(Record):
    """The rates by one dimension."""

    dimension: str
    """``length``, ``position``, a known optional field or a further label's name."""
    groups: list[Group]
    """One per value, in order (bins by their lower bound, labels by name)."""


class MonitorRates(Record):
    """A monitoring store's outcome rates."""

    schema_version: Count
    """The store's schema version."""
    records: Count
    """Records in the store."""
    first_ts: str | None
    """The earliest record's time (UTC, ISO 8601); null in an empty store."""
    last_ts: str | None
    """The latest's."""
    confidence: Share
    """The intervals' confidence level."""
    forbidden_claim: Count
    """Records reporting a forbidden claim, over the whole store: reported on its own."""
    breakdowns: list[Breakdown]
    """The rates by length bin, by evidence-position bin, then by each further dimension."""
