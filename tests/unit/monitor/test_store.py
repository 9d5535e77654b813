"""The monitoring store: versioned, refuses what is no store or newer, keys records by digest."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from rotscope.errors import BadInput
from rotscope.monitor.schema import check
from rotscope.monitor.store import SCHEMA_VERSION, MonitorStore, row

GOOD = {"ts": "2026-03-01T12:00:00Z", "length_tokens": 10, "evidence_quantile": 0.5, "outcome": "answered"}


def test_a_new_store_is_versioned_and_in_wal(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with MonitorStore.create(path) as store:
        assert store.add([row(check(GOOD), 1)]) == 1
        assert store.add([row(check(GOOD), 2)]) == 0  # the same record: its digest is stored
        assert store.add([row(check({**GOOD, "hops": 1}), 2)]) == 1
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with MonitorStore.read(path) as store:
        assert store.count() == 2


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    MonitorStore.create(path).close()
    with closing(sqlite3.connect(path)) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    for opener in (MonitorStore.read, MonitorStore.create):
        with pytest.raises(BadInput, match="newer rotscope"):
            opener(path)


def test_a_run_store_or_other_file_is_refused_untouched(tmp_path: Path) -> None:
    other = tmp_path / "run.db"
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE items (x)")
        db.commit()
    before = other.read_bytes()
    with pytest.raises(BadInput, match="not a monitoring store"):
        MonitorStore.create(other)
    assert other.read_bytes() == before
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 100)
    with pytest.raises(BadInput, match="not a monitoring store"):
        MonitorStore.read(text)
    with pytest.raises(BadInput, match="no monitoring store"):
        MonitorStore.read(tmp_path / "missing.db")
