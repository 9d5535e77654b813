"""Terminal views: the depth x length heatmap with n per cell, and a line per length."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rotscope.report.cells import row_key


def _colour(accuracy: float) -> str:
    if accuracy >= 0.85:
        return "bold white on green"
    if accuracy >= 0.6:
        return "black on yellow"
    if accuracy >= 0.3:
        return "white on dark_orange3"
    return "white on red"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


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
            if cell is None or cell["accuracy"] is None:
                row.append(Text("·" if cell is None else f"- ({cell['n']})"))
            else:
                label = (
                    f"{cell['accuracy']:.2f} n={cell['n']}\n[{_fmt(cell['ci_low'])}, {_fmt(cell['ci_high'])}]"
                )
                row.append(Text(label, style=_colour(cell["accuracy"])))
        table.add_row(*row)
    return table


def headline(effective: dict[str, Any]) -> str:
    value = effective["value"]
    shown = f"{value:,} tokens" if value is not None else "below the shortest length tested"
    interval = ""
    if effective.get("base_ci"):
        interval = f" [{_fmt(effective['base_ci'][0])}, {_fmt(effective['base_ci'][1])}]"
    base = _fmt(effective["base_score"])
    return f"Effective length: {shown} ({effective['definition']}); base score {base}{interval}"


def _print_task(analysis: dict[str, Any], console: Console) -> None:
    gaps = {gap["length"]: gap for gap in analysis["degradation"]}
    for line in analysis["lengths"]:
        gap = gaps.get(line["length"])
        gap_text = (
            f"; gap to {analysis['calibration']['length']:,}: {_fmt(gap['gap'])} "
            f"[{_fmt(gap['ci_low'])}, {_fmt(gap['ci_high'])}] on {gap['pairs']} pairs"
            if gap
            else " (control length)"
        )
        console.print(
            f"  length {line['length']:>6,}: accuracy {_fmt(line['accuracy'])} "
            f"[{_fmt(line['ci_low'])}, {_fmt(line['ci_high'])}] on {line['instances']} instances, "
            f"n={line['n']}, errors={line['errors']}{gap_text}"
        )
    calibration = analysis["calibration"]
    console.print(f"  calibration at {calibration['length']:,}: {calibration['verdict']}")
    if "reasoning" in analysis:
        _print_reasoning(analysis["reasoning"], console)
    console.print(f"  {headline(analysis['effective_length'])}")


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _print_reasoning(reasoning: dict[str, Any], console: Console) -> None:
    console.print(
        "  drop from end (end accuracy minus the layout's, paired on the same items, 95% bootstrap):"
    )
    for drop in reasoning["drops"]:
        console.print(
            f"    length {drop['length']:>6,} {drop['filler']:<15} {drop['layout']:<13} "
            f"end {_fmt(drop['end_accuracy'])} vs {_fmt(drop['layout_accuracy'])}: drop {_fmt(drop['drop'])} "
            f"[{_fmt(drop['ci_low'])}, {_fmt(drop['ci_high'])}] on {drop['pairs']} pairs"
        )
    console.print("  wrong answers traced to the filler (share of wrong answers that gave a number):")
    for entry in reasoning["interference"]:
        console.print(
            f"    {entry['filler']:<15} {entry['layout']:<13} {entry['wrong']:>3} wrong: "
            f"filler answer {entry['filler_answer']}, other filler number {entry['filler_number']}, "
            f"neither {entry['other']}, no 'Answer: <number>' {entry['unparsed']} "
            f"-> {_share(entry['share_filler'])} from the filler"
        )


def print_summary(summary: dict[str, Any], console: Console) -> None:
    for analysis in summary["tasks"]:
        console.print(heatmap(summary, analysis["task"]))
        _print_task(analysis, console)
    for control in summary["controls"]:
        scored = control["n"] - control["errors"] - control["pending"]
        console.print(
            f"evidence-absent control {control['task']} @ {control['length']:,}: "
            f"{control['correct']}/{scored} abstained correctly, {control['hallucinated']} answered anyway"
        )
    console.print(f"[bold]{headline(summary['effective_length'])}[/bold] (all tasks pooled)")
    items = summary["items"]
    tokens = summary["tokens"]
    execution = summary["execution"]
    reuse = {True: "on", False: "off (cold)", None: "n/a"}[execution["prefix_cache"]]
    console.print(f"order: {execution['order']}; KV prefix reuse: {reuse}")
    console.print(
        f"items {items['done']}/{items['total']} done, {items['errors']} errors, "
        f"{items['rejected_prompts']} prompts rejected by the verifier; prompt tokens evaluated "
        f"{tokens['evaluated']:,}, from cache {tokens['cached']:,} (naive {tokens['naive_prefill']:,}, "
        f"lower bound {tokens['lower_bound']:,})"
    )
