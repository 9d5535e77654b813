"""The comparison's text views: an effective length with its bracket in a cell, a Markdown table
that a model's name cannot break, the CSV's columns in the row record's order, no absolute path."""

from __future__ import annotations

import csv
import io

from rotscope.compare.analysis import comparison_rows
from rotscope.compare.record import (
    ComparedRunEntry,
    Comparison,
    ComparisonRow,
    EffectiveEntry,
    LeaderboardEntry,
    LengthEntry,
    Pair,
    WorstPosition,
)
from rotscope.compare.table import ROW_FIELDS, comparison_csv, comparison_markdown, effective_cell
from rotscope.records.effective import EffectiveState


def _effective(value: int | None, state: EffectiveState, low: int | None, high: int | None) -> EffectiveEntry:
    return EffectiveEntry(
        definition="nolima-0.85", value=value, state=state, bracket_low=low, bracket_high=high,
        bracket_state=None,
    )  # fmt: skip


def _comparison() -> Comparison:
    effective = EffectiveEntry(definition="nolima-0.85", value=800, state="at-least-longest", bracket_low=200,
                               bracket_high=None, bracket_state="at-least")  # fmt: skip
    line = LengthEntry(
        length=200,
        fraction_of_window=0.25,
        accuracy=0.5,
        ci_low=0.2,
        ci_high=0.8,
        instances=16,
    )
    entry = LeaderboardEntry(rank=1, task="niah", run="a", label="evil|model /home/someone/m.gguf", model="m",
             imported=True, window=800, effective_length=effective, base_score=1.0,
             worst_position=WorstPosition(position="beginning", accuracy=0.0), lengths=[line],
             prompt_tokens=1000, completion_tokens=10, cost_usd=0.0, priced=True)  # fmt: skip
    pairs = [Pair(task="niah", first="A", second="B", lengths=[], sentence="B better than A at 200")]
    runs = [ComparedRunEntry(run="a", label=entry.label, model="m", imported=True)]
    return Comparison(comparison_version=1, runs=runs, tasks=["niah"], lengths=[200], positions=["beginning"],
             confidence=0.95, alpha=0.05, pair_method="", leaderboard=[entry], pairs=pairs,
             rows=comparison_rows([entry]))  # fmt: skip


def test_an_effective_length_reads_with_its_bracket() -> None:
    assert effective_cell(_effective(400, "value", 200, 800)) == "400 (200 to below 800)"
    assert effective_cell(_effective(None, "no-signal", None, None)) == "no signal"
    assert (
        effective_cell(_comparison().leaderboard[0].effective_length) == "≥ 800 (200 to beyond the longest)"
    )


def test_the_markdown_table_holds_whatever_a_model_is_named() -> None:
    text = comparison_markdown(_comparison())
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 3 and len({line.count("|") - line.count("\\|") for line in table}) == 1
    assert "/home/someone" not in text and "(imported)" in text and "25% of window" in text
    assert "- B better than A at 200" in text
    assert "imported from another harness (no prompts, spans or verification)" in text
    assert "lengths 200; positions beginning" in text


def test_the_csv_has_the_row_record_columns() -> None:
    assert tuple(ComparisonRow.model_fields) == ROW_FIELDS
    (row,) = csv.DictReader(io.StringIO(comparison_csv(_comparison())))
    assert list(row) == list(ROW_FIELDS) and row["bracket_high"] == "" and row["length"] == "200"
