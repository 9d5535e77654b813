"""The monitoring store: one SQLite file, versioned schema (``PRAGMA user_version`` with named
migrations, as the run store's), WAL, written in short transactions (a batch each) so a canary and
an ingest can share it. Each outcome is keyed by its digest (the blake2b of its checked fields):
re-ingesting a file stores nothing twice, and an ingest killed midway is finished by running it
again. Two records equal in every field are one record."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rotscope.errors import BadInput
from rotscope.monitor.schema import Outcome

STORE_KIND = "rotscope monitor store"
MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta (key, value) VALUES ('kind', 'rotscope monitor store');
        CREATE TABLE outcomes (
            digest BLOB PRIMARY KEY, ts TEXT NOT NULL, epoch REAL NOT NULL,
            length_tokens INTEGER NOT NULL, quantiles TEXT NOT NULL, position REAL NOT NULL,
            outcome TEXT NOT NULL, language TEXT, risk TEXT, evidence_count INTEGER, hops INTEGER,
            model_digest TEXT, template_digest TEXT, cluster_id TEXT, labels TEXT NOT NULL,
            ingest INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX outcomes_epoch ON outcomes (epoch);
        CREATE TABLE ingests (
            id INTEGER PRIMARY KEY, source TEXT NOT NULL, started_at TEXT NOT NULL,
            finished_at TEXT, records INTEGER NOT NULL DEFAULT 0, added INTEGER NOT NULL DEFAULT 0,
            refused INTEGER NOT NULL DEFAULT 0
        );
        """,
    ),
    (
        # the canary (``monitor.canary_store``): a canary per baseline run and subject, its checks
        # and every probe, keyed so that a check killed midway and run again doubles nothing
        "canary",
        """
        CREATE TABLE canaries (
            id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, baseline TEXT NOT NULL,
            subject TEXT NOT NULL, settings TEXT NOT NULL, created_at TEXT NOT NULL
        );
        CREATE TABLE canary_checks (
            canary INTEGER NOT NULL, number INTEGER NOT NULL, started_at TEXT NOT NULL,
            finished_at TEXT, status TEXT, body TEXT, PRIMARY KEY (canary, number)
        ) WITHOUT ROWID;
        CREATE TABLE canary_probes (
            canary INTEGER NOT NULL, number INTEGER NOT NULL, slot INTEGER NOT NULL,
            bin TEXT NOT NULL, item TEXT NOT NULL, baseline REAL NOT NULL, score REAL,
            outcome TEXT, response TEXT, error TEXT, finished_at TEXT NOT NULL,
            PRIMARY KEY (canary, number, slot)
        ) WITHOUT ROWID;
        """,
    ),
    (
        # issue 52: the store's salt (``cluster_id`` and hashed labels are keyed by it), made on first
        # use; the label vocabulary joins it in ``meta`` when first declared. Old rows stay as they are.
        "privacy",
        """
        INSERT OR IGNORE INTO meta (key, value) VALUES ('salt', lower(hex(randomblob(32))));
        """,
    ),
)
"""Each a named migration; later ones (the sequential test's state for ingests, the report's)
append theirs."""
SCHEMA_VERSION = len(MIGRATIONS)
COLUMNS = (
    "digest", "ts", "epoch", "length_tokens", "quantiles", "position", "outcome", "language", "risk",
    "evidence_count", "hops", "model_digest", "template_digest", "cluster_id", "labels", "ingest",
)  # fmt: skip
_INSERT = f"INSERT OR IGNORE INTO outcomes ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _migrate(path: Path, db: sqlite3.Connection) -> None:
    """``db`` in WAL and migrated to this schema."""
    version = MonitorStore._check(path, db)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    # Digests land all over the key's B-tree: a 64 MiB page cache keeps a million-record
    # ingest from re-reading its pages (the peak stays far below 300 MB).
    db.execute("PRAGMA cache_size=-65536")
    for number, (_name, script) in enumerate(MIGRATIONS[version:], start=version + 1):
        try:
            db.executescript(f"BEGIN IMMEDIATE;\n{script};\nPRAGMA user_version = {number};\nCOMMIT;")
        except sqlite3.Error:
            if db.in_transaction:
                db.rollback()
            raise
    # two processes upgrading one old store at once both run ``privacy``: it is idempotent


def _make(path: Path, salt: bytes | None) -> None:
    """A new store at ``path``, made whole under a temporary name beside it and linked into place
    (a no-op where another process linked one first). A kill leaves at most the temporary file,
    which the next creation removes once its process is gone."""
    for stale in path.parent.glob(f".{path.name}.creating-*"):
        try:
            os.kill(int(stale.name.rsplit("-", 1)[1]), 0)
        except (ValueError, ProcessLookupError):
            stale.unlink(missing_ok=True)
        except PermissionError:
            pass
    temporary = path.with_name(f".{path.name}.creating-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    db = sqlite3.connect(temporary)
    try:
        _migrate(temporary, db)
        if salt is not None:
            with db:
                db.execute("UPDATE meta SET value = ? WHERE key = 'salt'", (salt.hex(),))
    finally:
        db.close()  # the last connection: WAL checkpointed into the file, -wal and -shm removed
    try:
        if path.exists():  # an empty file: the store takes its place
            if path.stat().st_size == 0:
                os.replace(temporary, path)
        else:
            os.link(temporary, path)
    except FileExistsError:
        pass  # another process made it first: this one opens theirs
    finally:
        temporary.unlink(missing_ok=True)


def row(outcome: Outcome, ingest: int) -> tuple[Any, ...]:
    """``outcome`` as its stored row, its digest first, ``ingest`` (the ingest that stored it) last."""
    # a label is a token of [A-Za-z0-9_.:-] under a name of [a-z0-9_]: its JSON needs no escaping
    labels = "{" + ",".join(f'"{name}":"{value}"' for name, value in outcome.labels) + "}"
    quantiles = "[" + ",".join(map(repr, outcome.quantiles)) + "]"  # a finite float's repr is JSON
    values = (
        outcome.ts, outcome.length_tokens, quantiles, outcome.outcome, outcome.language, outcome.risk,
        outcome.evidence_count, outcome.hops, outcome.model_digest, outcome.template_digest,
        outcome.cluster_id, labels,
    )  # fmt: skip
    digest = hashlib.blake2b(repr(values).encode(), digest_size=16).digest()
    return (
        digest, outcome.ts, outcome.epoch, outcome.length_tokens, quantiles, outcome.position,
        outcome.outcome, outcome.language, outcome.risk, outcome.evidence_count, outcome.hops,
        outcome.model_digest, outcome.template_digest, outcome.cluster_id, labels, ingest,
    )  # fmt: skip


class MonitorStore:
    """One monitoring store. ``create`` opens it for writing (made and migrated where needed);
    ``read`` opens it read-only. A file that is not a monitoring store, or one of a newer schema,
    is refused with one line (``BadInput``) and left untouched."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self._db = db

    @classmethod
    def _check(cls, path: Path, db: sqlite3.Connection) -> int:
        try:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            kind = None
            if "meta" in tables:
                found = db.execute("SELECT value FROM meta WHERE key = 'kind'").fetchone()
                kind = found[0] if found else None
        except sqlite3.DatabaseError as error:
            raise BadInput(f"{path}: not a monitoring store ({error})") from None
        if not tables and version == 0:
            return 0
        if kind != STORE_KIND:
            raise BadInput(f"{path}: not a monitoring store (no rotscope monitor meta)")
        if version > SCHEMA_VERSION:
            raise BadInput(f"{path}: written by a newer rotscope (schema {version} > {SCHEMA_VERSION})")
        return version

    @classmethod
    def read(cls, path: Path) -> MonitorStore:
        """``path`` read-only; ``BadInput`` when it is missing or no monitoring store."""
        if not path.is_file():
            raise BadInput(f"{path}: no monitoring store there")
        if path.stat().st_size == 0:
            raise BadInput(f"{path}: not a monitoring store (an empty file)")
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            if cls._check(path, db) == 0:
                raise BadInput(f"{path}: not a monitoring store (no tables)")
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    @classmethod
    def create(cls, path: Path, *, salt: bytes | None = None) -> MonitorStore:
        """``path`` for writing, made when missing and migrated to this schema. A missing store is
        made whole under a temporary name and linked into place (``_make``): another process never
        sees a half-made one, and of two making it at once one links it and the other opens it.
        ``salt`` is a new store's (an ingest that keyed its rows before the store existed)."""
        if path.is_dir():
            raise BadInput(f"{path}: a folder, not a monitoring store file")
        if not path.parent.is_dir():
            raise BadInput(f"{path.parent}: no such folder")
        if not path.exists() or (path.is_file() and path.stat().st_size == 0):
            _make(path, salt)
        if path.is_file() and path.stat().st_size > 0:
            cls.read(path).close()  # refused untouched when it is no monitoring store
        db = sqlite3.connect(path, timeout=30)
        try:
            _migrate(path, db)
        except BaseException:
            db.close()
            raise
        return cls(path, db)

    def meta(self, key: str) -> str | None:
        found = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])

    @property
    def salt(self) -> bytes:
        """The store's salt (``vocabulary.LabelPolicy``): made by the ``privacy`` migration."""
        return bytes.fromhex(self.meta("salt") or "")

    def close(self) -> None:
        self._db.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The open database, for the canary's tables (``monitor.canary_store``)."""
        return self._db

    def __enter__(self) -> MonitorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def begin_ingest(self, source: str) -> int:
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO ingests (source, started_at) VALUES (?, ?)", (source, _now())
            )
        return int(cursor.lastrowid or 0)

    def add(self, rows: Iterable[tuple[Any, ...]]) -> int:
        """Insert ``rows`` in one short transaction; how many were new."""
        with self._db:
            before = self._db.total_changes
            self._db.executemany(_INSERT, rows)
            return self._db.total_changes - before

    def withdraw_ingest(self, ingest: int) -> None:
        """Remove what ingest ``ingest`` added (a refused file: all or nothing); records stored
        before it, by another ingest, stay."""
        with self._db:
            self._db.execute("DELETE FROM outcomes WHERE ingest = ?", (ingest,))
            self._db.execute("DELETE FROM ingests WHERE id = ?", (ingest,))

    def finish_ingest(self, ingest: int, records: int, added: int, refused: int) -> None:
        with self._db:
            self._db.execute(
                "UPDATE ingests SET finished_at = ?, records = ?, added = ?, refused = ? WHERE id = ?",
                (_now(), records, added, refused, ingest),
            )

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM outcomes").fetchone()[0])

    def outcomes(self) -> Iterator[tuple[Any, ...]]:
        """Every stored outcome: length, position, outcome, cluster, the known labels, the labels."""
        yield from self._db.execute(
            "SELECT length_tokens, position, outcome, cluster_id, language, risk, evidence_count, hops, "
            "model_digest, template_digest, labels, ts FROM outcomes"
        )

    def timed_outcomes(self) -> Iterator[tuple[float, int, float, str]]:
        """``(epoch, length, position, outcome)`` of every stored outcome, in time order."""
        yield from self._db.execute(
            "SELECT epoch, length_tokens, position, outcome FROM outcomes ORDER BY epoch"
        )

    def timed_outcomes_clustered(self) -> Iterator[tuple[float, int, float, str, str | None]]:
        """``(epoch, length, position, outcome, cluster_id)`` of every stored outcome, in time
        order (a store of any version: ``cluster_id`` is in the first schema)."""
        yield from self._db.execute(
            "SELECT epoch, length_tokens, position, outcome, cluster_id FROM outcomes ORDER BY epoch"
        )
