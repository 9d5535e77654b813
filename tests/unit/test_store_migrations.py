"""Run folders written before a migration open, gain the new columns and keep their rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rotscope.store import ITEM_COLUMNS, MIGRATIONS, SCHEMA_VERSION, RunStore


def test_a_store_at_the_initial_schema_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    with sqlite3.connect(path) as db:
        db.executescript(MIGRATIONS[0][1])
        db.execute("PRAGMA user_version = 1")
        db.execute(
            "INSERT INTO items (item_id, call_id, run_id, plan_order, task, case_id, instance_id, control, "
            "model, backend, length_target, prompt_tokens, haystack_tokens, depth, spans, trial, seed, "
            "prompt_digest, question, expected, created_at) "
            "VALUES ('a', 'a', 'r', 0, 'niah', 'c', 'c', 0, 'm', 'fake', 10, 10, 5, 0.5, '[]', 0, 0, 'd', "
            "'q', 'x', 'now')"
        )
    store = RunStore(path)
    try:
        (row,) = store.rows()
    finally:
        store.close()
    assert set(row) == set(ITEM_COLUMNS)
    assert row["cached_response"] == 0 and row["judge_verdict"] is None
    assert row["slices"] == "{}" and row["claim_report"] is None
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [name for name, _ in MIGRATIONS[:4]] == ["initial", "case_contract", "response_cache", "judge"]
