"""The text views of a comparison (``rotscope compare``): a leaderboard table per task on the
terminal or in Markdown, each pair's verdicts in a sentence, and the machine-readable rows as CSV.

Every view takes the comparison as ``shown`` makes it: no absolute path of the machine (a model
named by its file). Model names and tasks come from outside, so Markdown cells are escaped."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from rotscope._util.safe_text import terminal_safe_tree
from rotscope.compare.pairwise import family_words
from rotscope.compare.record import (
    ComparedRunEntry,
    Comparison,
    ComparisonRow,
    EffectiveEntry,
    LeaderboardEntry,
    LengthEntry,
)
from rotscope.report.lines import say
from rotscope.report.markdown import _text as markdown_text
from rotscope.report.names import without_paths
from rotscope.report.numbers import score
from rotscope.report.scores import score_label

UNBOUNDED = 10_000
"""A width no table reaches: the table measured at it is its natural width, unshrunk."""

ROW_FIELDS = tuple(ComparisonRow.model_fields)
"""The CSV's columns, in the row record's order (``schemas/comparison_row.schema.json``)."""


def shown(comparison: Comparison) -> Comparison:
    """A copy of a comparison for a view: every absolute path shortened to its last part and every
    text ``terminal_safe`` (a model named with an escape sequence shows the escape, in every view:
    terminal, Markdown, HTML, JUnit), read back through its JSON text, as a reader gets the record."""
    safe = terminal_safe_tree(without_paths(comparison.model_dump()))
    return Comparison.model_validate_json(json.dumps(safe))


def effective_cell(effective: EffectiveEntry) -> str:
    """An effective length and its bracket in a table cell: ``≥ 800 (200 to beyond 800)``."""
    state, value = effective.state, effective.value
    if state in ("no-data", "no-signal"):
        return str(state).replace("-", " ")
    if state == "at-least-longest" and value is not None:
        point = f"≥ {value:,}"
    elif value is None:
        point = "below the shortest"
    else:
        point = f"{value:,}"
    low, high = effective.bracket_low, effective.bracket_high
    low_text = f"{low:,}" if low is not None else "below the shortest"
    high_text = f"below {high:,}" if high is not None else "beyond the longest"
    return f"{point} ({low_text} to {high_text})"


def accuracy_cell(line: LengthEntry) -> str:
    """``0.81 [0.62, 0.93]`` (``-`` where nothing is scored), with the fraction of the window."""
    if line.accuracy is None:
        return "-"
    text = f"{score(line.accuracy)} [{score(line.ci_low)}, {score(line.ci_high)}]"
    fraction = line.fraction_of_window
    return text + (f" ({fraction:.0%} of window)" if fraction is not None else "")


def _window(entry: LeaderboardEntry) -> str:
    return f"{entry.window:,}" if entry.window else "-"


def _worst(entry: LeaderboardEntry) -> str:
    worst = entry.worst_position
    return f"{worst.position} {score(worst.accuracy)}" if worst else "-"


def _cost(entry: LeaderboardEntry) -> str:
    return f"${entry.cost_usd:.4f}" + ("" if entry.priced else " (unpriced calls)")


def leaderboard_headers(comparison: Comparison) -> list[str]:
    return [
        "#",
        "model",
        "window",
        "effective length (95% bracket)",
        "base",
        "worst position",
        *(f"{length:,}" for length in comparison.lengths),
        "prompt tokens",
        "cost",
    ]


def leaderboard_cells(entry: LeaderboardEntry) -> list[str]:
    return [
        str(entry.rank),
        entry.label + (" (imported)" if entry.imported else ""),
        _window(entry),
        effective_cell(entry.effective_length),
        score(entry.base_score),
        _worst(entry),
        *(accuracy_cell(line) for line in entry.lengths),
        f"{entry.prompt_tokens:,}",
        _cost(entry),
    ]


def imported_line(comparison: Comparison) -> str | None:
    """Which runs were imported and the cells every run was narrowed to; ``None`` without one."""
    imported = [run.label for run in comparison.runs if run.imported]
    if not imported:
        return None
    lengths = ", ".join(f"{length:,}" for length in comparison.lengths)
    positions = ", ".join(comparison.positions or [])
    line = (
        f"imported from another harness (no prompts, spans or verification): {', '.join(imported)}; "
        f"every run compared on the cells all measured: lengths {lengths}; positions {positions}"
    )
    return line + "".join(f"; {left_out_words(run)}" for run in comparison.runs if run.left_out_lengths)


def left_out_words(run: ComparedRunEntry) -> str:
    """ "A left out 2,000 and 4,000 (on its own grid: effective length 73,571 on niah)"."""
    lengths = ", ".join(f"{length:,}" for length in run.left_out_lengths)
    own = [f"{own_length_words(entry)} on {task}" for task, entry in run.own_effective.items()]
    return f"{run.label} left out {lengths}" + (
        f" (on its own grid: effective length {', '.join(own)})" if own else ""
    )


def own_length_words(entry: EffectiveEntry) -> str:
    if entry.value is not None:
        return f"{entry.value:,}"
    return entry.state or "unknown"


def task_entries(comparison: Comparison, task: str) -> list[LeaderboardEntry]:
    """The task's leaderboard, in rank order."""
    return [entry for entry in comparison.leaderboard if entry.task == task]


def family_label(comparison: Comparison, task: str) -> str:
    """The tests of a task's verdicts and the family α holds over, as every view heads them:
    "exact sign-flip on 16 clusters; Holm over 9 tests: 3 pairs x 3 lengths, alpha 0.05"; a record
    before issue 48 (no ``family``): "Holm across each pair's lengths"."""
    pairs = [pair for pair in comparison.pairs if pair.task == task]
    if comparison.family is None:
        return f"Holm across each pair's lengths, alpha {comparison.alpha}"
    entries = [length for pair in pairs for length in pair.lengths]
    tests = list(dict.fromkeys(length.test for length in entries if length.test is not None))
    tested = sum(length.p_value is not None for length in entries)
    family = family_words(len(pairs), len(comparison.lengths), tested)
    return "; ".join([*tests, f"{family}, alpha {comparison.alpha}"])


def pair_lines(comparison: Comparison, task: str) -> list[str]:
    """The task's pairs, one sentence each."""
    return [pair.sentence for pair in comparison.pairs if pair.task == task]


def stacked_lines(comparison: Comparison, entry: LeaderboardEntry) -> list[str]:
    """One leaderboard entry as lines of clauses, for a console too narrow for the table: its rank,
    model and effective length; its base, worst position, window, tokens and cost; its score at
    each length. ``report.lines.say`` wraps them between whole words."""
    label = entry.label + (" (imported)" if entry.imported else "")
    lengths = "; ".join(
        f"{length:,} {accuracy_cell(line)}"
        for length, line in zip(comparison.lengths, entry.lengths, strict=False)
    )
    return [
        f"{entry.rank}. {label}: effective length {effective_cell(entry.effective_length)}",
        f"   base {score(entry.base_score)}; worst position {_worst(entry)}; window {_window(entry)}; "
        f"prompt tokens {entry.prompt_tokens:,}; cost {_cost(entry)}",
        f"   by length: {lengths}",
    ]


def leaderboard_table(comparison: Comparison, task: str) -> Table:
    """The task's leaderboard as a rich table (no markup read from a cell: names come from outside)."""
    title = f"{task}: leaderboard ({score_label(comparison.score)} [95%] at each length)"
    table = Table(title=Text(title), title_justify="left")
    for header in leaderboard_headers(comparison):
        table.add_column(header)
    for entry in task_entries(comparison, task):
        table.add_row(*(Text(cell) for cell in leaderboard_cells(entry)))
    return table


def print_comparison(comparison: Comparison, console: Console) -> None:
    """Per task: the leaderboard as a table where it fits the console's width, else stacked (a few
    lines per model, wrapped between whole words: no cell's word is ever split), then each pair's
    verdicts."""
    comparison = shown(comparison)
    for note in (imported_line(comparison), comparison.rule_note):
        if note is not None:
            say(console, note)
    for task in comparison.tasks:
        table = leaderboard_table(comparison, task)
        if Measurement.get(console, console.options.update_width(UNBOUNDED), table).maximum <= console.width:
            console.print(table)
        else:
            say(console, f"{task}: leaderboard ({score_label(comparison.score)} [95%] at each length)")
            for entry in task_entries(comparison, task):
                for line in stacked_lines(comparison, entry):
                    say(console, line)
        say(console, f"paired differences on the same items ({family_label(comparison, task)}):")
        for line in pair_lines(comparison, task):
            say(console, f"  {line}")


def comparison_markdown(comparison: Comparison) -> str:
    """Per task: a Markdown table of the leaderboard, then each pair's verdicts as a list."""
    comparison = shown(comparison)
    notes = [note for note in (imported_line(comparison), comparison.rule_note) if note is not None]
    lines: list[str] = [line for note in notes for line in (markdown_text(note), "")]
    for task in comparison.tasks:
        headers = leaderboard_headers(comparison)
        lines += [f"### {markdown_text(task)}", "", "| " + " | ".join(map(markdown_text, headers)) + " |"]
        lines.append("|" + "---|" * len(headers))
        for entry in task_entries(comparison, task):
            lines.append("| " + " | ".join(markdown_text(cell) for cell in leaderboard_cells(entry)) + " |")
        lines += [
            "",
            f"Paired differences on the same items ({markdown_text(family_label(comparison, task))}):",
            "",
        ]
        lines += [f"- {markdown_text(line)}" for line in pair_lines(comparison, task)]
        lines.append("")
    return "\n".join(lines)


def comparison_csv(comparison: Comparison) -> str:
    """The machine-readable rows (one per model x task x length) as CSV, a header first."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS, lineterminator="\n")
    writer.writeheader()
    for row in comparison.rows:
        writer.writerow({key: "" if value is None else value for key, value in _fields(row)})
    return buffer.getvalue()


def _fields(row: ComparisonRow) -> list[tuple[str, object]]:
    """The row's values in ``ROW_FIELDS`` order, every column (a null one too)."""
    return [(key, getattr(row, key)) for key in ROW_FIELDS]
