"""Terminal views: the depth x length heatmap with n per cell, and a line per length."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def _colour(accuracy: float) -> str:
    if accuracy >= 0.85:
        return "bold white on green"
    if accuracy >= 0.6:
        return "black on yellow"
    if accuracy >= 0.3:
        return "white on dark_orange3"
    return "white on red"


def _depth_label(cell: dict[str, Any]) -> str:
    return cell["position"] or f"{cell['depth']:.2f}"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def heatmap(summary: dict[str, Any], task: str) -> Table:
    cells = [cell for cell in summary["cells"] if cell["task"] == task]
    lengths = sorted({cell["length"] for cell in cells})
    depths = sorted({(cell["depth"], _depth_label(cell)) for cell in cells})
    table = Table(
        title=f"{task}: accuracy by depth x length (n items, Wilson 95% on instances)", title_justify="left"
    )
    table.add_column("depth \\ length", justify="right")
    for length in lengths:
        table.add_column(f"{length:,}", justify="center")
    lookup = {(cell["depth"], cell["length"]): cell for cell in cells}
    for depth, label in depths:
        row: list[Text | str] = [label]
        for length in lengths:
            cell = lookup.get((depth, length))
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
    console.print(f"  {headline(analysis['effective_length'])}")


def token_count_line(summary: dict[str, Any]) -> str:
    """How lengths were counted and the measured harness overhead (provider count minus local)."""
    counts = summary.get("token_counts") or {}
    method = counts.get("method", "exact")
    tokenizer = counts.get("tokenizer") or "unknown"
    if method == "approximate":
        line = (
            f"token counts: APPROXIMATE (estimated by {tokenizer}; no tokenizer of the model was available)"
        )
    else:
        line = f"token counts: exact ({tokenizer})"
    overhead = counts.get("overhead")
    if overhead:
        line += (
            f"; harness overhead of {overhead['model']}: median {overhead['median']:g} tokens "
            f"(range {overhead['min']} to {overhead['max']}) over {overhead['calls']} calls"
        )
    return line


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
    approximate = (summary.get("token_counts") or {}).get("method") == "approximate"
    console.print(
        token_count_line(summary), style="bold yellow" if approximate else None, markup=False, soft_wrap=True
    )
    console.print(
        f"items {items['done']}/{items['total']} done, {items['errors']} errors, "
        f"{items['rejected_prompts']} prompts rejected by the verifier; prompt tokens evaluated "
        f"{tokens['evaluated']:,}, from cache {tokens['cached']:,} (naive {tokens['naive_prefill']:,}, "
        f"lower bound {tokens['lower_bound']:,})"
    )
