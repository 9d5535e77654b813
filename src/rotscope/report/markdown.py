"""Short Markdown summaries for a pull-request comment: a gate's verdict with its failing slices,
worst positions and the headline effective lengths, or a run's headline and lengths.

Case ids, model names and reasons come from outside: each goes through ``_text``, which escapes
what Markdown or HTML would act on, so a case id cannot open a link, a table cell or a tag.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rotscope._util.safe_text import terminal_safe_tree
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
from rotscope.report.names import shareable, shareable_data, terminal_safe_summary
from rotscope.report.numbers import score as _fmt
from rotscope.report.verdict import layout_lines, pooled_line, support_lines
from rotscope.report.wording import headline_intro

ROWS_SHOWN = 10
_MARK = {"PASS": "✅", "FAIL": "❌", "INCONCLUSIVE": "⚠️"}
_ACTIVE = re.compile(r"([\\`*_\[\]{}|~#!])")


def _text(value: Any) -> str:
    """``value`` as inline Markdown text: one line, Markdown's active characters escaped, no HTML."""
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _ACTIVE.sub(r"\\\1", text)


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
        if entry.base_ci:
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


def _slice_name(item: dict[str, Any]) -> str:
    fields = "".join(f" {key}={value}" for key, value in item["fields"].items())
    return _text(f"{item['task']} {item['length']:,} {item['position']}{fields}")


def gate_markdown(record: dict[str, Any], baseline: dict[str, Any], candidate: dict[str, Any]) -> str:
    """A gate's release record as a PR comment; ``baseline`` and ``candidate`` are the two runs'
    summaries (for their model names and headline effective lengths)."""
    record = terminal_safe_tree(record)
    baseline, candidate = (
        shareable_data(terminal_safe_tree(baseline)),
        shareable_data(terminal_safe_tree(candidate)),
    )
    verdict = record["verdict"]
    lines = [
        f"## rotscope gate: {_MARK[verdict]} {verdict} (exit {record['exit_code']})",
        "",
        f"Candidate **{_text(candidate['run'])}** ({_text(candidate['model'])}) against baseline "
        f"**{_text(baseline['run'])}** ({_text(baseline['model'])}); "
        + (f"plan {_text(record['plan_digest'])}." if record.get("plan_digest") else "no frozen plan."),
        "",
        *(
            f"- {role} **{_text(record[role]['run'])}**: {_text(record[role]['imported'])}"
            for role in ("baseline", "candidate")
            if record[role].get("imported")
        ),
        "",
        *(f"- {_text(reason)}" for reason in record["reasons"][:ROWS_SHOWN]),
        *_more(len(record["reasons"])),
    ]
    if record.get("decided_by"):
        lines += ["", f"Decided by: {_text(', '.join(record['decided_by']))}."]
    pooled = pooled_line(record)
    if pooled is not None:
        lines += ["", _text(pooled) + "."]
    support = support_lines(record)
    if support:
        lines += ["", "### Supported window", "", *(f"- {_text(line)}" for line in support)]
    note = (record.get("tests") or {}).get("note")
    if note:
        lines += ["", f"Note: {_text(note)}."]
    unpassed = [item for item in record["slices"] if item["verdict"] != "PASS"]
    analysis = record["analysis"]
    lines += [
        "",
        f"### Slices not passing: {len(unpassed)} of {len(record['slices'])}",
        "",
        f"Candidate − baseline, paired instance accuracy, one-sided bounds at Holm levels; a slice "
        "FAILs when its upper bound is below −margin or its accuracy is clearly below the floor "
        f"(alpha {analysis['alpha']}, margin {analysis['margin']}, min {analysis['min_instances']} "
        "instances).",
    ]
    if unpassed:
        lines += [
            "",
            "| slice | instances | baseline | candidate | difference | bounds | verdict |",
            "|---|---|---|---|---|---|---|",
        ]
        for item in unpassed[:ROWS_SHOWN]:
            lines.append(
                f"| {_slice_name(item)} | {item['instances']} | {_fmt(item['baseline_accuracy'])} | "
                f"{_fmt(item['candidate_accuracy'])} | {_fmt(item['difference'], True)} | "
                f"[{_fmt(item['lower'], True)}, {_fmt(item['upper'], True)}] | {item['verdict']} |"
            )
        lines += _more(len(unpassed))
    worst = [entry for entry in record["worst_positions"] if entry["range"] or entry["worst_accuracy"] < 1]
    if worst:
        lines += ["", "### Worst positions (candidate; largest range first)", ""]
        lines += [
            f"- {_text(entry['case_id'])}: worst {_text(entry['worst_position'])} "
            f"({entry['worst_accuracy']:.2f}), range {entry['range']:.2f} "
            f"(baseline range {_fmt(entry['baseline_range'])})"
            for entry in worst[:ROWS_SHOWN]
        ]
        lines += _more(len(worst))
    lines += _layouts_markdown(record.get("layouts"))
    lines += _rollback_markdown(record.get("rollback"))
    for role, summary in (("Candidate", candidate), ("Baseline", baseline)):
        lines += [
            "",
            f"### {role}'s effective length",
            "",
            *effective_table(EffectiveLengths.model_validate_json(json.dumps(summary["effective_lengths"]))),
        ]
    return "\n".join(lines) + "\n"


def _layouts_markdown(layouts: dict[str, Any] | None) -> list[str]:
    """Which paired layouts' token spans moved, apart from which answers changed."""
    if not layouts:
        return []
    lines = ["", "### Layouts", "", f"- {_text(layout_lines(layouts)[0])}"]
    for entry in layouts["moved"][:ROWS_SHOWN]:
        lines.append(
            f"- moved: {_text(entry['task'])} {_text(entry['case_id'])} @ {entry['length']} "
            f"{_text(entry['position'])}: {entry['baseline_prompt_tokens']} -> "
            f"{entry['candidate_prompt_tokens']} tokens, spans {entry['baseline_spans']} -> "
            f"{entry['candidate_spans']}"
        )
    lines += _more(len(layouts["moved"]))
    unmoved = "same tokens" if layouts.get("spans_known", True) else "layout unknown: imported"
    for entry in layouts["changed"][:ROWS_SHOWN]:
        where = "layout moved" if entry["layout_moved"] else unmoved
        lines.append(
            f"- answer changed: {_text(entry['task'])} {_text(entry['case_id'])} @ {entry['length']} "
            f"{_text(entry['position'])}: {entry['baseline']} -> {entry['candidate']} ({where})"
        )
    lines += _more(len(layouts["changed"]))
    return lines


def _rollback_markdown(guidance: dict[str, Any] | None) -> list[str]:
    """A FAILed gate's rollback steps, the runtime to restore and the cases command."""
    if not guidance:
        return []
    restore = guidance["restore"]
    lines = ["", "### Rollback", "", *(f"1. {_text(step)}" for step in guidance["steps"]), ""]
    lines += ["| restore | value |", "|---|---|"]
    lines += [f"| {key} | {_text(str(value))} |" for key, value in restore.items() if value is not None]
    if guidance.get("cases_command"):  # none for an imported candidate: nothing to pin
        lines += ["", "```bash", guidance["cases_command"], "```"]
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
        *effective_table(summary.effective_lengths),
        "",
        "| task | length | accuracy [95%] | instances | gap to control [95%] | worst position |",
        "|---|---|---|---|---|---|",
    ]
    # A worst depth by its position's name where the run named positions (``beginning``).
    labels = {(cell.task, cell.length, cell.depth): depth_label(cell) for cell in summary.cells}
    for analysis in summary.tasks:
        lines += _length_rows(analysis, labels)
    for analysis in summary.tasks:
        if analysis.data == "all-error" and analysis.top_error:
            lines += ["", f"**{_text(analysis.task)}**: {_text(no_scores_text(analysis))}"]
    cap = summary.error_cap
    if cap.exceeded:
        lines += [
            "",
            f"**Error rate {cap.error_rate:.1%} exceeds the cap {cap.max_error_rate:.1%}**: "
            "accuracy rests on fewer items than planned.",
        ]
    return "\n".join(lines) + "\n"


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
