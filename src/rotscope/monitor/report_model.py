"""The typed data of ``rotscope monitor report`` (``monitor.report_data`` builds it, the views
``monitor.report_markdown`` and ``monitor.report_html`` read it): in memory only, no record anyone
else reads, so no schema; the canary's part keeps the stored checks' ``CanaryAlert`` as it is."""

from __future__ import annotations

from typing import Literal

from rotscope.monitor.canary.record import CanaryAlert, CanaryMargins
from rotscope.records._base import Count, Gap, Record, Share

Status = Literal["OK", "WARN", "ALERT"]


class IngestPoint(Record):
    """One bin's ingested records in one time bucket, as ``monitor show`` rates them."""

    bucket: str
    """The hour (``YYYY-MM-DDTHH:00Z``) or day (``YYYY-MM-DD``)."""
    rated: Count
    """Rated records (every outcome but a forbidden claim)."""
    clusters: Count | None
    """Clusters the interval counted; ``None`` where no record carries a ``cluster_id``."""
    answered: Share
    """The answered rate of the rated records."""
    low: Share
    """Its interval's lower bound."""
    high: Share
    """Its upper bound."""


class IngestSeries(Record):
    """A length bin × position bin over time."""

    bin: str
    """``[LO, HI)/P``."""
    points: list[IngestPoint]
    """One per bucket with rated records, in time order."""


class ForbiddenCount(Record):
    """Forbidden claims of one bin in one bucket: counted on their own, never in a rate."""

    bin: str
    """The bin."""
    bucket: str
    """The bucket."""
    forbidden_claim: Count
    """Records reporting a forbidden claim."""


class IngestReport(Record):
    """The ingested outcomes over time."""

    unit: Literal["hour", "day"]
    """The buckets' size: an hour where the data spans at most three days."""
    first_ts: str
    """The earliest record's time (UTC, ISO 8601)."""
    last_ts: str
    """The latest's."""
    records: Count
    """Records in the store."""
    series: list[IngestSeries]
    """One per bin with a rated record, by length then position."""
    forbidden: list[ForbiddenCount]
    """Every bin and bucket with a forbidden claim."""
    forbidden_total: Count
    """Their sum."""


class CheckPoint(Record):
    """One bin's lower bound on the drop at one check."""

    check: Count
    """The check's number."""
    at: str
    """When it was judged."""
    drop_lower: Gap
    """The drop's anytime-valid lower bound."""
    status: Status
    """The bin's status at that check."""


class CheckSeries(Record):
    """A canary bin over its checks."""

    bin: str
    """``LENGTH/P`` or ``pooled``."""
    points: list[CheckPoint]
    """One per check in which the bin had probes."""


class CheckStatus(Record):
    """A finished check's status."""

    check: Count
    """The check's number."""
    at: str
    """When it was judged."""
    status: Status
    """Its status."""


class CheckAlert(CheckStatus):
    """A check that WARNed or ALERTed."""

    responsible: list[str]
    """Its bins at that status."""


class DisagreementRow(Record):
    """A bin where one of canary and ingest ALERTs and the other does not."""

    canary_bin: str
    """The canary's bin."""
    ingest_bin: str
    """The ingest's bin it lies in."""
    canary_status: Status
    """The canary's status of the bin at its latest check."""
    canary_drop_lower: Gap
    """The canary's lower bound on the drop."""
    canary_probes: Count
    """The canary's probes of the bin."""
    ingest_status: Status
    """The ingest's status of its bin."""
    ingest_drop_lower: Gap
    """The ingest's lower bound on the drop."""
    ingest_records: Count
    """Ingested records of the bin since the window."""
    ingest_window_answered: Share | None
    """Their answered rate in the window."""
    ingest_answered: Share | None
    """Their answered rate since."""


class Disagreement(Record):
    """The canary's latest check against the ingest's test over the canary's period."""

    window: str
    """The ingest's reference window, ``FROM..TO``."""
    ingest_status: Status
    """The ingest's status over all bins."""
    records_since: Count
    """Ingested records after the window in bins it tested."""
    bins_shared: Count
    """Length bin × position bins both watch (pooled apart)."""
    rows: list[DisagreementRow]
    """The bins where they disagree."""


class CanaryReport(Record):
    """One canary's finished checks."""

    subject: str
    """The subject probed."""
    baseline: str
    """The baseline run folder."""
    margins: CanaryMargins
    """The latest check's margins."""
    checks: list[CheckStatus]
    """Every finished check, in order."""
    first_started: str
    """When its first finished check started."""
    latest: CanaryAlert
    """The latest check's body."""
    series: list[CheckSeries]
    """Per bin of the latest check, its lower bound per check."""
    alerts: list[CheckAlert]
    """The checks that WARNed or ALERTed."""
    disagreement: Disagreement | None = None
    """Where canary and ingest disagree; ``None`` without ingested records before its period."""


class MonitorReport(Record):
    """Everything ``rotscope monitor report`` shows of a store."""

    store: str
    """The store's path."""
    ingest: IngestReport | None
    """The ingested outcomes; ``None`` in a store without any."""
    canaries: list[CanaryReport]
    """Per canary its checks."""
