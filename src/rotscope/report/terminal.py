"""Terminal views: the depth x length heatmap with n per cell, and a line per length; the sections
below the heat maps are in ``report.terminal_sections``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe
from rotscope.records.cells import Cell
from rotscope.records.run import Execution, ReplicaLine, Tokens
from rotscope.records.scores import ScoreAgreement
from rotscope.records.summary import Summary
from rotscope.records.tasks import TaskAnalysis
from rotscope.report.cells import depth_label, row_key
from rotscope.report.effective import no_scores_text
from rotscope.report.first_lines import headline, next_step
from rotscope.report.lines import say as _say
from rotscope.report.names import shareable, terminal_safe_summary
from rotscope.report.numbers import score as _fmt
from rotscope.report.questions import question_lines
from rotscope.report.scores import (
    agreement_line,
    agreement_of,
    kept_line,
    other_text,
    score_headline,
    score_label,
)
from rotscope.report.sentence import closing_task, one_sentence
from rotscope.report.separations import separation_lines
from rotscope.report.terminal_sections import (
    filler_gap_lines,
    gap_text,
    print_cases,
    print_controls,
    print_plan_and_cache,
    print_reasoning,
)
from rotscope.report.wording import band_verdict, effective_short, lead_line, order_note, token_count_line


def _colour(accuracy: float) -> str:
    if accuracy >= 0.85:
        return "bold white on green"
    if accuracy >= 0.6:
        return "black on yellow"
    if accuracy >= 0.3:
        return "white on dark_orange3"
    return "white on red"


def _cell_notes(cell: Cell) -> str:
    """Errors and judged items of a cell, on a line of their own when there are any."""
    notes = []
    if cell.errors:
        notes.append(f"err {cell.error_rate:.0%}")
    if cell.judged:
        notes.append(f"judged {cell.judged}")
    if cell.rejected:
        notes.append(f"rej {cell.rejected}")
    return "\n" + " ".join(notes) if notes else ""


def error_cap_warning(summary: Summary) -> str | None:
    """The loud line of a run whose error rate is above its cap, or ``None``."""
    cap = summary.error_cap
    if not cap.exceeded:
        return None
    cells = ", ".join(
        f"{cell.task} {cell.length:,} at {depth_label(cell)} ({cell.error_rate:.0%})"
        for cell in cap.cells_over
    )
    return (
        f"ERROR RATE {cap.error_rate:.1%} EXCEEDS THE CAP {cap.max_error_rate:.1%}: accuracy rests on "
        f"fewer items than planned; retry with rotscope run --resume. Cells over the cap: {cells or 'none'}"
    )


def spend_line(summary: Summary) -> str:
    cost = summary.cost
    if summary.imported is not None and not cost.usd and not cost.priced:
        usd = "unknown (the imported file gives no cost)"
    else:
        usd = f"${cost.usd:.4f}" + ("" if cost.priced else " (some calls unpriced)")
    budget = f" of a ${cost.max_cost:.4f} budget" if cost.max_cost else ""
    judge = summary.judge
    judged = f"; judge {judge.model}: {judge.verdicts}" if judge else ""
    return f"cost {usd}{budget}; {cost.cached_responses} responses from the cache{judged}"


def _cells_of(summary: Summary, task: str) -> list[Cell]:
    return [cell for cell in summary.cells if cell.task == task]


def heatmap_title(summary: Summary, task: str) -> str:
    """The heat map's title, a line of its own (a table's title wraps at the table's width), naming
    the cells' interval as the summary does (``ci_method``)."""
    methods = {cell.ci_method for cell in _cells_of(summary, task)} - {None}
    method = methods.pop() if len(methods) == 1 else "interval on instances"
    return f"{task}: {score_label(summary.score)} by depth × length (n items; 95% {method})"


def heatmap(summary: Summary, task: str) -> Table:
    cells = _cells_of(summary, task)
    lengths = sorted({cell.length for cell in cells})
    rows = sorted({row_key(cell) for cell in cells})
    table = Table()
    table.add_column("depth \\ length", justify="right", no_wrap=True)
    for length in lengths:
        table.add_column(f"{length:,}", justify="center", no_wrap=True)
    lookup = {(row_key(cell), cell.length): cell for cell in cells}
    for key in rows:
        row: list[Text | str] = [key[2]]
        for length in lengths:
            cell = lookup.get((key, length))
            if cell is not None and cell.all_rejected:
                row.append(Text(f"rejected ({cell.rejected})"))
            elif cell is None or cell.accuracy is None:
                row.append(Text("·" if cell is None else f"- ({cell.n})"))
            else:
                label = (
                    f"{cell.accuracy:.2f} n={cell.n}\n[{_fmt(cell.ci_low)}, {_fmt(cell.ci_high)}]"
                    f"{_cell_notes(cell)}"
                )
                row.append(Text(label, style=_colour(cell.accuracy)))
        table.add_row(*row)
    return table


def heatmap_rows(summary: Summary, task: str) -> int:
    """How many rows the task's heat map has (one: its cells are the per-length accuracies)."""
    return len({row_key(cell) for cell in _cells_of(summary, task)})


def length_lines(
    analysis: TaskAnalysis,
    show_accuracy: bool = True,
    score: str = "accuracy",
    other: ScoreAgreement | None = None,
) -> list[str]:
    """A header, then a line per length: the score (accuracy, or the answer probability) with its
    interval on instances (left out where the heat map's one row already shows it), instances and
    items, errors when there are any, and the paired gap to the base; where the run has both
    scores (``other``), a second line per length with the other score and its interval."""
    gaps = {gap.length: gap for gap in analysis.degradation or []}
    base = analysis.calibration.length if analysis.calibration else None
    rows = analysis.lengths or []
    if all(row.accuracy is None for row in rows):
        return []  # no scores: the task's line says why
    label = score_label(score)
    accuracy_head = f"{label} [95%] on instances" if show_accuracy else f"the heat map's {label} on instances"
    # The gaps' interval with its clusters (analysis.clusters), where one method made them all.
    methods = {gap.method for gap in gaps.values() if gap.ci_low is not None and gap.method}
    method = f", {methods.pop()}" if len(methods) == 1 else ""
    gap_head = f"; paired gap to {base:,} [95%{method}]" if base is not None and gaps else ""
    lines = [f"  by length: {accuracy_head}{gap_head}"]
    width = max(len(f"{row.length:,}") for row in rows)
    others = {line.length: line for line in other.lengths} if other is not None else {}
    for line in rows:
        gap = gaps.get(line.length)
        accuracy = (
            f"{_fmt(line.accuracy)} [{_fmt(line.ci_low)}, {_fmt(line.ci_high)}] on " if show_accuracy else ""
        )
        errors = f", {line.errors} errors" if line.errors else ""
        if gap:
            after = f"  gap {gap_text(gap.gap, gap)}"
        elif line.length == base:
            after = "  base"
        else:
            after = ""
        items = "" if line.n == line.instances else f", {line.n} items"
        lines.append(
            f"    {line.length:>{width},}  {accuracy}{line.instances} instances{items}{errors}{after}"
        )
        if line.length in others:
            lines.append(f"    {'':>{width}}  {other_text(others[line.length], score)}")
    return lines


TOP_CATEGORIES = 4
"""How many failure categories a task's line names (the rest are counted together)."""


def category_line(summary: Summary, task: str) -> str | None:
    """``wrong answers by category: decoy 12, filter_ignored 5, other 3`` over the task's cells
    (most frequent first; the full table is in the JSON and the HTML report), or ``None``."""
    counts: dict[str, int] = {}
    for cell in _cells_of(summary, task):
        for name, count in (cell.categories or {}).items():
            counts[name] = counts.get(name, 0) + count
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = [f"{name} {count}" for name, count in ranked[:TOP_CATEGORIES]]
    rest = sum(count for _, count in ranked[TOP_CATEGORIES:])
    if rest:
        shown.append(f"{len(ranked) - TOP_CATEGORIES} more {rest}")
    return f"  failures by category ({sum(counts.values())} items): " + ", ".join(shown)


def _print_task(
    summary: Summary, analysis: TaskAnalysis, console: Console, closing: str | None, unled: bool
) -> None:
    """A task's block: its heat map, a line per length, its failure categories, its calibration and,
    unless the closing sentence is on it, its effective length."""
    task = analysis.task
    _say(console, heatmap_title(summary, task), style="bold")
    console.print(heatmap(summary, task))
    why = no_scores_text(analysis)
    if why:
        _say(console, f"  {task}: no scores: {why}")
    agreement = agreement_of(summary, task)
    shown = length_lines(
        analysis, show_accuracy=heatmap_rows(summary, task) > 1, score=summary.score, other=agreement
    )
    for line in shown:
        _say(console, line)
    if agreement is not None:
        _say(console, agreement_line(agreement))
    categories = category_line(summary, task)
    if categories:
        _say(console, categories)
    calibration = analysis.calibration
    # Without a lead, the closing sentence says its task's calibration with the numbers.
    if calibration and not (task == closing and unled):
        _say(console, f"  calibration at {calibration.length:,}: {band_verdict(calibration)}")
    if analysis.reasoning is not None:
        print_reasoning(analysis.reasoning, console)
    effective = analysis.effective_length
    if task == closing and effective and effective.unbalanced_lengths:
        # The closing sentence has no room for it; the lengths it compares hold different pairs.
        lacks = ", ".join(
            f"length {entry.length:,} lacks {entry.missing} (case, position) pairs"
            for entry in effective.unbalanced_lengths
        )
        _say(console, f"  unbalanced against the base: {lacks}")
    if task != closing and effective:
        _say(console, f"  effective length of {task}: {effective_short(effective, analysis.data)}")


def _count(tokens: int | None) -> str:
    return "unknown" if tokens is None else f"{tokens:,}"


def cached_note(tokens: Tokens) -> str:
    """Where the cached counts came from, when not every call's usage reported them."""
    notes = []
    if tokens.cached_from_log:
        notes.append(f"{tokens.cached_from_log:,} calls' cached tokens counted from the server's log")
    if tokens.cached_unknown:
        notes.append(
            f"{tokens.cached_unknown:,} calls' cached tokens unknown (the server reports none; "
            "remote.server_log counts them from a llama-cpp-python server's log)"
        )
    return "; " + "; ".join(notes) if notes else ""


def engine_note(execution: Execution) -> str:
    """``; engine extra_buffers=off (why), 2 threads (tuned by doctor), n_batch 256 (set), in a
    worker process, 1 crash`` for a local engine."""
    engine = execution.engine  # the engine's own description: open, not a record
    if not engine:
        return ""
    verdict = engine.get("verdict") or {}
    why = f" ({verdict['reason']})" if verdict.get("reason") else ""
    where = ", in a worker process" if engine.get("worker_process") else ", in-process"
    crashes = engine.get("crashes") or 0
    settings = engine.get("settings") or {}
    threads = (
        f", {settings['threads']} thread{'' if settings['threads'] == 1 else 's'} "
        f"({settings['threads_from']}), n_batch {settings['n_batch']}"
        + (f" ({settings['n_batch_from']})" if settings.get("n_batch_from") else "")
        if settings.get("threads")
        else ""
    )
    return f"; engine {engine['mode']}{why}{threads}{where}" + (f", {crashes} crash(es)" if crashes else "")


def replicas_line(replicas: list[ReplicaLine]) -> str:
    """``replicas: http://a 20 calls, 0 failed; http://b 8 calls, 3 failed, taken out once, after
    its call 8 (3 failed calls in a row, ...)``."""
    parts = []
    for line in replicas:
        words = f"{line.replica} {line.calls} calls, {line.failures} failed"
        if line.taken_out:
            times = "once" if line.taken_out == 1 else f"{line.taken_out} times"
            words += f", taken out of the pool {times}, last after its call {line.at_call} ({line.reason})"
        parts.append(words)
    return "replicas: " + "; ".join(parts)


def _print_run(summary: Summary, console: Console) -> None:
    """What ran: the model, the items, the tokens and their counting, the order and the cost."""
    _say(console, f"run {summary.run}: model {summary.model}")
    items = summary.items
    if summary.imported:  # rotscope import: no prompts were built, sent or verified here
        _say(console, summary.imported.note, style="bold yellow")
        _say(console, f"items {items.done}/{items.total} scored, {items.errors} errors")
        _say(console, token_count_line(summary))
        _say(console, spend_line(summary))
        return
    tokens = summary.tokens
    execution = summary.execution
    reuse = {True: "on", False: "off (cold)", None: "n/a"}[execution.prefix_cache]
    _say(
        console,
        f"items {items.done}/{items.total} done, {items.errors} errors, "
        f"{items.rejected_prompts} prompts rejected by the verifier; prompt tokens evaluated "
        f"{_count(tokens.evaluated)}, from cache {_count(tokens.cached)} "
        f"(naive {tokens.naive_prefill:,}, lower bound {tokens.lower_bound:,}){cached_note(tokens)}",
    )
    approximate = summary.token_counts.method == "approximate"
    _say(console, token_count_line(summary), style="bold yellow" if approximate else None)
    _say(
        console,
        f"order: {execution.order}{order_note(execution.order)}; KV prefix reuse: {reuse}"
        f"{engine_note(execution)}",
    )
    if execution.replicas:
        _say(console, replicas_line(execution.replicas))
    _say(console, spend_line(summary))
    kept = kept_line(summary)
    if kept is not None:
        _say(console, kept)
    print_plan_and_cache(summary, console)


def print_summary(summary: Summary, console: Console, folder: str | None = None) -> None:
    """The first screen: what ran, then per task its heat map, a line per length (accuracy with its
    interval, the gap to the base), its failure categories and calibration, then the one closing
    sentence; last, the headline (``first_lines``) and, given the run's ``folder`` as the user
    typed it, the next step."""
    # Case ids, replies and errors come from outside: none of their control characters reaches
    # the terminal (a reply's clear-screen or window title is shown as its escape).
    summary = shareable(terminal_safe_summary(summary))
    _print_run(summary, console)
    per_task = summary.effective_lengths
    closing = closing_task(per_task)
    for analysis in summary.tasks:
        _print_task(summary, analysis, console, closing, per_task.lead is None)
    print_controls(summary, console)
    for line in filler_gap_lines(summary.filler_gap):
        _say(console, line)
    for line in separation_lines(summary.separations):
        _say(console, line)
    print_cases(summary, console)
    for line in question_lines(summary):
        _say(console, line)
    warning = error_cap_warning(summary)
    if warning is not None:
        _say(console, warning, style="bold white on red")
    if per_task.lead is not None and len(per_task.tasks) > 1:
        _say(console, lead_line(per_task), style="bold")
    sentence = one_sentence(summary, with_numbers=False)
    if sentence is not None:
        # the score the sentence stands on, and the other where the run has both, just before it
        _say(console, score_headline(summary, closing), style="bold", indent="")
        _say(console, sentence, style="bold", indent="")
    first = headline(summary)
    if first is not None:
        _say(console, first, style="bold")
    if folder is not None:
        _say(console, next_step(terminal_safe(folder)))
