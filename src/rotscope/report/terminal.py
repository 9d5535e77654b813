"""Terminal views: the depth x length heatmap with n per cell, and a line per length."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.report.cells import depth_label, row_key
from rotscope.report.effective import (
    band_text,
    no_scores_text,
)
from rotscope.report.names import shareable
from rotscope.report.numbers import score as _fmt
from rotscope.report.sentence import one_sentence
from rotscope.report.wording import headline, headline_entries, headline_intro, order_note, token_count_line


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
        f"{cell['task']} {cell['length']:,}@{depth_label(cell)} ({cell['error_rate']:.0%})"
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


def heatmap(summary: dict[str, Any], task: str) -> Table:
    cells = [cell for cell in summary["cells"] if cell["task"] == task]
    lengths = sorted({cell["length"] for cell in cells})
    rows = sorted({row_key(cell) for cell in cells})
    table = Table(
        title=f"{task}: accuracy by depth x length (n items, Wilson 95% on instances)", title_justify="left"
    )
    table.add_column("depth \\ length", justify="right")
    for length in lengths:
        table.add_column(f"{length:,}", justify="center")
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
        return f"{_fmt(estimate)} on {entry['pairs']} pairs (too few pairs for an interval){unmatched}"
    interval = f"[{_fmt(entry['ci_low'])}, {_fmt(entry['ci_high'])}]"
    return f"{_fmt(estimate)} {interval} on {entry['pairs']} pairs{unmatched}"


def _print_task(analysis: dict[str, Any], console: Console) -> None:
    why = no_scores_text(analysis)
    if why:
        console.print(f"  {analysis['task']}: no scores: {why}", markup=False)
    gaps = {gap["length"]: gap for gap in analysis["degradation"]}
    for line in analysis["lengths"]:
        gap = gaps.get(line["length"])
        gap_text = (
            f"; gap to {analysis['calibration']['length']:,}: {_gap(gap['gap'], gap)}"
            if gap
            else " (control length)"
        )
        console.print(
            f"  length {line['length']:>6,}: accuracy {_fmt(line['accuracy'])} "
            f"[{_fmt(line['ci_low'])}, {_fmt(line['ci_high'])}] on {line['instances']} instances, "
            f"n={line['n']}, errors={line['errors']}{gap_text}"
        )
    calibration = analysis["calibration"]
    console.print(f"  calibration at {calibration['length']:,}: {band_text(calibration)}")
    if "reasoning" in analysis:
        _print_reasoning(analysis["reasoning"], console)
    console.print(f"  {headline({**analysis['effective_length'], 'data': analysis.get('data')})}")


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
        console.print(generation_line(generation), markup=False)
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
            console.print(line, markup=False)


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


def print_summary(summary: dict[str, Any], console: Console) -> None:
    # Case ids, replies and errors come from outside: none of their control characters reaches
    # the terminal (a reply's clear-screen or window title is shown as its escape).
    summary = shareable(terminal_safe_tree(summary))
    console.print(f"run {summary['run']}: model {summary['model']}", markup=False, highlight=False)
    for analysis in summary["tasks"]:
        console.print(heatmap(summary, analysis["task"]))
        _print_task(analysis, console)
    for control in summary["controls"]:
        scored = control["n"] - control["errors"] - control["pending"]
        where = f" in {control['filler']} filler" if control.get("filler") else ""
        outcome = (
            f"{control['correct']}/{scored} complied by chance (base rate without the instruction)"
            if control.get("kind") == "compliance"
            else f"{control['correct']}/{scored} abstained correctly, "
            f"{control['hallucinated']} answered anyway"
        )
        console.print(f"evidence-absent control {control['task']} @ {control['length']:,}{where}: {outcome}")
    for line in filler_gap_lines(summary.get("filler_gap") or []):
        console.print(line, markup=False, highlight=False)
    _print_cases(summary, console)
    per_task = summary["effective_lengths"]
    console.print(headline_intro(per_task), style="bold", markup=False)
    for task, text in headline_entries(per_task):
        console.print(f"  {task}: {text}", style="bold", markup=False)
    items = summary["items"]
    tokens = summary["tokens"]
    execution = summary["execution"]
    reuse = {True: "on", False: "off (cold)", None: "n/a"}[execution["prefix_cache"]]
    console.print(
        f"order: {execution['order']}{order_note(execution['order'])}; KV prefix reuse: {reuse}"
        f"{engine_note(execution)}",
        markup=False,
    )
    approximate = (summary.get("token_counts") or {}).get("method") == "approximate"
    console.print(
        token_count_line(summary), style="bold yellow" if approximate else None, markup=False, soft_wrap=True
    )
    console.print(
        f"items {items['done']}/{items['total']} done, {items['errors']} errors, "
        f"{items['rejected_prompts']} prompts rejected by the verifier; prompt tokens evaluated "
        f"{_count(tokens['evaluated'])}, from cache {_count(tokens['cached'])} "
        f"(naive {tokens['naive_prefill']:,}, lower bound {tokens['lower_bound']:,}){cached_note(tokens)}"
    )
    console.print(spend_line(summary), markup=False)
    warning = error_cap_warning(summary)
    if warning is not None:
        console.print(Text(warning, style="bold white on red"))
    _print_plan_and_cache(summary, console)
    sentence = one_sentence(summary)
    if sentence is not None:
        console.print(sentence, style="bold", markup=False, highlight=False, soft_wrap=True)
