"""A canary check's alert body: the JSON a scheduler or a pager reads (``rotscope canary --json``,
and stored with the check), its Markdown (``--markdown``) and the one status line a loop prints."""

from __future__ import annotations

import math

from rotscope._util.safe_text import markdown_safe
from rotscope.monitor.canary.record import CanaryAlert, CanaryBin, CanaryMargins
from rotscope.monitor.sequential import Margins, Verdict


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def alert_body(
    verdict: Verdict,
    *,
    check: int,
    at: str,
    subject: str,
    baseline: str,
    margins: Margins,
    probes: int,
    errors: int,
) -> CanaryAlert:
    """The check's body (the ``canary`` record): its status, the bins responsible and every bin's
    numbers."""
    return CanaryAlert(
        check=check,
        at=at,
        status=verdict.status,
        responsible=list(verdict.responsible),
        subject=subject,
        baseline=baseline,
        probes_this_check=probes,
        errors_this_check=errors,
        margins=CanaryMargins(warn=margins.warn, fail=margins.fail, alpha=margins.alpha),
        alpha_per_bin=verdict.alpha_per_bin,
        bins=[
            CanaryBin(
                bin=result.name,
                probes=result.probes,
                baseline=_number(result.baseline),
                canary=_number(result.canary),
                drop_lower=round(result.lower, 4),
                status=result.status,
            )
            for result in verdict.bins
        ],
    )


def status_line(body: CanaryAlert) -> str:
    """``check 3 at ...: ALERT in 1600/0.00-0.33 (drop > 0.27), pooled (drop > 0.04); 192 probes``."""
    by_name = {entry.bin: entry for entry in body.bins}
    where = ", ".join(f"{name} (drop > {by_name[name].drop_lower:.2f})" for name in body.responsible)
    total = sum(entry.probes for entry in body.bins if entry.bin != "pooled")
    errors = f", {body.errors_this_check} failed calls" if body.errors_this_check else ""
    return (
        f"check {body.check} at {body.at}: {body.status}{' in ' + where if where else ''}; "
        f"{total} probes in all{errors}"
    )


def markdown(body: CanaryAlert) -> str:
    """The body as Markdown: a heading with the status, the bins responsible, a table of bins."""
    margins = body.margins
    lines = [
        f"## Canary check {body.check}: {body.status}",
        "",
        f"{markdown_safe(body.subject)} against the baseline run {markdown_safe(body.baseline)}, "
        f"at {markdown_safe(body.at)}.",
        "",
    ]
    if body.responsible:
        lines += [f"Bins responsible: {', '.join(body.responsible)}.", ""]
    lines += [
        f"WARN once a drop above {margins.warn:.2f} is ruled in, ALERT above {margins.fail:.2f} "
        f"(anytime-valid, alpha {margins.alpha} split over the bins: {body.alpha_per_bin:.4f} each).",
        "",
        "| bin | probes | baseline | canary | drop at least | status |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for entry in body.bins:
        base = "-" if entry.baseline is None else f"{entry.baseline:.3f}"
        canary = "-" if entry.canary is None else f"{entry.canary:.3f}"
        cells = (entry.bin, entry.probes, base, canary, f"{entry.drop_lower:.3f}", entry.status)
        lines.append("| " + " | ".join(map(markdown_safe, cells)) + " |")
    return "\n".join(lines) + "\n"
