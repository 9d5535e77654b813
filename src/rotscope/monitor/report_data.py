"""What ``rotscope monitor report`` shows of a monitoring store, as the typed ``MonitorReport``
(``monitor.report_model``; the views ``monitor.report_html`` and ``monitor.report_markdown`` only
lay it out):

- **ingested rates over time**: the answered rate per length bin × evidence-position bin (the
  bins of ``monitor show --baseline-window``) per time bucket, an hour where the data spans at
  most three days, a day otherwise, each with ``monitor show``'s interval (Wilson, or cluster-robust
  where records carry a ``cluster_id``); forbidden claims counted per bucket and bin on their own,
  in no rate;
- **the canary's checks over time**: per canary and bin, each finished check's anytime-valid lower
  bound on the paired drop, with the warn and fail margins it is judged against;
- **the alerts**: every check that WARNed or ALERTed, with its bins responsible (from the stored
  check bodies);
- **where canary and ingest disagree**: the ingested records of the canary's period (from its first
  check on) tested against those before it (or ``baseline_window``) by ``monitor.window``; a bin
  both watch where one ALERTs and the other does not, both side by side.

A store with only outcomes or only canary checks reports what it has."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from datetime import UTC, datetime
from typing import Literal

from pydantic import ValidationError

from rotscope.errors import BadInput
from rotscope.monitor.canary.record import CanaryAlert
from rotscope.monitor.rates import Tally, group_rates, length_bin, position_bin
from rotscope.monitor.report_model import (
    CanaryReport,
    CheckAlert,
    CheckPoint,
    CheckSeries,
    CheckStatus,
    Disagreement,
    DisagreementRow,
    ForbiddenCount,
    IngestPoint,
    IngestReport,
    IngestSeries,
    MonitorReport,
)
from rotscope.monitor.schema import OUTCOMES
from rotscope.monitor.sequential import POOLED
from rotscope.monitor.store import MonitorStore
from rotscope.monitor.window import window_comparison

POSITION_BINS = 3
"""Thirds, as the canary's position bins, so their bins can be matched."""
HOURLY_SPAN_S = 3 * 86400.0
"""Data spanning at most this is bucketed by hour, longer by day."""
CONFIDENCE = 0.95
"""The intervals' level, as ``monitor show``'s."""
_BUCKET = re.compile(r"^\((\d+(?:\.\d+)?), (\d+(?:\.\d+)?)\]$")


def _epoch(text: str) -> float:
    when = datetime.fromisoformat(text)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _bucket_of(epoch: float, unit: str) -> str:
    when = datetime.fromtimestamp(epoch, UTC)
    return when.strftime("%Y-%m-%dT%H:00Z" if unit == "hour" else "%Y-%m-%d")


def ingest_bin(canary_bin: str) -> str | None:
    """The ingest's bin (``[LO, HI)/P``) a canary bin (``LENGTH/P``, or ``(A, B]/P`` of a length
    histogram) lies in; ``None`` when its lengths straddle two of the ingest's power-of-two bins."""
    length, _, position = canary_bin.rpartition("/")
    if length.isdigit():
        return f"{length_bin(int(length))[1]}/{position}"
    found = _BUCKET.match(length)
    if found is None or math.isinf(float(found[2])):
        return None
    low, high = int(float(found[1])) + 1, int(float(found[2]))
    same = length_bin(max(low, 1)) == length_bin(max(high, 1))
    return f"{length_bin(high)[1]}/{position}" if same else None


def _ingest_series(store: MonitorStore) -> IngestReport | None:
    """The answered rate per bin per time bucket, and the forbidden claims apart."""
    # the span first, then one pass over the records: a million of them are never held at once
    first, last, total = store.connection.execute(
        "SELECT min(epoch), max(epoch), count(*) FROM outcomes"
    ).fetchone()
    if not total:
        return None
    unit: Literal["hour", "day"] = "hour" if last - first <= HOURLY_SPAN_S else "day"
    tallies: dict[str, dict[str, Tally]] = defaultdict(lambda: defaultdict(Tally))
    order: dict[str, tuple[int, int]] = {}
    index_of = {name: number for number, name in enumerate(OUTCOMES)}
    for epoch, length, position, outcome, cluster in store.connection.execute(
        "SELECT epoch, length_tokens, position, outcome, cluster_id FROM outcomes"
    ):
        lowest, length_name = length_bin(length)
        index, position_name = position_bin(position, POSITION_BINS)
        name = f"{length_name}/{position_name}"
        order[name] = (lowest, index)
        tallies[name][_bucket_of(epoch, unit)].add(index_of[outcome], cluster)
    series: list[IngestSeries] = []
    forbidden: list[ForbiddenCount] = []
    for name in sorted(order, key=order.__getitem__):
        points = []
        for bucket in sorted(tallies[name]):
            # show's own numbers: a forbidden claim apart, Wilson or cluster-robust on cluster_id
            group = group_rates(bucket, tallies[name][bucket], CONFIDENCE)
            if group.forbidden_claim:
                count = group.forbidden_claim
                forbidden.append(ForbiddenCount(bin=name, bucket=bucket, forbidden_claim=count))
            if not group.rated:
                continue
            answered = group.rates["answered"]
            points.append(
                IngestPoint(bucket=bucket, rated=group.rated, clusters=group.clusters,
                            answered=answered.rate, low=answered.low, high=answered.high)
            )  # fmt: skip
        if points:  # a bin of forbidden claims alone has no rate
            series.append(IngestSeries(bin=name, points=points))
    return IngestReport(
        unit=unit,
        first_ts=_iso(first),
        last_ts=_iso(last),
        records=int(total),
        series=series,
        forbidden=forbidden,
        forbidden_total=sum(entry.forbidden_claim for entry in forbidden),
    )


def _body(store: MonitorStore, check: int, text: str) -> CanaryAlert:
    """A stored check's body, read as the ``canary`` record it was written as."""
    try:
        return CanaryAlert.model_validate_json(text)
    except ValidationError as error:
        where = ".".join(map(str, error.errors()[0]["loc"])) or "the body"
        raise BadInput(
            f"{store.path}: canary check {check}: a stored body that is no canary record ({where})"
        ) from None


def _canaries(store: MonitorStore) -> list[CanaryReport]:
    """Per canary its finished checks' bodies, their lower bounds per bin and the alerts."""
    db = store.connection
    out: list[CanaryReport] = []
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "canaries" not in tables:
        return out  # a store of schema 1: outcomes only
    for number, subject, baseline in db.execute(
        "SELECT id, subject, baseline FROM canaries ORDER BY id"
    ).fetchall():
        rows = db.execute(
            "SELECT number, started_at, status, body FROM canary_checks "
            "WHERE canary = ? AND body IS NOT NULL ORDER BY number",
            (number,),
        ).fetchall()
        bodies = [(str(started), _body(store, check, text)) for check, started, _, text in rows]
        if not bodies:
            continue
        latest = bodies[-1][1]
        series = [
            CheckSeries(
                bin=name,
                points=[
                    CheckPoint(check=body.check, at=body.at, drop_lower=entry.drop_lower, status=entry.status)
                    for _, body in bodies
                    for entry in body.bins
                    if entry.bin == name and entry.probes
                ],
            )
            for name in [entry.bin for entry in latest.bins]
        ]
        alerts = [
            CheckAlert(check=body.check, at=body.at, status=body.status, responsible=body.responsible)
            for _, body in bodies
            if body.status != "OK"
        ]
        out.append(
            CanaryReport(
                subject=str(subject),
                baseline=str(baseline),
                margins=latest.margins,
                checks=[CheckStatus(check=body.check, at=body.at, status=body.status) for _, body in bodies],
                first_started=bodies[0][0],
                latest=latest,
                series=series,
                alerts=alerts,
            )
        )
    return out


def _disagreements(store: MonitorStore, canary: CanaryReport, window: str | None) -> Disagreement | None:
    """The latest check's bins against the ingest's test over the canary's period; ``None``
    where the ingest has no records before that period to compare with."""
    if window is None:
        start = _epoch(canary.first_started)
        (first,) = store.connection.execute("SELECT min(epoch) FROM outcomes").fetchone()
        if first is None or first >= start:
            return None
        window = f"{_iso(first)}..{_iso(start)}"
    compared = window_comparison(store, window, position_bins=POSITION_BINS)
    ingest = {entry.bin: entry for entry in compared.bins if entry.records}
    rows = []
    shared = 0
    for entry in canary.latest.bins:
        matched = ingest_bin(entry.bin) if entry.bin != POOLED else POOLED
        other = ingest.get(matched) if matched is not None else None
        if matched is None or other is None or not entry.probes:
            continue
        shared += entry.bin != POOLED
        if (entry.status == "ALERT") == (other.status == "ALERT"):
            continue
        rows.append(
            DisagreementRow(
                canary_bin=entry.bin,
                ingest_bin=matched,
                canary_status=entry.status,
                canary_drop_lower=entry.drop_lower,
                canary_probes=entry.probes,
                ingest_status=other.status,
                ingest_drop_lower=other.drop_lower,
                ingest_records=other.records,
                ingest_window_answered=other.window_answered,
                ingest_answered=other.answered,
            )
        )
    since = sum(entry.records for name, entry in ingest.items() if name != POOLED)
    return Disagreement(
        window=window,
        ingest_status=compared.status,
        records_since=since,
        bins_shared=shared,
        rows=rows,
    )


def report_data(store: MonitorStore, *, baseline_window: str | None = None) -> MonitorReport:
    """Everything ``rotscope monitor report`` shows of ``store`` (see the module's docstring);
    ``baseline_window`` (``FROM..TO``) replaces the ingest's default reference, its records
    before the canary's first check."""
    ingest = _ingest_series(store)
    canaries = [
        canary.model_copy(update={"disagreement": _disagreements(store, canary, baseline_window)})
        if ingest
        else canary
        for canary in _canaries(store)
    ]
    return MonitorReport(store=str(store.path), ingest=ingest, canaries=canaries)
