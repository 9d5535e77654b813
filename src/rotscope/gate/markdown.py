"""A gate's release record as a short Markdown pull-request comment: the verdict with its failing
slices, worst positions, moved layouts, a FAIL's rollback and both runs' headline effective lengths.

Case ids, model names and reasons come from outside: each goes through ``report.markdown``'s
``_text``, which escapes what Markdown or HTML would act on, so a case id cannot open a link, a
table cell or a tag.
"""

from __future__ import annotations

from rotscope.gate.record import NOT_SHOWN_TO_FAIL, GateRecord
from rotscope.gate.record_checks import Layouts, Rollback
from rotscope.gate.view import (
    layout_lines,
    pooled_line,
    roles,
    slice_lines,
    slice_name,
    support_lines,
    terminal_safe_record,
)
from rotscope.records.summary import Summary
from rotscope.report.markdown import ROWS_SHOWN, _more, _text, effective_table
from rotscope.report.names import shareable, terminal_safe_summary
from rotscope.report.numbers import score as _fmt
from rotscope.report.scores import score_label

_MARK = {"PASS": "✅", "FAIL": "❌", "INCONCLUSIVE": "⚠️"}


def _shown(summary: Summary) -> Summary:
    """``summary`` as a comment may show it: terminal-safe text, no absolute path, the model by
    its recognisable name."""
    return shareable(terminal_safe_summary(summary))


def gate_markdown(record: GateRecord, baseline: Summary, candidate: Summary) -> str:
    """A gate's release record as a PR comment; ``baseline`` and ``candidate`` are the two runs'
    summaries (for their model names and headline effective lengths)."""
    record = terminal_safe_record(record)
    baseline, candidate = _shown(baseline), _shown(candidate)
    verdict = record.verdict
    lines = [
        f"## rotscope gate: {_MARK[verdict]} {verdict} (exit {record.exit_code}) "
        f"on {score_label(record.score)}",
        "",
        f"Candidate **{_text(candidate.run)}** ({_text(candidate.model)}) against baseline "
        f"**{_text(baseline.run)}** ({_text(baseline.model)}); "
        + (f"plan {_text(record.plan_digest)}." if record.plan_digest else "no frozen plan."),
        "",
        *(
            f"- {role} **{_text(bound.run)}**: {_text(bound.imported)}"
            for role, bound in roles(record)
            if bound.imported
        ),
        "",
        *(f"- {_text(reason)}" for reason in record.reasons[:ROWS_SHOWN]),
        *_more(len(record.reasons)),
    ]
    if record.decided_by:
        lines += ["", f"Decided by: {_text(', '.join(record.decided_by))}."]
    lines += ["", _text(pooled_line(record)) + "."]
    lines += [item for line in slice_lines(record) for item in ("", _text(line) + ".")]
    support = support_lines(record)
    if support:
        lines += ["", "### Supported window", "", *(f"- {_text(line)}" for line in support)]
    if record.tests.note:
        lines += ["", f"Note: {_text(record.tests.note)}."]
    # "PASS" is how records before version 3 of the tests named a slice not shown to fail
    unpassed = [item for item in record.slices if item.verdict not in ("PASS", NOT_SHOWN_TO_FAIL)]
    analysis = record.analysis
    lines += [
        "",
        f"### Slices failing or inconclusive: {len(unpassed)} of {len(record.slices)}",
        "",
        f"Candidate − baseline, paired instance {score_label(record.score)}, one-sided bounds at Holm "
        "levels; a slice "
        "FAILs when its upper bound is below −margin or its accuracy is clearly below the floor "
        f"(alpha {analysis.alpha}, margin {analysis.margin}, min {analysis.min_instances} "
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
                f"| {_text(slice_name(item))} | {item.instances} | {_fmt(item.baseline_accuracy)} | "
                f"{_fmt(item.candidate_accuracy)} | {_fmt(item.difference, True)} | "
                f"[{_fmt(item.lower, True)}, {_fmt(item.upper, True)}] | {item.verdict} |"
            )
        lines += _more(len(unpassed))
    worst = [entry for entry in record.worst_positions if entry.range or entry.worst_accuracy < 1]
    if worst:
        lines += ["", "### Worst positions (candidate; largest range first)", ""]
        lines += [
            f"- {_text(entry.case_id)}: worst {_text(entry.worst_position)} "
            f"({entry.worst_accuracy:.2f}), range {entry.range:.2f} "
            f"(baseline range {_fmt(entry.baseline_range)})"
            for entry in worst[:ROWS_SHOWN]
        ]
        lines += _more(len(worst))
    lines += _layouts_markdown(record.layouts)
    lines += _rollback_markdown(record.rollback)
    for role, summary in (("Candidate", candidate), ("Baseline", baseline)):
        # report.markdown's table still reads the summary's dump
        lines += [
            "",
            f"### {role}'s effective length",
            "",
            *effective_table(summary.effective_lengths),
        ]
    return "\n".join(lines) + "\n"


def _layouts_markdown(layouts: Layouts) -> list[str]:
    """Which paired layouts' token spans moved, apart from which answers changed."""
    lines = ["", "### Layouts", "", f"- {_text(layout_lines(layouts)[0])}"]
    for moved in layouts.moved[:ROWS_SHOWN]:
        lines.append(
            f"- moved: {_text(moved.task)} {_text(moved.case_id)} @ {moved.length} "
            f"{_text(moved.position)}: {moved.baseline_prompt_tokens} -> "
            f"{moved.candidate_prompt_tokens} tokens, spans {moved.baseline_spans} -> "
            f"{moved.candidate_spans}"
        )
    lines += _more(len(layouts.moved))
    unmoved = "same tokens" if layouts.spans_known else "layout unknown: imported"
    for changed in layouts.changed[:ROWS_SHOWN]:
        where = "layout moved" if changed.layout_moved else unmoved
        lines.append(
            f"- answer changed: {_text(changed.task)} {_text(changed.case_id)} @ {changed.length} "
            f"{_text(changed.position)}: {changed.baseline} -> {changed.candidate} ({where})"
        )
    lines += _more(len(layouts.changed))
    return lines


def _rollback_markdown(guidance: Rollback | None) -> list[str]:
    """A FAILed gate's rollback steps, the runtime to restore and the cases command."""
    if guidance is None:
        return []
    lines = ["", "### Rollback", "", *(f"1. {_text(step)}" for step in guidance.steps), ""]
    lines += ["| restore | value |", "|---|---|"]
    lines += [
        f"| {key} | {_text(str(value))} |" for key, value in guidance.restore.items() if value is not None
    ]
    if guidance.cases_command:  # none for an imported candidate: nothing to pin
        lines += ["", "```bash", guidance.cases_command, "```"]
    return lines
