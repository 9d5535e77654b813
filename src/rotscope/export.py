"""Export a run's rows, one per work item, as CSV or JSON Lines."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TextIO

from rotscope.errors import BadInput
from rotscope.store import ITEM_COLUMNS, RunStore

FORMATS = ("csv", "jsonl")


def _read_rows(run_dir: Path) -> list[dict[str, object]]:
    store = RunStore.open_existing(run_dir)
    try:
        return store.rows()
    finally:
        store.close()


def write_parquet(run_dir: Path, output: Path) -> int:
    """Write every item row of ``run_dir`` as a Parquet file (needs pyarrow: rotscope[parquet])."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise BadInput("--format parquet needs pyarrow: pip install 'rotscope[parquet]'") from None
    rows = _read_rows(run_dir)
    pq.write_table(pa.Table.from_pylist(rows), output)
    return len(rows)


def write_rows(run_dir: Path, format: str, handle: TextIO) -> int:
    """Write every item row of ``run_dir`` to ``handle``; returns the number of rows."""
    if format not in FORMATS:
        raise BadInput(f"--format: {format!r} is not one of {', '.join(FORMATS)}")
    rows = _read_rows(run_dir)
    if format == "csv":
        writer = csv.DictWriter(handle, fieldnames=ITEM_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    else:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return len(rows)
