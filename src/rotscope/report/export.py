"""Export a run's rows, one per work item, as CSV, JSON Lines or Parquet."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TextIO

from rotscope._util.json_out import json_text
from rotscope._util.safe_text import terminal_safe_tree
from rotscope.errors import BadInput
from rotscope.rows import Row
from rotscope.store import ITEM_COLUMNS, RunStore

FORMATS = ("csv", "jsonl", "parquet")
LOG_FORMATS = ("inspect",)
"""Formats the command line hands to an integration (``rotscope.integrations.inspect``): a log of
the run for another tool, not a table of its rows."""


def _read_rows(run_dir: Path) -> list[Row]:
    with RunStore.read(run_dir) as store:
        return store.rows()


def _write_parquet(rows: list[Row], output: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise BadInput("--format parquet needs pyarrow: pip install 'rotscope[parquet]'") from None
    pq.write_table(pa.Table.from_pylist(rows), output)


def _write_text(rows: list[Row], format: str, handle: TextIO) -> None:
    if format == "csv" and handle.isatty():
        # A terminal would obey a reply's escapes (clear screen, window title); JSON escapes its own.
        rows = [terminal_safe_tree(row) for row in rows]
    if format == "csv":
        writer = csv.DictWriter(handle, fieldnames=ITEM_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    else:
        for row in rows:
            handle.write(json_text(row) + "\n")


def export_rows(run_dir: Path, format: str, output: Path | None, stdout: TextIO) -> int:
    """Write every item row of ``run_dir`` to ``output`` (or ``stdout``); returns the row count.

    The run is read before the output is opened, so a mistyped run folder never empties a file.
    A file gets the stored text exactly; a terminal gets control characters shown as escapes.
    """
    if format not in FORMATS:
        raise BadInput(f"--format: {format!r} is not one of {', '.join((*FORMATS, *LOG_FORMATS))}")
    if format == "parquet" and output is None:
        raise BadInput("--format parquet needs -o FILE")
    rows = _read_rows(run_dir)
    try:
        if format == "parquet":
            assert output is not None
            _write_parquet(rows, output)
        elif output is None:
            _write_text(rows, format, stdout)
        else:
            with output.open("w", encoding="utf-8", newline="") as handle:
                _write_text(rows, format, handle)
    except BrokenPipeError:
        raise  # a reader that stopped reading (| head): the CLI ends quietly
    except OSError as error:
        raise BadInput(f"-o: cannot write {output}: {error.strerror or error}") from None
    return len(rows)
