"""The text views of a comparison (``rotscope compare``): a leaderboard table per task on the
terminal or in Markdown, each pair's verdicts in a sentence, and the machine-readable rows as CSV.

Every view takes the comparison as ``shown`` makes it: no absolute path of the machine (a model
named by its file). Model names and tasks come from outside, so Markdown cells are escaped."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.table import Table

from rotscope.compare.record import ComparisonRow
from rotscope.report.markdown import _text as markdown_text
from rotscope.report.names import without_paths
from rotscope.report.numbers import score

ROW_FIELDS = tuple(ComparisonRow.model_fields)
"""The CSV's columns, in the row record's order (``schemas/comparison_row.schema.json``)."""


def shown(comparison: dict[str, Any]) -> dict[str, Any]:
    """A copy of a comparison for a view: every absolute path shortened to its last part."""
    copy: dict[str, Any] = without_paths(comparison)
    return copy


def effective_cell(effective: dict[str, Any]) -> str:
    """An effective length and its bracket in a table cell: ``≥ 800 (200 to beyond 800)``."""
    state, value = effective.get("state"), effective.get("value")
    if state in ("no-data", "no-signal"):
        return str(state).replace("-", " ")
    if state == "at-least-longest" and value is not None:
        point = f"≥ {value:,}"
    elif value is None:
        point = "below the shortest"
    else:
        point = f"{value:,}"
    low, high = effective.get("bracket_low"), effective.get("bracket_high")
    low_text = f"{low:,}" if low is not None else "below the shortest"
    high_text = f"below {high:,}" if high is not None else "beyond the longest"
    return f"{point} ({low_text} to {high_text})"


def accuracy_cell(line: dict[str, Any]) -> str:
    """``0.81 [0.62, 0.93]`` (``-`` where nothing is scored), with the fraction of the window."""
    if line.get("accuracy") is None:
        return "-"
    text = f"{score(line['accuracy'])} [{score(line['ci_low'])}, {score(line['ci_high'])}]"
    fraction = line.get("fraction_of_window")
    return text + (f" ({fraction:.0%} of window)" if fraction is not None else "")


def _window(entry: dict[str, Any]) -> str:
    return f"{entry['window']:,}" if entry.get("window") else "-"


def _worst(entry: dict[str, Any]) -> str:
    worst = entry.get("worst_position")
    return f"{worst['position']} {score(worst['accuracy'])}" if worst else "-"


def _cost(entry: dict[str, Any]) -> str:
    return f"${entry['cost_usd']:.4f}" + ("" if entry["priced"] else " (unpriced calls)")


def leaderboard_headers(comparison: dict[str, Any]) -> list[str]:
    return [
        "#",
        "model",
        "window",
        "effective length (95% bracket)",
        "base",
        "worst position",
        *(f"{length:,}" for length in comparison["lengths"]),
        "prompt tokens",
        "cost",
    ]


def leaderboard_cells(entry: dict[str, Any]) -> list[str]:
    return [
        str(entry["rank"]),
        entry["label"] + (" (imported)" if entry["imported"] else ""),
        _window(entry),
        effective_cell(entry["effective_length"]),
        score(entry["base_score"]),
        _worst(entry),
        *(accuracy_cell(line) for line in entry["lengths"]),
        f"{entry['prompt_tokens']:,}",
        _cost(entry),
    ]


def imported_line(comparison: dict[str, Any]) -> str | None:
    """Which runs were imported and the cells every run was narrowed to; ``None`` without one."""
    imported = [run["label"] for run in comparison["runs"] if run["imported"]]
    if not imported:
        return None
    lengths = ", ".join(f"{length:,}" for length in comparison["lengths"])
    positions = ", ".join(comparison.get("positions") or [])
    return (
        f"imported from another harness (no prompts, spans or verification): {', '.join(imported)}; "
        f"every run compared on the cells all measured: lengths {lengths}; positions {positions}"
    )


def pair_lines(comparison: dict[str, Any], task: str) -> list[str]:
    """The task's pairs, one sentence each."""
    return [pair["sentence"] for pair in comparison["pairs"] if pair["task"] == task]


def print_comparison(comparison: dict[str, Any], console: Console) -> None:
    """Per task: the leaderboard as a table, then each pair's verdicts."""
    comparison = shown(comparison)
    note = imported_line(comparison)
    if note is not None:
        console.print(note, markup=False, highlight=False, soft_wrap=True)
    for task in comparison["tasks"]:
        table = Table(title=f"{task}: leaderboard (accuracy [95%] at each length)", title_justify="left")
        for header in leaderboard_headers(comparison):
            table.add_column(header, overflow="fold")
        for entry in comparison["leaderboard"]:
            if entry["task"] == task:
                table.add_row(*leaderboard_cells(entry))
        console.print(table)
        console.print(
            f"paired differences on the same items (Holm across lengths, alpha {comparison['alpha']}):",
            markup=False,
            highlight=False,
        )
        for line in pair_lines(comparison, task):
            console.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def comparison_markdown(comparison: dict[str, Any]) -> str:
    """Per task: a Markdown table of the leaderboard, then each pair's verdicts as a list."""
    comparison = shown(comparison)
    note = imported_line(comparison)
    lines: list[str] = [markdown_text(note), ""] if note is not None else []
    for task in comparison["tasks"]:
        headers = leaderboard_headers(comparison)
        lines += [f"### {markdown_text(task)}", "", "| " + " | ".join(map(markdown_text, headers)) + " |"]
        lines.append("|" + "---|" * len(headers))
        for entry in comparison["leaderboard"]:
            if entry["task"] == task:
                lines.append(
                    "| " + " | ".join(markdown_text(cell) for cell in leaderboard_cells(entry)) + " |"
                )
        lines += [
            "",
            f"Paired differences on the same items (Holm across lengths, alpha {comparison['alpha']}):",
            "",
        ]
        lines += [f"- {markdown_text(line)}" for line in pair_lines(comparison, task)]
        lines.append("")
    return "\n".join(lines)


def comparison_csv(comparison: dict[str, Any]) -> str:
    """The machine-readable rows (one per model x task x length) as CSV, a header first."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in comparison["rows"]:
        writer.writerow({key: "" if row[key] is None else row[key] for key in ROW_FIELDS})
    return buffer.getvalue()
