"""Short Markdown summaries for a pull-request comment: a run's headline and lengths (a gate's
verdict is ``rotscope.gate.markdown``, which shares ``effective_table`` and ``_text``).

Case ids, model names and reasons come from outside: each goes through ``_text``, which escapes
what Markdown or HTML would act on, so a case id cannot open a link, a table cell or a tag.
"""

from __future__ import annotations

from typing import Any

from rotscope._util.safe_text import markdown_safe
from rotscope.records.effective import EffectiveLengths, LeadCalibration
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.cells import depth_label
from rotscope.report.effective import (
    base_lengths_text,
    bracket_text,
    effective_text,
    near_text,
    no_scores_text,
)
from rotscope.report.names import shareable, terminal_safe_summary
from rotscope.report.numbers import score as _fmt
from rotscope.report.questions import by_length, decoy_answers, kind_of, shown_questions
from rotscope.report.scores import score_headline, score_label
from rotscope.report.sentence import closing_task
from rotscope.report.separations import separation_markdown
from rotscope.report.wording import headline_intro

ROWS_SHOWN = 10


def _text(value: Any) -> str:
    """``value`` as inline Markdown text: the one escaping of every Markdown view
    (``_util.safe_text.markdown_safe``)."""
    return markdown_safe(value)


def _more(total: int) -> list[str]:
    return ["", f"… and {total - ROWS_SHOWN} more"] if total > ROWS_SHOWN else []


def _calibration(calibration: LeadCalibration) -> str:
    """``overlaps the band at 256 (point saturated)``: the interval's verdict, the point's beside it
    where the interval cannot say (an older summary: the point's verdict alone)."""
    verdict = calibration.band_verdict
    at = f" at {calibration.length:,}"
    if verdict is None:
        return f"{calibration.verdict}{at}"
    return f"{verdict}{at}" + (f" (point {calibration.verdict})" if verdict == "overlaps the band" else "")


def effective_table(per_task: EffectiveLengths) -> list[str]:
    """The per-task headline: its intro line and a table of each task's effective length."""
    lines = [
        _text(headline_intro(per_task)),
        "",
        "| task | effective length | bracket | base score | calibration |",
        "|---|---|---|---|---|",
    ]
    for entry in per_task.tasks:
        base = _fmt(entry.base_score)
        if entry.base_ci and len(entry.base_lengths or []) > 1:  # one length: its line's interval
            base += f" [{_fmt(entry.base_ci[0])}, {_fmt(entry.base_ci[1])}]"
        base += base_lengths_text(entry.base_lengths)
        lead = " (lead)" if entry.task == per_task.lead else ""
        # An older summary has no bracket: its deprecated conservative value stands in.
        hedge = (
            bracket_text(entry.bracket) + near_text(entry)
            if entry.bracket
            else "conservative: " + effective_text(entry.conservative, entry.conservative_state)
        )
        shown = effective_text(entry.value, entry.state, entry.data)
        lines.append(
            f"| {_text(entry.task)}{lead} | {_text(shown)} "
            f"({_text(entry.definition)}) | {_text(hedge)} | "
            f"{base} | {_text(_calibration(entry.calibration))} |"
        )
    return lines


def run_markdown(summary: Summary) -> str:
    """A run's summary as a PR comment: headline, accuracy per task and length, worst positions."""
    summary = shareable(terminal_safe_summary(summary))
    items = summary.items
    lines = [
        f"## rotscope run {_text(summary.run)}: {_text(summary.model)}",
        "",
        f"{items.done}/{items.total} items done, {items.errors} errors.",
        "",
        *([f"**{_text(summary.imported.note)}**", ""] if summary.imported else []),
        # the score every number below stands on, and the other where the run keeps both
        _text(score_headline(summary, closing_task(summary.effective_lengths))),
        "",
        *effective_table(summary.effective_lengths),
        "",
        f"| task | length | {score_label(summary.score)} [95%] | instances | gap to control [95%] "
        "| worst position |",
        "|---|---|---|---|---|---|",
    ]
    # A worst depth by its position's name where the run named positions (``beginning``).
    labels = {(cell.task, cell.length, cell.depth): depth_label(cell) for cell in summary.cells}
    for analysis in summary.tasks:
        lines += _length_rows(analysis, labels)
    lines += separation_markdown(summary.separations)
    for analysis in summary.tasks:
        if analysis.data == "all-error" and analysis.top_error:
            lines += ["", f"**{_text(analysis.task)}**: {_text(no_scores_text(analysis))}"]
    lines += _question_rows(summary)
    cap = summary.error_cap
    if cap.exceeded:
        lines += [
            "",
            f"**Error rate {cap.error_rate:.1%} exceeds the cap {cap.max_error_rate:.1%}**: "
            "accuracy rests on fewer items than planned.",
        ]
    return "\n".join(lines) + "\n"


def _question_rows(summary: Summary) -> list[str]:
    """Accuracy per question, a table row each, where the run asks few (``report.questions``)."""
    cases = shown_questions(summary)
    if not cases:
        return []
    lines = [
        "",
        "| question | kind | accuracy | correct/scored | by length | decoy answers |",
        "|---|---|---|---|---|---|",
    ]
    for case in cases:
        lines.append(
            f"| {_text(case.case_id)}: {_text(case.question or '')} | {_text(kind_of(case))} | "
            f"{_fmt(case.accuracy)} | {case.correct}/{case.scored} | {_text(by_length(case))} | "
            f"{decoy_answers(case)} |"
        )
    return lines


def _length_rows(analysis: TaskAnalysis, labels: dict[tuple[str, int, float | str | None], str]) -> list[str]:
    """A task's table rows, one per length: accuracy, the gap to the control length, the worst
    position (by its name, from ``labels``, where the run named it)."""
    gaps = {gap.length: gap for gap in analysis.degradation or []}
    worst = {effect.length: effect for effect in analysis.position_effect or []}
    rows = []
    for line in analysis.lengths or []:
        gap = gaps.get(line.length)
        if gap is None:
            gap_text = "control"
        elif gap.too_few:
            gap_text = f"{_fmt(gap.gap, True)} (too few pairs)"
        else:
            low, high = _fmt(gap.ci_low, True), _fmt(gap.ci_high, True)
            gap_text = f"{_fmt(gap.gap, True)} [{low}, {high}]"
        effect = worst.get(line.length)
        at = "-"  # a length whose positions all scored alike has no worst position
        if effect and effect.range:
            where = labels.get((analysis.task, line.length, effect.worst_depth), effect.worst_depth)
            at = f"{_text(where)} (range {effect.range:.2f})"
        rows.append(
            f"| {_text(analysis.task)} | {line.length:,} | {_fmt(line.accuracy)} "
            f"[{_fmt(line.ci_low)}, {_fmt(line.ci_high)}] | {line.instances} | {gap_text} "
            f"| {at} |"
        )
    return rows
