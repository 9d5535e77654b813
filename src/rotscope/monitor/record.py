"""The monitor's rates (``rotscope monitor show --json STORE``): outcome rates of a monitoring
store broken down by length bin, evidence-position bin and each further dimension, with intervals;
forbidden claims counted on their own, never in a rate."""

from __future__ import annotations

from typing import Literal

from rotscope.records import RecordKind
from rotscope.records._base import Count, Gap, Record, Share


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


class WindowMargins(Record):
    """What the comparison tolerates."""

    warn: Gap
    """WARN once a drop of the answered rate above this is ruled in."""
    fail: Gap
    """ALERT once a drop above this is ruled in."""
    alpha: Share
    """The chance of a false ALERT anywhere, ever, while the units after the window are
    independent draws with the window's per-unit answered rate (no change); split over the bins."""


class WindowBin(Record):
    """One bin (length bin / position bin, or ``pooled``) against the window."""

    bin: str
    """``[LO, HI)/LO-HI`` (length bin / position bin) or ``pooled``."""
    window_records: Count
    """Rated records of the bin in the window."""
    window_answered: Share | None
    """Their answered rate."""
    window_units: Count | None = None
    """The window's units (conversations, or hour blocks) with records in the bin; absent in
    records written before the test counted units."""
    reference: Share
    """The lower bound (one-sided, half the bin's alpha) of the window's per-unit answered rate
    (the mean over its units of each one's answered share; the cluster t on units): the
    sequence's reference. In records written before units were counted, the record rate's Wilson
    bound."""
    records: Count
    """Rated records of the bin after the window in units entered into the sequence."""
    units: Count | None = None
    """The units entered into the bin's sequence (complete, in the order they began); absent in
    older records."""
    answered: Share | None
    """The answered rate of those records; null when there are none."""
    unit_answered: Share | None = None
    """The per-unit answered rate of the entered units (what the sequence tests); null when none."""
    drop_lower: Gap
    """The drop's anytime-valid lower bound (the window's per-unit rate minus the one since; in
    older records, of record rates)."""
    status: Literal["OK", "WARN", "ALERT"]
    """The bin's status: its lower bound against the margins."""


class WindowComparison(Record):
    """The records after a baseline window against the window's (``--baseline-window``)."""

    window: str
    """``FROM..TO`` as given."""
    status: Literal["OK", "WARN", "ALERT"]
    """The worst bin's status."""
    responsible: list[str]
    """The bins at that status (empty when OK)."""
    margins: WindowMargins
    """The margins and alpha."""
    alpha_per_bin: Share
    """Alpha of each bin with window records and of the pooled sequence."""
    skipped_records: Count
    """Later records in bins the window has none of (not tested)."""
    unit: str | None = None
    """What one value of the sequences is: ``conversation`` (records sharing a ``cluster_id``),
    ``hour block`` (records without one, by the hour their time falls in), or ``conversation or
    hour block``; absent in records written when each record was one value."""
    waiting_units: Count | None = None
    """Later units not entered yet: still open (a conversation with a record in the last 30
    minutes, an hour block not over) or begun after one that is."""
    waiting_records: Count | None = None
    """Their records in tested bins."""
    bins: list[WindowBin]
    """Every bin with window records, in length order, then ``pooled``."""


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
    baseline_window: WindowComparison | None = None
    """Present with ``--baseline-window``: the later records against the window's, by the canary's
    sequential test, unpaired."""


RECORD = RecordKind("monitor", MonitorRates, "rotscope monitor rates", "`rotscope monitor show --json STORE`")
"""The record as registered (the ``rotscope.records`` entry point)."""
