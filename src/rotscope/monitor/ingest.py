"""The ingest of a JSONL file of outcome records into a monitoring store.

One pass: each line is checked (``schema.check``) and the records stored in batches of ``BATCH``
rows, one short transaction each, every row marked with its ingest. All or nothing per file by
default: the first refused record stops the ingest with one line naming its line and field
(``BadInput``, exit 2), and what this ingest had added is withdrawn (records an earlier ingest
stored stay), so the store is as it was. With ``skip_bad`` a refused record is skipped (each named
on a warning line, the first ``SHOWN_REFUSALS`` of them) and counted. Each row is keyed by its
digest, so an ingest killed midway (its batches so far kept) is finished by running it again, and
a file ingested twice stores each record once. A reader may see an ingest's batches before it
ends."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.monitor.schema import Outcome, Refused, check
from rotscope.monitor.store import MonitorStore, row

BATCH = 5000
SHOWN_REFUSALS = 20


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did."""

    records: int
    """Records the file held that the allow-list accepted."""
    added: int
    """Of them, new to the store."""
    refused: int
    """Records refused (only with ``skip_bad``; otherwise the ingest stops at the first)."""


def _records(path: Path, on_refused: Callable[[Refused, int], None]) -> Iterator[Outcome]:
    try:
        handle = path.open("rb")
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                parsed: Any = json.loads(raw)
            except ValueError:
                on_refused(Refused(None, "not valid JSON"), number)
                continue
            try:
                yield check(parsed)
            except Refused as refused:
                on_refused(refused, number)


def ingest(
    store_path: Path, path: Path, *, skip_bad: bool = False, warn: Callable[[str], None] | None = None
) -> IngestResult:
    """Ingest ``path`` into the store at ``store_path`` (made when missing)."""
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    refused = 0

    def stop(error: Refused, number: int) -> None:
        raise BadInput(error.line(str(path), number))

    def skip(error: Refused, number: int) -> None:
        nonlocal refused
        refused += 1
        if warn is not None and refused <= SHOWN_REFUSALS:
            warn(error.line(str(path), number, "skipped: nothing of that record was stored"))

    with MonitorStore.create(store_path) as store:
        ingest_id = store.begin_ingest(path.name)
        records = added = 0
        batch: list[tuple[Any, ...]] = []
        try:
            for outcome in _records(path, skip if skip_bad else stop):
                batch.append(row(outcome, ingest_id))
                if len(batch) >= BATCH:
                    added += store.add(batch)
                    records += len(batch)
                    batch = []
        except BadInput:
            store.withdraw_ingest(ingest_id)
            raise
        if batch:
            added += store.add(batch)
            records += len(batch)
        if warn is not None and refused > SHOWN_REFUSALS:
            warn(f"{path}: {refused - SHOWN_REFUSALS} more records refused and skipped")
        store.finish_ingest(ingest_id, records, added, refused)
    return IngestResult(records, added, refused)
