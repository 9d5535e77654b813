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
    table = Table(title=f"{task}: accuracy by depth x length (n items)", title_justify="left")
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
                row.append(Text(f"{cell['accuracy']:.2f} ({cell['n']})", style=_colour(cell["accuracy"])))
        table.add_row(*row)
    return table


def print_summary(summary: dict[str, Any], console: Console) -> None:
    for task in dict.fromkeys(cell["task"] for cell in summary["cells"]):
        console.print(heatmap(summary, task))
    for line in summary["lengths"]:
        console.print(
            f"length {line['length']:>6,}: accuracy {_fmt(line['accuracy'])} "
            f"[{_fmt(line['ci_low'])}, {_fmt(line['ci_high'])}] Wilson 95% on {line['instances']} instances, "
            f"n={line['n']}, errors={line['errors']}"
        )
    for control in summary["controls"]:
        scored = control["n"] - control["errors"] - control["pending"]
        console.print(
            f"evidence-absent control {control['task']} @ {control['length']:,}: "
            f"{control['correct']}/{scored} abstained correctly, {control['hallucinated']} answered anyway"
        )
    effective = summary["effective_length"]
    value = effective["value"]
    shown = f"{value:,} tokens" if value is not None else "below the shortest length tested"
    console.print(
        f"Effective length ({effective['definition']}): {shown}; base score {_fmt(effective['base_score'])}"
    )
    items = summary["items"]
    tokens = summary["tokens"]
    console.print(
        f"items {items['done']}/{items['total']} done, {items['errors']} errors, "
        f"{items['rejected_prompts']} prompts rejected by the verifier; prompt tokens evaluated "
        f"{tokens['evaluated']:,}, from cache {tokens['cached']:,} (naive {tokens['naive_prefill']:,}, "
        f"lower bound {tokens['lower_bound']:,})"
    )
