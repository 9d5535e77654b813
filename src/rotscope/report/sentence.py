"""The one sentence a run ends with: a model's effective length on one probe, with the accuracies
and the paired gap that place it, each with its interval, in words a user can repeat."""

from __future__ import annotations

from rotscope.analysis.bracket import contradicts
from rotscope.records.cells import LengthCell
from rotscope.records.effective import EffectiveLengths, TaskEffectiveLength
from rotscope.records.summary import Summary
from rotscope.records.tasks import Degradation
from rotscope.report.effective import (
    BAND,
    band_numbers,
    base_lengths_text,
    bracket_text,
    data_text,
    is_wide,
    near_text,
)
from rotscope.report.numbers import score as _fmt
from rotscope.report.scores import LIKELIHOOD


def _accuracy(line: LengthCell) -> str:
    """``0.94 [0.72, 0.99] at 256 tokens``: the instance-level score the effective length is on (an
    older summary without it: the items' accuracy)."""
    point = line.instance_accuracy if "instance_accuracy" in line.model_fields_set else line.accuracy
    return f"{_fmt(point)} [{_fmt(line.ci_low)}, {_fmt(line.ci_high)}] at {line.length:,} tokens"


def _gap(gap: Degradation | None) -> str:
    if gap is None or gap.gap is None:
        return ""
    if gap.too_few:
        return f", a paired gap of {gap.gap:+.2f} on {gap.pairs} instances (too few for an interval)"
    interval = f"[{gap.ci_low:+.2f}, {gap.ci_high:+.2f}]"
    beyond = (
        ""
        if gap.ci_high is not None and gap.ci_high < 0
        else ", an interval that holds 0, so the loss is not shown"
    )
    return f", a paired gap of {gap.gap:+.2f} {interval} on {gap.pairs} instances{beyond}"


def _hedge(entry: TaskEffectiveLength, shortest: int) -> str:
    """The bracket (``; 95% bracket: 256 to beyond 1,024 tokens: the data cannot place it``); for an
    older summary without one, its deprecated conservative value."""
    bracket = entry.bracket
    # analysis.bracket reads the bracket as the summary's JSON holds it.
    if bracket and contradicts(entry.value, bracket.model_dump()):
        return "; no bracket stated: its lengths hold different (case, position) pairs than the point's"
    if bracket:
        wide = ": the data cannot place it" if is_wide(bracket) else ""
        return f"; {bracket_text(bracket)}{wide}{near_text(entry)}"
    state = entry.conservative_state
    if state in (None, "no-signal", "no-data"):
        return ""
    low = entry.conservative
    if low is None:
        shown = f"below {shortest:,} tokens"
    else:
        shown = f"at least {low:,} tokens" if state == "at-least-longest" else f"{low:,} tokens"
    return f"; conservative: {shown}"


def _rule(entry: TaskEffectiveLength) -> str:
    """``nolima-0.85 of the base at 256 tokens``: the definition and, for a relative one, the
    lengths that formed its base."""
    lengths = entry.base_lengths
    if not entry.definition.startswith("nolima") or not lengths:
        return entry.definition
    return f"{entry.definition} of the base{base_lengths_text(lengths)} tokens"


def _measured(entry: TaskEffectiveLength) -> bool:
    return entry.state not in ("no-data", "no-signal")


def _chosen(per_task: EffectiveLengths) -> TaskEffectiveLength | None:
    """The headline's lead; without one, the first task that fell below its threshold (at a
    length tested or already at the shortest); else the first."""
    entries = per_task.tasks
    if not entries:
        return None
    if per_task.lead is not None:
        return entries[0]
    fell = (entry for entry in entries if _measured(entry) and entry.state != "at-least-longest")
    return next(fell, entries[0])


def closing_task(per_task: EffectiveLengths) -> str | None:
    """The task the closing sentence is on (``None`` for a run with no task)."""
    entry = _chosen(per_task)
    return None if entry is None else entry.task


def _unled(entry: TaskEffectiveLength, stated: bool = False) -> str:
    """Why this probe was taken without leading the headline: none is in the reference band by its
    point, said as its interval allows (an interval that overlaps the band cannot place it). Where
    the sentence has ``stated`` the control length's accuracy already, the band alone is named."""
    calibration = entry.calibration
    verdict = calibration.band_verdict
    at = f"at {calibration.length:,} tokens"
    numbers = f"band {BAND}" if stated else band_numbers(calibration)
    if verdict == "overlaps the band":
        shown = (
            f"the accuracy of {entry.task} {at} overlaps the reference band, its point "
            f"{calibration.verdict} ({numbers})"
        )
    elif verdict is not None:
        shown = f"{entry.task} is {verdict} {at} ({numbers})"
    else:
        shown = f"{entry.task} is {calibration.verdict} {at} for the reference band ({BAND})"
    return f"; {shown}, so no probe leads the headline"


def one_sentence(summary: Summary, *, with_numbers: bool = True) -> str | None:
    """``_sentence``, its score named as the summary's: on the likelihood (``Summary.score``) each
    "accuracy" of the sentence is the answer probability it stands on."""
    sentence = _sentence(summary, with_numbers=with_numbers)
    if sentence is None or summary.score == "accuracy":
        return sentence
    return sentence.replace("accuracy", LIKELIHOOD)


def _sentence(summary: Summary, *, with_numbers: bool = True) -> str | None:
    """The run's result in one sentence, on the task the headline leads with (or, without a lead,
    the first whose accuracy fell below its threshold, saying that none leads); ``None`` for a run
    with no task. Without ``with_numbers`` (the terminal, whose heat map and lines per length show
    every accuracy and gap just above it) the sentence names the lengths and not their numbers, so
    each number is on the screen once."""
    per_task = summary.effective_lengths
    entry = _chosen(per_task)
    if entry is None:
        return None
    task = entry.task
    analysis = next(analysis for analysis in summary.tasks if analysis.task == task)
    lines = {line.length: line for line in analysis.lengths or [] if line.accuracy is not None}
    gaps = {gap.length: gap for gap in analysis.degradation or []}
    if analysis.calibration is None:  # every task's analysis has one (analysis.tasks)
        raise ValueError(f"the summary's analysis of {task} has no calibration")
    control = analysis.calibration.length
    subject = f"Effective length of {summary.model} on {task}"
    state, value = entry.state, entry.value
    if not _measured(entry) or control not in lines:
        data = data_text(entry.data)
        reason = (
            entry.no_curve if entry.no_curve
            else f"no data: {data}" if state == "no-data" and data
            else "no data" if state == "no-data"
            else "the base score is too low to measure a loss" if state == "no-signal"
            else f"no scored calls at the control length, {control:,} tokens"
        )  # fmt: skip
        return f"{subject} ({entry.definition}): not measured ({reason})."
    lead = per_task.lead
    unled = _unled(entry, stated=True) if lead is None else ""
    rule = _rule(entry)
    hedge = _hedge(entry, min(lines))
    if value is None:
        shortest = min(lines)
        # An older summary's conservative value can say nothing here the point does not.
        hedge = hedge if entry.bracket else ""
        if not with_numbers:
            return f"{subject} ({rule}{hedge}): below {shortest:,} tokens, the shortest tested{unled}."
        unled = _unled(entry, stated=shortest == control) if lead is None else ""
        return (
            f"{subject} ({rule}{hedge}): below {shortest:,} tokens, the shortest tested; accuracy "
            f"{_accuracy(lines[shortest])}{unled}."
        )
    if state == "at-least-longest":
        if not with_numbers:
            return f"{subject}: at least {value:,} tokens, the longest tested ({rule}{hedge}){unled}."
        longest = max(lines)
        after = "" if longest == control else f", {_accuracy(lines[longest])}{_gap(gaps.get(longest))}"
        return (
            f"{subject}: at least {value:,} tokens, the longest tested ({rule}{hedge}); accuracy "
            f"{_accuracy(lines[control])}{after}{unled}."
        )
    fallen = min(length for length in lines if length > value)
    if not with_numbers:
        return (
            f"{subject}: {value:,} tokens ({rule}{hedge}); its accuracy falls below the threshold "
            f"at {fallen:,} tokens{unled}."
        )
    own = "" if value == control else f", {_accuracy(lines[value])} (its effective length)"
    return (
        f"{subject}: {value:,} tokens ({rule}{hedge}); accuracy {_accuracy(lines[control])}{own}, "
        f"falling to {_accuracy(lines[fallen])}{_gap(gaps.get(fallen))}{unled}."
    )
