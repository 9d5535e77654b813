"""Wording shared by the views (terminal, HTML, Markdown): the headline's phrases, how token
counts were made and why the order of a run's calls matters."""

from __future__ import annotations

from rotscope.records.effective import EffectiveLength, EffectiveLengths, TaskData, TaskEffectiveLength
from rotscope.records.summary import Summary
from rotscope.records.tasks import Calibration
from rotscope.report.effective import (
    BAND,
    band_text,
    base_lengths_text,
    bracket_text,
    effective_text,
    near_text,
)
from rotscope.report.numbers import score as _fmt


def _unbalanced(effective: EffectiveLength | TaskEffectiveLength) -> str:
    return "".join(
        f"; length {entry.length:,} lacks {entry.missing} (case, position) pairs"
        for entry in effective.unbalanced_lengths or []
    )


def effective_phrase(effective: TaskEffectiveLength) -> str:
    """``512 tokens (nolima-0.85; 95% bracket: 256 to beyond 1,024 tokens); base score 0.81 at 256``
    (a base pooled over lengths with its interval): the point, its bracket (the deprecated
    conservative value only for an older summary without one) and the lengths that formed the base."""
    if effective.no_curve:
        return f"not measured ({effective.no_curve})"
    shown = effective_text(effective.value, effective.state, effective.data)
    interval = ""
    # One interval per number (issue 53): a base of one length is that length's accuracy, shown
    # with its own interval on the page; only a pooled base gets the base's interval here.
    if effective.base_ci and len(effective.base_lengths or []) > 1:
        interval = f" [{_fmt(effective.base_ci[0])}, {_fmt(effective.base_ci[1])}]"
    base = _fmt(effective.base_score)
    hedge = ""
    if effective.bracket:
        hedge = f"; {bracket_text(effective.bracket)}{near_text(effective)}"
    elif effective.conservative_state:
        shown_low = effective_text(effective.conservative, effective.conservative_state)
        hedge = f"; conservative: {shown_low}"
    where = base_lengths_text(effective.base_lengths)
    return (
        f"{shown} ({effective.definition}{hedge}); base score {base}{interval}{where}{_unbalanced(effective)}"
    )


def effective_short(effective: EffectiveLength, data: TaskData | None) -> str:
    """``512 tokens (nolima-0.85; 95% bracket: 256 to beyond 1,024 tokens)``: the point and its
    bracket without the base score, for a view that shows the base's accuracy on a line of its own;
    ``data`` (the task's) says why a task without scores has none."""
    if effective.no_curve:
        return f"not measured ({effective.no_curve})"
    shown = effective_text(effective.value, effective.state, data)
    bracket = bracket_text(effective.bracket) if effective.bracket else ""
    hedge = f"; {bracket}{near_text(effective)}" if bracket else ""
    return f"{shown} ({effective.definition}{hedge}){_unbalanced(effective)}"


def band_verdict(calibration: Calibration) -> str:
    """``overlaps the band 0.90-0.95 (point too hard)``: the calibration verdict without the
    accuracy it is read from, for a view that shows that accuracy beside its length."""
    verdict = calibration.band_verdict or calibration.verdict or "not placed"
    by_point = (
        f" (point {calibration.verdict})" if verdict == "overlaps the band" and calibration.verdict else ""
    )
    shown = (
        verdict.replace("the band", f"the band {BAND}")
        if "the band" in verdict
        else f"{verdict} (band {BAND})"
    )
    return f"{shown}{by_point}"


def _verdicts(per_task: EffectiveLengths) -> str:
    return ", ".join(f"{entry.task} {entry.calibration.verdict}" for entry in per_task.tasks)


def lead_line(per_task: EffectiveLengths) -> str:
    """Which probe the closing sentence is on and why, in words (the numbers are on its lines)."""
    if per_task.lead is None:
        return f"No probe is in band at its control length ({_verdicts(per_task)}), so none leads."
    return f"Led by {per_task.lead}, the hardest probe in band at its control length."


def headline_intro(per_task: EffectiveLengths) -> str:
    """Which probe leads the per-task headline and why, or that none is in band."""
    if per_task.lead is None:
        return (
            f"Effective length per task; no probe is in band at its control length ({_verdicts(per_task)}), "
            "so none leads:"
        )
    calibration = per_task.tasks[0].calibration
    hedged = f"; its interval {calibration.band_verdict}" if calibration.band_verdict else ""
    interval = (
        "" if calibration.ci_low is None else f" [{_fmt(calibration.ci_low)}, {_fmt(calibration.ci_high)}]"
    )
    return (
        f"Effective length per task, led by {per_task.lead}, the hardest probe in band at its control "
        f"length ({calibration.length:,} tokens: accuracy {_fmt(calibration.instance_accuracy)}"
        f"{interval}{hedged}):"
    )


def headline_entries(per_task: EffectiveLengths) -> list[tuple[str, str]]:
    """``(task, "its effective length; calibration at <length>: <band verdict (numbers)>")``, the lead
    first."""
    return [
        (
            entry.task,
            f"{effective_phrase(entry)}; calibration at {entry.calibration.length:,}: "
            f"{band_text(entry.calibration)}",
        )
        for entry in per_task.tasks
    ]


def token_count_line(summary: Summary) -> str:
    """How lengths were counted and the measured harness overhead (provider count minus local)."""
    counts = summary.token_counts
    tokenizer = counts.tokenizer or "unknown"
    if summary.imported is not None:
        # Another harness counted them; rotscope measured nothing (no overhead either).
        unit = summary.imported.unit or "tokens"
        named = "" if counts.tokenizer in (None, "unknown: as imported") else f" with {counts.tokenizer}"
        return f"token counts: as imported, in {unit}{named} (not counted by rotscope)"
    if counts.method == "approximate":
        line = (
            f"token counts: APPROXIMATE (estimated by {tokenizer}; no tokenizer of the model was available)"
        )
    else:
        line = f"token counts: exact ({tokenizer})"
    overhead = counts.overhead
    if overhead:
        line += (
            f"; harness overhead of {overhead.model}: median {overhead.median:g} tokens "
            f"(range {overhead.min} to {overhead.max}) over {overhead.calls} calls"
        )
    return line


ORDER_NOTES = {
    "interleaved": "provider drift during the run is spread over the cells call by call",
    "grouped": "provider drift is spread over prefix groups, but the calls of one group ran back to "
    "back, so drift during that span is shared by the group's cells",
    "prefix": "calls ran in trie order, so provider drift during the run would follow length and "
    "depth; only for a server that does not drift",
}


def order_note(order: str | None) -> str:
    """Why the order of a remote run's calls matters for drift (nothing for a local engine, whose
    order is ``prefix trie``, and for older runs' ``seeded shuffle``)."""
    kind = (order or "").split(":", 1)[0]
    return f" ({ORDER_NOTES[kind]})" if kind in ORDER_NOTES else ""
