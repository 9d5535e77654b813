"""The monitoring store's report as tables (``rotscope monitor report --markdown``; the HTML
report, ``report.monitor_html``, shows the same tables beside its figures). It lays out what
``monitor.report_data`` assembled (``monitor.report_model``) and computes nothing of its own."""

from __future__ import annotations

from rotscope._util.safe_text import markdown_safe
from rotscope.monitor.report_model import CanaryReport, Disagreement, IngestReport, MonitorReport

Table = tuple[list[str], list[list[str]]]


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def rate_table(ingest: IngestReport) -> Table:
    """A row per bin and time bucket: rated records, the answered rate and its interval."""
    headers = ["bin", ingest.unit, "rated", "answered", "95% interval"]
    rows = [
        [series.bin, point.bucket, str(point.rated), f"{point.answered:.3f}",
         f"[{point.low:.3f}, {point.high:.3f}]"]
        for series in ingest.series
        for point in series.points
    ]  # fmt: skip
    return headers, rows


def forbidden_table(ingest: IngestReport) -> Table:
    """A row per bin and time bucket with a forbidden claim: counted on its own, never in a rate."""
    headers = ["bin", ingest.unit, "forbidden claims"]
    rows = [[entry.bin, entry.bucket, str(entry.forbidden_claim)] for entry in ingest.forbidden]
    return headers, rows


def check_table(canary: CanaryReport) -> Table:
    """A row per finished check: its time, status and each bin's lower bound on the drop."""
    names = [series.bin for series in canary.series]
    bounds: dict[tuple[int, str], float] = {
        (point.check, series.bin): point.drop_lower for series in canary.series for point in series.points
    }
    headers = ["check", "at", "status", *names]
    rows = [
        [str(check.check), check.at, check.status,
         *(_number(bounds.get((check.check, name))) for name in names)]
        for check in canary.checks
    ]  # fmt: skip
    return headers, rows


def alert_table(canary: CanaryReport) -> Table:
    """A row per check that WARNed or ALERTed, with its bins responsible."""
    headers = ["check", "at", "status", "bins responsible"]
    rows = [
        [str(alert.check), alert.at, alert.status, ", ".join(alert.responsible)] for alert in canary.alerts
    ]
    return headers, rows


def disagreement_table(disagreement: Disagreement) -> Table:
    """A row per bin where one of canary and ingest ALERTs and the other does not, side by side."""
    headers = [
        "canary bin", "canary", "canary drop at least", "probes",
        "ingest bin", "ingest", "ingest drop at least", "records", "answered before", "answered since",
    ]  # fmt: skip
    rows = [
        [row.canary_bin, row.canary_status, _number(row.canary_drop_lower),
         str(row.canary_probes), row.ingest_bin, row.ingest_status,
         _number(row.ingest_drop_lower), str(row.ingest_records),
         _number(row.ingest_window_answered), _number(row.ingest_answered)]
        for row in disagreement.rows
    ]  # fmt: skip
    return headers, rows


def _markdown_table(table: Table) -> list[str]:
    headers, rows = table
    lines = ["| " + " | ".join(map(markdown_safe, headers)) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(map(markdown_safe, row)) + " |" for row in rows]
    return [*lines, ""]


def canary_heading(canary: CanaryReport) -> str:
    return f"Canary: {canary.subject} against {canary.baseline}"


def margins_sentence(canary: CanaryReport) -> str:
    margins = canary.margins
    return (
        f"{len(canary.checks)} checks. Each bin's anytime-valid lower bound on the paired drop "
        f"(baseline − canary): WARN above {margins.warn:.2f}, ALERT above {margins.fail:.2f} "
        f"(alpha {margins.alpha} over all bins, ever)."
    )


def disagreement_sentence(disagreement: Disagreement) -> str:
    """What the ingest was tested on, and what came of the comparison where no row did."""
    head = (
        f"The {disagreement.records_since} ingested records after the baseline window "
        f"{disagreement.window} against those in it (the same sequential test, unpaired: "
        f"{disagreement.ingest_status})"
    )
    if disagreement.rows:
        return head + "; the bins where one ALERTs and the other does not:"
    if not disagreement.records_since:
        return head + ": no ingested record since, nothing to compare."
    if not disagreement.bins_shared:
        return head + ": no length bin × position bin is watched by both."
    return head + f": they agree on all {disagreement.bins_shared} bins both watch (and pooled)."


def markdown(data: MonitorReport) -> str:
    """The report as Markdown."""
    lines = [f"# rotscope monitor report: {data.store}", ""]
    ingest = data.ingest
    if ingest is None:
        lines += ["No ingested outcomes in this store.", ""]
    else:
        lines += [
            "## Ingested outcomes",
            "",
            f"{ingest.records} records, {ingest.first_ts} to {ingest.last_ts}, by {ingest.unit}.",
            "",
            f"### Answered rate per length bin × evidence-position bin and {ingest.unit}",
            "",
            *_markdown_table(rate_table(ingest)),
            "### Forbidden claims (on their own, in no rate)",
            "",
        ]
        if ingest.forbidden:
            lines += _markdown_table(forbidden_table(ingest))
        else:
            lines += ["None reported.", ""]
    if not data.canaries:
        lines += ["No canary checks in this store.", ""]
    for canary in data.canaries:
        lines += [f"## {markdown_safe(canary_heading(canary))}", "", margins_sentence(canary), ""]
        lines += ["### Lower bound on the drop per check", "", *_markdown_table(check_table(canary))]
        lines += ["### Alerts", ""]
        lines += _markdown_table(alert_table(canary)) if canary.alerts else ["None.", ""]
        disagreement = canary.disagreement
        if disagreement is None:
            continue
        lines += ["### Where canary and ingest disagree", "", disagreement_sentence(disagreement), ""]
        if disagreement.rows:
            lines += _markdown_table(disagreement_table(disagreement))
    return "\n".join(lines).rstrip("\n") + "\n"
