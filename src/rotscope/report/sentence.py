"""The one sentence a run ends with: a model's effective length on one probe, with the accuracies
and the paired gap that place it, each with its interval, in words a user can repeat."""

from __future__ import annotations

from typing import Any

from rotscope.report.numbers import score as _fmt
from rotscope.stats import SATURATED_POINT, TOO_HARD_POINT


def _accuracy(line: dict[str, Any]) -> str:
    """``0.94 [0.72, 0.99] at 256 tokens``: the instance-level score the effective length is on."""
    point = line.get("instance_accuracy", line["accuracy"])
    return f"{_fmt(point)} [{_fmt(line['ci_low'])}, {_fmt(line['ci_high'])}] at {line['length']:,} tokens"


def _gap(gap: dict[str, Any] | None) -> str:
    if gap is None or gap["gap"] is None:
        return ""
    if gap.get("too_few"):
        return f", a paired gap of {gap['gap']:+.2f} on {gap['pairs']} instances (too few for an interval)"
    interval = f"[{gap['ci_low']:+.2f}, {gap['ci_high']:+.2f}]"
    beyond = "" if gap["ci_high"] < 0 else ", an interval that does not rule out no loss"
    return f", a paired gap of {gap['gap']:+.2f} {interval} on {gap['pairs']} instances{beyond}"


def _hedge(entry: dict[str, Any], shortest: int) -> str:
    """The conservative effective length (scanned on the lower bounds), where there is one."""
    state = entry.get("conservative_state")
    if state in (None, "no-signal", "no-data"):
        return ""
    low = entry["conservative"]
    if low is None:
        shown = f"below {shortest:,} tokens"
    else:
        shown = f"at least {low:,} tokens" if state == "at-least-longest" else f"{low:,} tokens"
    return f"; conservative: {shown}"


def _measured(entry: dict[str, Any]) -> bool:
    return entry["state"] not in ("no-data", "no-signal")


def _chosen(per_task: dict[str, Any]) -> dict[str, Any] | None:
    """The headline's lead; without one, the first task that fell below its threshold (at a
    length tested or already at the shortest); else the first."""
    entries: list[dict[str, Any]] = per_task["tasks"]
    if not entries:
        return None
    if per_task["lead"] is not None:
        return entries[0]
    fell = (entry for entry in entries if _measured(entry) and entry["state"] != "at-least-longest")
    return next(fell, entries[0])


def _unled(entry: dict[str, Any]) -> str:
    """Why this probe was taken without leading the headline: none is in the reference band."""
    calibration = entry["calibration"]
    return (
        f"; {entry['task']} is {calibration['verdict']} at {calibration['length']:,} tokens for the "
        f"reference band ({TOO_HARD_POINT:.2f}-{SATURATED_POINT:.2f}), so no probe leads the headline"
    )


def one_sentence(summary: dict[str, Any]) -> str | None:
    """The run's result in one sentence, on the task the headline leads with (or, without a lead,
    the first whose accuracy fell below its threshold, saying that none leads); ``None`` for a run
    with no task."""
    per_task = summary["effective_lengths"]
    entry = _chosen(per_task)
    if entry is None:
        return None
    task = entry["task"]
    analysis = next(analysis for analysis in summary["tasks"] if analysis["task"] == task)
    lines = {line["length"]: line for line in analysis["lengths"] if line["accuracy"] is not None}
    gaps = {gap["length"]: gap for gap in analysis["degradation"]}
    control = analysis["calibration"]["length"]
    subject = f"Effective length of {summary['model']} on {task}"
    rule = entry["definition"]
    state, value = entry["state"], entry["value"]
    if not _measured(entry) or control not in lines:
        reason = (
            entry["no_curve"] if entry.get("no_curve")
            else "no data" if state == "no-data"
            else "the base score is too low to measure a loss" if state == "no-signal"
            else f"no scored calls at the control length, {control:,} tokens"
        )  # fmt: skip
        return f"{subject} ({rule}): not measured ({reason})."
    unled = _unled(entry) if per_task["lead"] is None else ""
    if value is None:
        shortest = min(lines)
        accuracy = _accuracy(lines[shortest])
        return (
            f"{subject} ({rule}): below {shortest:,} tokens, the shortest tested; accuracy {accuracy}{unled}."
        )
    hedge = _hedge(entry, min(lines))
    if state == "at-least-longest":
        longest = max(lines)
        after = "" if longest == control else f", {_accuracy(lines[longest])}{_gap(gaps.get(longest))}"
        return (
            f"{subject}: at least {value:,} tokens, the longest tested ({rule}{hedge}); accuracy "
            f"{_accuracy(lines[control])}{after}{unled}."
        )
    fallen = min(length for length in lines if length > value)
    return (
        f"{subject}: {value:,} tokens ({rule}{hedge}); accuracy {_accuracy(lines[control])}, then "
        f"{_accuracy(lines[fallen])}{_gap(gaps.get(fallen))}{unled}."
    )
