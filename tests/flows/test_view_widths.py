"""``compare`` and ``monitor show`` fit 80 and 100 columns (characters, not bytes) with no word split
(issue 53): no line is longer than the width, and every word of every leaderboard cell and header
(a model id such as ``fake/lexical-recent``, "effective", an interval) and of every rate line is
printed whole (a stacked layout under a width too narrow for the table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rotscope.cli import app
from rotscope.compare.analysis import build_comparison, load_runs
from rotscope.compare.table import leaderboard_cells, leaderboard_headers, shown
from tests.support.imported_runs import imported_run
from tests.support.monitor_records import day_record

WIDTHS = (80, 100)


def _at(width: int, *args: str | Path) -> str:
    result = CliRunner(env={"COLUMNS": str(width)}).invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _bare(word: str) -> str:
    """A word without the punctuation a line or a stacked layout puts after it."""
    return word.rstrip(";,:.")


def _fits(text: str, width: int, words: set[str]) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    printed = {_bare(word) for word in text.split()}
    missing = sorted(word for word in map(_bare, words) if word not in printed)
    assert not missing, missing  # a word split across lines or cells is not printed whole


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("widths")
    return [
        imported_run(root / "lexical", "fake/lexical", "niah", 0.95, seed=1),
        imported_run(root / "recent", "fake/lexical-recent", "niah", 0.7, seed=2),
        imported_run(root / "curve", "fake/curve-600-with-a-long-name", "niah", 0.5, seed=3),
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_fits_the_width_and_splits_no_word(runs: list[Path], width: int) -> None:
    text = _at(width, "compare", *runs)
    comparison = shown(build_comparison(load_runs(runs, None)))
    words: set[str] = set()
    if any(line.startswith("┃") for line in text.splitlines()):  # the table fits: its headers too
        words = {word for header in leaderboard_headers(comparison) for word in header.split()}
    for entry in comparison.leaderboard:
        words |= {word for cell in leaderboard_cells(entry) for word in cell.split()}
    _fits(text, width, words)


@pytest.mark.parametrize("width", WIDTHS)
def test_monitor_show_fits_the_width_and_splits_no_word(tmp_path: Path, width: int) -> None:
    source = tmp_path / "day.jsonl"
    source.write_text(
        "".join(json.dumps(day_record(number)) + "\n" for number in range(80)), encoding="utf-8"
    )
    store = tmp_path / "monitor.db"
    ingested = CliRunner().invoke(app, ["monitor", "ingest", str(store), str(source)])
    assert ingested.exit_code == 0, ingested.output
    wide = _at(1000, "monitor", "show", store)
    assert max(len(line) for line in wide.splitlines()) > 100  # the lines this test is about
    _fits(_at(width, "monitor", "show", store), width, set(wide.split()))
