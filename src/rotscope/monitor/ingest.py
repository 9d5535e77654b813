"""The ingest of a JSONL file of outcome records into a monitoring store: all or nothing.

Two steps. First the whole file is read, one bounded line at a time, each line checked
(``schema.check`` under the store's label vocabulary and salt, ``vocabulary.LabelPolicy``) and its
row written to a staging table in a private temporary database (deleted by SQLite when the
connection closes, or at once by the kernel when the process dies): the store is not touched. A
refused record stops there with one line naming its line and field (``BadInput``, exit 2), nothing
stored; with ``skip_bad`` it is skipped (the first ``SHOWN_REFUSALS`` named on a warning line) and
counted. Then one transaction on the store (the store attached) copies the staged rows in
(``INSERT OR IGNORE`` on each row's digest: a file ingested twice stores each record once), writes
the ingest's row and any newly declared labels: a kill at any point leaves the store as it was,
and the same command run again proceeds. A new store is made (``MonitorStore.create``) only when
the file was accepted, with the salt its rows were keyed by.

The file must be a regular file (no device, FIFO or link to one), each line at most ``MAX_LINE``
bytes; JSON nested too deep is refused, not a ``RecursionError``. ``ingests.source`` holds the
file's sha256, or its name when asked (``record_name``)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rotscope.errors import BadInput
from rotscope.monitor.schema import Outcome, Refused, check
from rotscope.monitor.store import COLUMNS, MonitorStore, row
from rotscope.monitor.vocabulary import LabelPolicy, Vocabulary

BATCH = 5000
SHOWN_REFUSALS = 20
MAX_LINE = 64 * 1024
"""The longest line read (a record is a few hundred bytes)."""
_ATTEMPTS = 3
"""Stagings tried when another process changes the store's salt or vocabulary meanwhile (it
made the store, or declared labels): each re-reads the file under the store's new state."""


@dataclass(frozen=True)
class IngestResult:
    """What an ingest did."""

    records: int
    """Records the file held that the allow-list accepted."""
    added: int
    """Of them, new to the store."""
    refused: int
    """Records refused (only with ``skip_bad``; otherwise the ingest stops at the first)."""


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading if it is a regular file (a link is followed, then checked):
    a device, FIFO or folder is refused before a byte is read, and opening never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as error:
        raise BadInput(f"{path}: cannot read ({error.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadInput(f"{path}: not a regular file (a device, FIFO or folder); give a JSONL file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _lines(handle: IO[bytes], digest: Any) -> Iterator[tuple[int, bytes | None]]:
    """``(number, line)`` of each line; ``None`` for a line longer than ``MAX_LINE`` (read past
    in bounded pieces, never held whole)."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE + 1)
        if not raw:
            return
        digest.update(raw)
        number += 1
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = handle.readline(MAX_LINE)
                digest.update(raw)
            yield number, None
        else:
            yield number, raw


def _records(
    handle: IO[bytes], policy: LabelPolicy, digest: Any, on_refused: Callable[[Refused, int], None]
) -> Iterator[Outcome]:
    for number, raw in _lines(handle, digest):
        if raw is None:
            on_refused(Refused(None, f"a line longer than {MAX_LINE // 1024} KiB"), number)
            continue
        if not raw.strip():
            continue
        try:
            parsed: Any = json.loads(raw)
        except RecursionError:
            on_refused(Refused(None, "JSON nested too deep"), number)
            continue
        except ValueError:
            on_refused(Refused(None, "not valid JSON"), number)
            continue
        try:
            yield check(parsed, policy)
        except Refused as refused:
            on_refused(refused, number)


@dataclass(frozen=True)
class _StoreState:
    """What the staged rows were keyed by: the store's salt and vocabulary (a new store's: made
    here, ``exists`` false)."""

    salt: bytes
    vocabulary: Vocabulary
    exists: bool


def _store_state(store_path: Path) -> _StoreState:
    if store_path.exists():
        with MonitorStore.create(store_path) as store:  # refused untouched when no monitoring store
            return _StoreState(store.salt, Vocabulary.from_json(store.meta("vocabulary")), True)
    if store_path.is_dir() or not store_path.parent.is_dir():
        MonitorStore.create(store_path)  # the one-line refusal of a folder, or of no folder
    return _StoreState(os.urandom(32), Vocabulary(), False)


def ingest(
    store_path: Path,
    path: Path,
    *,
    skip_bad: bool = False,
    warn: Callable[[str], None] | None = None,
    labels: Vocabulary | None = None,
    hash_labels: bool = False,
    record_name: bool = False,
) -> IngestResult:
    """Ingest ``path`` into the store at ``store_path`` (made when missing), all or nothing.
    ``labels`` adds to the store's declared vocabulary (stored with the ingest's rows);
    ``hash_labels`` stores an undeclared label value as its keyed hash instead of refusing it."""
    for _attempt in range(_ATTEMPTS):
        state = _store_state(store_path)
        declared = state.vocabulary.merged(labels) if labels is not None else state.vocabulary
        policy = LabelPolicy(declared.with_built_in(), state.salt, hash_labels)
        with _open_regular(path) as handle, _Staging() as staging:
            digest = hashlib.sha256()
            refused = _stage(staging, handle, policy, digest, path, skip_bad, warn)
            source = path.name if record_name else f"sha256:{digest.hexdigest()}"
            stored = declared if labels is not None else None
            done = staging.commit(store_path, state, stored, source, refused)
        if done is not None:
            if warn is not None and refused > SHOWN_REFUSALS:
                warn(f"{path}: {refused - SHOWN_REFUSALS} more records refused and skipped")
            return done
    raise BadInput(f"{store_path}: other processes kept changing the store's salt or labels; run it again")


def _stage(
    staging: _Staging,
    handle: IO[bytes],
    policy: LabelPolicy,
    digest: Any,
    path: Path,
    skip_bad: bool,
    warn: Callable[[str], None] | None,
) -> int:
    """Every accepted record of the file staged; the records refused (only with ``skip_bad``)."""
    refused = 0

    def stop(error: Refused, number: int) -> None:
        raise BadInput(error.line(str(path), number))

    def skip(error: Refused, number: int) -> None:
        nonlocal refused
        refused += 1
        if warn is not None and refused <= SHOWN_REFUSALS:
            warn(error.line(str(path), number, "skipped: nothing of that record was stored"))

    batch: list[tuple[Any, ...]] = []
    for outcome in _records(handle, policy, digest, skip if skip_bad else stop):
        batch.append(row(outcome, 0))
        if len(batch) >= BATCH:
            staging.add(batch)
            batch = []
    if batch:
        staging.add(batch)
    return refused


_STAGED = ", ".join(COLUMNS[:-1])


class _Staging:
    """The staging table, in a private temporary database of its own (SQLite's ``""``: on disk,
    unlinked as it is opened, so nothing of it outlives the process)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", isolation_level=None, timeout=60)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute(f"CREATE TABLE staging ({', '.join(COLUMNS)})")
        self._db.execute("BEGIN")
        self.records = 0

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self._db.close()

    def add(self, rows: list[tuple[Any, ...]]) -> None:
        self._db.executemany(f"INSERT INTO staging VALUES ({', '.join('?' * len(COLUMNS))})", rows)
        self.records += len(rows)

    def commit(
        self, store_path: Path, state: _StoreState, declared: Vocabulary | None, source: str, refused: int
    ) -> IngestResult | None:
        """The staged rows into the store in one transaction; ``None`` (nothing written) when
        the store's salt or vocabulary is no longer what they were keyed by."""
        db = self._db
        db.execute("COMMIT")
        MonitorStore.create(store_path, salt=None if state.exists else state.salt).close()
        db.execute("ATTACH DATABASE ? AS store", (str(store_path),))
        db.execute("PRAGMA store.cache_size=-65536")
        db.execute("PRAGMA store.synchronous=NORMAL")  # WAL: durable at each checkpoint, as the store's own
        db.execute("BEGIN IMMEDIATE")
        try:
            meta = dict(db.execute("SELECT key, value FROM store.meta WHERE key IN ('salt', 'vocabulary')"))
            if (
                bytes.fromhex(meta.get("salt", "")) != state.salt
                or Vocabulary.from_json(meta.get("vocabulary")) != state.vocabulary
            ):
                db.execute("ROLLBACK")
                return None
            now = datetime.now(UTC).isoformat(timespec="seconds")
            if declared is not None:
                db.execute(
                    "INSERT OR REPLACE INTO store.meta (key, value) VALUES ('vocabulary', ?)",
                    (declared.to_json(),),
                )
            cursor = db.execute("INSERT INTO store.ingests (source, started_at) VALUES (?, ?)", (source, now))
            ingest_id = int(cursor.lastrowid or 0)
            before = db.total_changes
            db.execute(
                f"INSERT OR IGNORE INTO store.outcomes ({', '.join(COLUMNS)}) "
                f"SELECT {_STAGED}, ? FROM staging",
                (ingest_id,),
            )
            added = db.total_changes - before
            db.execute(
                "UPDATE store.ingests SET finished_at = ?, records = ?, added = ?, refused = ? WHERE id = ?",
                (datetime.now(UTC).isoformat(timespec="seconds"), self.records, added, refused, ingest_id),
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return IngestResult(self.records, added, refused)
