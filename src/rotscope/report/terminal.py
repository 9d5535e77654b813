"""Terminal views: the depth x length heatmap with n per cell, and a line per length."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.report.cells import depth_label, row_key
from rotscope.report.effective import no_scores_text
from rotscope.report.lines import say as _say
from rotscope.report.names import shareable_data
from rotscope.report.numbers import score as _fmt
from rotscope.report.sentence import closing_task, one_sentence
from rotscope.report.wording import band_verdict, effective_short, lead_line, order_note, token_count_line


def _colour(accuracy: float) -> str:
    if accuracy >= 0.85:
        return "bold white on green"
    if accuracy >= 0.6:
        return "black on yellow"
    if accuracy >= 0.3:
        return "white on dark_orange3"
    return "white on red"


def _cell_notes(cell: dict[str, Any]) -> str:
    """Errors and judged items of a cell, on a line of their own when there are any."""
    notes = []
    if cell.get("errors"):
        notes.append(f"err {cell['error_rate']:.0%}")
    if cell.get("judged"):
        notes.append(f"judged {cell['judged']}")
    if cell.get("rejected"):
        notes.append(f"rej {cell['rejected']}")
    return "\n" + " ".join(notes) if notes else ""


def error_cap_warning(summary: dict[str, Any]) -> str | None:
    """The loud line of a run whose error rate is above its cap, or ``None``."""
    cap = summary.get("error_cap")
    if not cap or not cap["exceeded"]:
        return None
    cells = ", ".join(
        f"{cell['task']} {cell['length']:,} at {depth_label(cell)} ({cell['error_rate']:.0%})"
        for cell in cap["cells_over"]
    )
    return (
        f"ERROR RATE {cap['error_rate']:.1%} EXCEEDS THE CAP {cap['max_error_rate']:.1%}: accuracy rests on "
        f"fewer items than planned; retry with rotscope run --resume. Cells over the cap: {cells or 'none'}"
    )


def spend_line(summary: dict[str, Any]) -> str:
    cost = summary.get("cost") or {}
    usd = f"${cost.get('usd', 0.0):.4f}" + ("" if cost.get("priced", True) else " (some calls unpriced)")
    budget = f" of a ${cost['max_cost']:.4f} budget" if cost.get("max_cost") else ""
    judge = summary.get("judge")
    judged = f"; judge {judge['model']}: {judge['verdicts']}" if judge else ""
    return f"cost {usd}{budget}; {cost.get('cached_responses', 0)} responses from the cache{judged}"


def heatmap_title(summary: dict[str, Any], task: str) -> str:
    """The heat map's title, a line of its own (a table's title wraps at the table's width), naming
    the cells' interval as the summary does (``ci_method``)."""
    methods = {cell.get("ci_method") for cell in summary["cells"] if cell["task"] == task} - {None}
    method = methods.pop() if len(methods) == 1 else "interval on instances"
    return f"{task}: accuracy by depth × length (n items; 95% {method})"


def heatmap(summary: dict[str, Any], task: str) -> Table:
    cells = [cell for cell in summary["cells"] if cell["task"] == task]
    lengths = sorted({cell["length"] for cell in cells})
    rows = sorted({row_key(cell) for cell in cells})
    table = Table()
    table.add_column("depth \\ length", justify="right", no_wrap=True)
    for length in lengths:
        table.add_column(f"{length:,}", justify="center", no_wrap=True)
    lookup = {(row_key(cell), cell["length"]): cell for cell in cells}
    for key in rows:
        row: list[Text | str] = [key[2]]
        for length in lengths:
            cell = lookup.get((key, length))
            if cell is not None and cell.get("all_rejected"):
                row.append(Text(f"rejected ({cell['rejected']})"))
            elif cell is None or cell["accuracy"] is None:
                row.append(Text("·" if cell is None else f"- ({cell['n']})"))
            else:
                label = (
                    f"{cell['accuracy']:.2f} n={cell['n']}\n[{_fmt(cell['ci_low'])}, {_fmt(cell['ci_high'])}]"
                    f"{_cell_notes(cell)}"
                )
                row.append(Text(label, style=_colour(cell["accuracy"])))
        table.add_row(*row)
    return table


def _gap(estimate: float | None, entry: dict[str, Any]) -> str:
    """A paired gap with its interval, or the note that it has too few pairs for one."""
    unmatched = f" ({entry['unmatched']} unmatched left out)" if entry.get("unmatched") else ""
    if entry.get("too_few"):
        return f"{_fmt(estimate, True)} on {entry['pairs']} pairs (too few pairs for an interval){unmatched}"
    interval = f"[{_fmt(entry['ci_low'], True)}, {_fmt(entry['ci_high'], True)}]"
    return f"{_fmt(estimate, True)} {interval} on {entry['pairs']} pairs{unmatched}"


def heatmap_rows(summary: dict[str, Any], task: str) -> int:
    """How many rows the task's heat map has (one: its cells are the per-length accuracies)."""
    return len({row_key(cell) for cell in summary["cells"] if cell["task"] == task})


def length_lines(analysis: dict[str, Any], show_accuracy: bool = True) -> list[str]:
    """A header, then a line per length: accuracy with its interval on instances (left out where
    the heat map's one row already shows it), instances and items, errors when there are any, and
    the paired gap to the base."""
    gaps = {gap["length"]: gap for gap in analysis.get("degradation") or []}
    base = (analysis.get("calibration") or {}).get("length")
    rows = analysis.get("lengths") or []
    if all(row.get("accuracy") is None for row in rows):
        return []  # no scores: the task's line says why
    accuracy_head = "accuracy [95%] on instances" if show_accuracy else "the heat map's accuracy on instances"
    gap_head = f"; paired gap to {base:,} [95%]" if base is not None and gaps else ""
    lines = [f"  by length: {accuracy_head}{gap_head}"]
    width = max(len(f"{row['length']:,}") for row in rows)
    for line in rows:
        gap = gaps.get(line["length"])
        accuracy = (
            f"{_fmt(line['accuracy'])} [{_fmt(line['ci_low'])}, {_fmt(line['ci_high'])}] on "
            if show_accuracy
            else ""
        )
        errors = f", {line['errors']} errors" if line.get("errors") else ""
        if gap:
            after = f"  gap {_gap(gap['gap'], gap)}"
        elif line["length"] == base:
            after = "  base"
        else:
            after = ""
        items = "" if line["n"] == line["instances"] else f", {line['n']} items"
        lines.append(
            f"    {line['length']:>{width},}  {accuracy}{line['instances']} instances{items}{errors}{after}"
        )
    return lines


TOP_CATEGORIES = 4
"""How many failure categories a task's line names (the rest are counted together)."""


def category_line(summary: dict[str, Any], task: str) -> str | None:
    """``wrong answers by category: decoy 12, filter_ignored 5, other 3`` over the task's cells
    (most frequent first; the full table is in the JSON and the HTML report), or ``None``."""
    counts: dict[str, int] = {}
    for cell in summary["cells"]:
        if cell["task"] == task:
            for name, count in (cell.get("categories") or {}).items():
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
    summary: dict[str, Any], analysis: dict[str, Any], console: Console, closing: str | None, unled: bool
) -> None:
    """A task's block: its heat map, a line per length, its failure categories, its calibration and,
    unless the closing sentence is on it, its effective length."""
    task = analysis["task"]
    _say(console, heatmap_title(summary, task), style="bold")
    console.print(heatmap(summary, task))
    why = no_scores_text(analysis)
    if why:
        _say(console, f"  {task}: no scores: {why}")
    for line in length_lines(analysis, show_accuracy=heatmap_rows(summary, task) > 1):
        _say(console, line)
    categories = category_line(summary, task)
    if categories:
        _say(console, categories)
    calibration = analysis.get("calibration")
    # Without a lead, the closing sentence says its task's calibration with the numbers.
    if calibration and not (task == closing and unled):
        _say(console, f"  calibration at {calibration['length']:,}: {band_verdict(calibration)}")
    if "reasoning" in analysis:
        _print_reasoning(analysis["reasoning"], console)
    effective = analysis.get("effective_length")
    if task == closing and effective and effective.get("unbalanced_lengths"):
        # The closing sentence has no room for it; the lengths it compares hold different pairs.
        lacks = ", ".join(
            f"length {entry['length']:,} lacks {entry['missing']} (case, position) pairs"
            for entry in effective["unbalanced_lengths"]
        )
        _say(console, f"  unbalanced against the base: {lacks}")
    if task != closing and effective:
        shown = effective_short({**effective, "data": analysis.get("data")})
        _say(console, f"  effective length of {task}: {shown}")


def _case_list(summary: dict[str, Any], ids: list[str]) -> str:
    worst = {entry["case_id"]: entry["worst"] for entry in summary.get("cases", [])}
    shown = []
    for case_id in ids:
        at = worst.get(case_id)
        shown.append(f"{case_id} (worst {at['position']} at {at['length']:,} tokens)" if at else case_id)
    return ", ".join(shown)


def _print_cases(summary: dict[str, Any], console: Console) -> None:
    """Evidence-only controls, capability failures apart from positional ones, high-risk rows."""
    for control in summary.get("evidence_only", []):
        console.print(
            f"evidence-only control {control['task']}: accuracy {_fmt(control['accuracy'])} "
            f"(n={control['n']}, errors={control['errors']}; the evidence alone, no padding)"
        )
    if summary.get("capability_failures"):
        console.print(
            "capability failures (wrong even with the evidence alone): "
            + ", ".join(summary["capability_failures"]),
            markup=False,
        )
    if summary.get("positional_failures"):
        console.print(
            "positional failures (right with the evidence alone, wrong at some layout): "
            + _case_list(summary, summary["positional_failures"]),
            markup=False,
        )
    risky = [entry for entry in summary.get("cases", []) if entry["forbidden_claims"]]
    if risky:
        console.print(
            f"[bold red]high risk:[/bold red] {summary['high_risk']} answers state a forbidden claim, in "
            + ", ".join(entry["case_id"] for entry in risky)
        )
    for entry in summary.get("cases", []):
        if entry["missing_claims"] or entry["wrong_citations"] or entry["missing_citations"]:
            console.print(
                f"  {entry['case_id']}: missing claims {entry['missing_claims'] or '-'}, wrong citations "
                f"{entry['wrong_citations'] or '-'}, uncited claims {entry['missing_citations'] or '-'}",
                markup=False,
            )


def filler_share(entry: dict[str, Any]) -> str:
    """``3 of 7 wrong answers from the filler (43%)``: the share with its denominator, the wrong
    answers that gave a number (one answer is no "100%")."""
    numbered = entry["wrong"] - entry["unparsed"]
    matched = entry["filler_answer"] + entry["filler_number"]
    if not numbered:
        return "no wrong answer gave a number"
    answers = "wrong answer" if numbered == 1 else "wrong answers"
    return f"{matched} of {numbered} {answers} from the filler ({matched / numbered:.0%})"


def _print_reasoning(reasoning: dict[str, Any], console: Console) -> None:
    console.print(
        "  drop from end (end accuracy minus the layout's, paired on the same items, 95% adjusted t):"
    )
    for drop in reasoning["drops"]:
        console.print(
            f"    length {drop['length']:>6,} {drop['filler']:<15} {drop['layout']:<13} "
            f"end {_fmt(drop['end_accuracy'])} vs {_fmt(drop['layout_accuracy'])}: drop "
            f"{_gap(drop['drop'], drop)}"
        )
    console.print("  wrong answers traced to the filler (share of wrong answers that gave a number):")
    for entry in reasoning["interference"]:
        console.print(
            f"    {entry['filler']:<15} {entry['layout']:<13} {entry['wrong']:>3} wrong: "
            f"filler answer {entry['filler_answer']}, other filler number {entry['filler_number']}, "
            f"neither {entry['other']}, no 'Answer: <number>' {entry['unparsed']} "
            f"-> {filler_share(entry)}"
        )


def _usd(usd: float | None) -> str:
    """A session's cost; ``None`` in a run from before sessions were priced."""
    return "unpriced" if usd is None else f"${usd:.4f}"


def generation_line(generation: dict[str, Any]) -> str:
    """What the model's writing of its own session cost (``filler.assistant: model``)."""
    return (
        f"session written by the model: {generation['sessions']} session(s) of {generation['turns']} turns, "
        f"{generation['calls']} calls, prompt tokens {generation['prompt_tokens']:,}, completion tokens "
        f"{generation['completion_tokens']:,}, {generation['latency_s']:.1f} s, "
        f"{_usd(generation.get('usd'))} (not in the token counts above; in the cost)"
    )


def _print_plan_and_cache(summary: dict[str, Any], console: Console) -> None:
    generation = summary.get("session_generation")
    if generation:
        _say(console, generation_line(generation))
    plan = summary.get("plan")
    if plan:
        deviations = plan["deviations"]
        console.print(f"frozen plan {plan['digest']}: {len(deviations)} deviation(s) recorded")
        for deviation in deviations:
            console.print(
                f"  deviation {deviation['field']}: "
                f"plan {deviation['planned']!r}, run {deviation['actual']!r}",
                markup=False,
            )
    cache = summary.get("cache_control")
    if cache:
        line = (
            f"cache control: {cache['compared']} items re-run cold, {cache['differing']} replies differ from "
            f"warm; correct warm {cache['warm_correct']:g}, cold {cache['cold_correct']:g} ({cache['rule']})"
        )
        if cache["incident"]:
            console.print(f"[bold red]RUNTIME CORRECTNESS INCIDENT[/bold red] {line}", highlight=False)
            for example in cache["examples"]:
                console.print(
                    f"  {example['call_id']}: "
                    f"warm {example['warm_response']!r}, cold {example['cold_response']!r}",
                    markup=False,
                )
        else:
            _say(console, line)


def _count(tokens: int | None) -> str:
    return "unknown" if tokens is None else f"{tokens:,}"


def cached_note(tokens: dict[str, Any]) -> str:
    """Where the cached counts came from, when not every call's usage reported them."""
    notes = []
    if tokens.get("cached_from_log"):
        notes.append(f"{tokens['cached_from_log']:,} calls' cached tokens counted from the server's log")
    if tokens.get("cached_unknown"):
        notes.append(
            f"{tokens['cached_unknown']:,} calls' cached tokens unknown (the server reports none; "
            "remote.server_log counts them from a llama-cpp-python server's log)"
        )
    return "; " + "; ".join(notes) if notes else ""


def engine_note(execution: dict[str, Any]) -> str:
    """``; engine extra_buffers=off (why), 2 threads (tuned by doctor), n_batch 256 (set), in a
    worker process, 1 crash`` for a local engine."""
    engine = execution.get("engine")
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


def filler_gap_lines(gaps: list[dict[str, Any]]) -> list[str]:
    """The static-vs-session comparison, a line per task and length (pooled first)."""
    if not gaps:
        return []
    lines = ["static vs session filler (session minus static, paired on cases, 95% adjusted t):"]
    for gap in gaps:
        where = "all lengths" if gap["length"] is None else f"length {gap['length']:,}"
        if gap["ci_low"] is None:
            interval = "too few pairs for an interval"
        else:
            interval = f"[{gap['ci_low']:+.2f}, {gap['ci_high']:+.2f}]"
        estimate = "n/a" if gap["gap"] is None else f"{gap['gap']:+.2f}"
        lines.append(
            f"  {gap['task']:<12} {where:<14} static {_fmt(gap['static_accuracy'])} session "
            f"{_fmt(gap['session_accuracy'])}: gap {estimate} {interval} on {gap['pairs']} cases"
            + (f", {gap['unmatched']} unmatched layouts" if gap["unmatched"] else "")
        )
    return lines


def _print_controls(summary: dict[str, Any], console: Console) -> None:
    """The evidence-absent controls, a line per task and filler: each length's outcome."""
    grouped: dict[tuple[str, str | None, str], list[dict[str, Any]]] = {}
    for control in summary["controls"]:
        key = (control["task"], control.get("filler"), control.get("kind") or "abstain")
        grouped.setdefault(key, []).append(control)
    for (task, filler, kind), controls in grouped.items():
        where = f" in {filler} filler" if filler else ""
        outcomes = ", ".join(
            f"{control['correct']}/{control['n'] - control['errors'] - control['pending']} at "
            f"{control['length']:,}"
            for control in controls
        )
        if kind == "compliance":
            what = f"complied by chance (the base rate without the instruction): {outcomes}"
        else:
            answered = sum(control["hallucinated"] for control in controls)
            what = f"abstained correctly {outcomes}; {answered} answered anyway"
        _say(console, f"evidence-absent control {task}{where}: {what}")


def _print_run(summary: dict[str, Any], console: Console) -> None:
    """What ran: the model, the items, the tokens and their counting, the order and the cost."""
    _say(console, f"run {summary['run']}: model {summary['model']}")
    items = summary["items"]
    if summary.get("imported"):  # rotscope import: no prompts were built, sent or verified here
        _say(console, summary["imported"]["note"], style="bold yellow")
        _say(console, f"items {items['done']}/{items['total']} scored, {items['errors']} errors")
        _say(console, token_count_line(summary))
        _say(console, spend_line(summary))
        return
    tokens = summary["tokens"]
    execution = summary["execution"]
    reuse = {True: "on", False: "off (cold)", None: "n/a"}[execution.get("prefix_cache")]
    _say(
        console,
        f"items {items['done']}/{items['total']} done, {items['errors']} errors, "
        f"{items['rejected_prompts']} prompts rejected by the verifier; prompt tokens evaluated "
        f"{_count(tokens['evaluated'])}, from cache {_count(tokens['cached'])} "
        f"(naive {tokens['naive_prefill']:,}, lower bound {tokens['lower_bound']:,}){cached_note(tokens)}",
    )
    approximate = (summary.get("token_counts") or {}).get("method") == "approximate"
    _say(console, token_count_line(summary), style="bold yellow" if approximate else None)
    _say(
        console,
        f"order: {execution['order']}{order_note(execution['order'])}; KV prefix reuse: {reuse}"
        f"{engine_note(execution)}",
    )
    _say(console, spend_line(summary))
    _print_plan_and_cache(summary, console)


def print_summary(summary: dict[str, Any], console: Console) -> None:
    """The first screen: what ran, then per task its heat map, a line per length (accuracy with its
    interval, the gap to the base), its failure categories and calibration, then the one closing
    sentence; the effective length of the sentence's task is said there only."""
    # Case ids, replies and errors come from outside: none of their control characters reaches
    # the terminal (a reply's clear-screen or window title is shown as its escape).
    summary = shareable_data(terminal_safe_tree(summary))
    _print_run(summary, console)
    per_task = summary["effective_lengths"]
    closing = closing_task(per_task)
    for analysis in summary["tasks"]:
        _print_task(summary, analysis, console, closing, per_task.get("lead") is None)
    _print_controls(summary, console)
    for line in filler_gap_lines(summary.get("filler_gap") or []):
        _say(console, line)
    _print_cases(summary, console)
    warning = error_cap_warning(summary)
    if warning is not None:
        _say(console, warning, style="bold white on red")
    if per_task.get("lead") is not None and len(per_task["tasks"]) > 1:
        _say(console, lead_line(per_task), style="bold")
    sentence = one_sentence(summary, with_numbers=False)
    if sentence is not None:
        _say(console, sentence, style="bold", indent="")
