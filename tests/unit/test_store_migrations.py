"""Run folders written before a migration open, gain the new columns and keep their rows."""

from __future__ import annotations

import json
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


def test_the_haystack_variant_is_a_named_migration_and_old_rows_recover_theirs(tmp_path: Path) -> None:
    """A store from before ``haystack_variant`` gains the column; its rows take variant 0 where the
    stored config had one haystack (no ``filler.variants`` yet, or 1), and stay unknown (``None``)
    where it had several, read-only or migrated alike."""
    at = [name for name, _ in MIGRATIONS].index("haystack_variant")
    assert "haystack_variant" in ITEM_COLUMNS
    for variants, expected in ((None, 0), (1, 0), (3, None)):
        path = tmp_path / f"v{variants}" / "run.db"
        path.parent.mkdir()
        with sqlite3.connect(path) as db:
            for _name, script in MIGRATIONS[:at]:
                db.executescript(script)
            db.execute(f"PRAGMA user_version = {at}")
            filler = {"kind": "code"} if variants is None else {"kind": "code", "variants": variants}
            db.execute("INSERT INTO meta VALUES ('config', ?)", (json.dumps({"filler": filler}),))
            db.execute(
                "INSERT INTO items (item_id, call_id, run_id, plan_order, task, case_id, instance_id, "
                "control, model, backend, length_target, prompt_tokens, haystack_tokens, depth, spans, "
                "trial, seed, prompt_digest, question, expected, created_at) VALUES ('a', 'a', 'r', 0, "
                "'niah', 'c', 'c', 0, 'm', 'fake', 10, 10, 5, 0.5, '[]', 0, 0, 'd', 'q', 'x', 'now')"
            )
        with RunStore.read(path.parent) as store:
            (row,) = store.rows()
        assert row["haystack_variant"] == expected
        store = RunStore(path)
        try:
            (row,) = store.rows()
        finally:
            store.close()
        assert row["haystack_variant"] == expected
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            assert db.execute("SELECT haystack_variant FROM items").fetchone()[0] is None  # recovered on read


def test_a_store_from_before_likelihoods_gains_them_unknown(tmp_path: Path) -> None:
    """The ``answer_likelihood`` migration: every row of an older run has its likelihood columns
    unknown (``None``), never 0."""
    path = tmp_path / "run.db"
    before = [name for name, _ in MIGRATIONS].index("answer_likelihood")
    with sqlite3.connect(path) as db:
        for _, script in MIGRATIONS[:before]:
            db.executescript(script)
        db.execute(f"PRAGMA user_version = {before}")
        db.execute(
            "INSERT INTO items (item_id, call_id, run_id, plan_order, task, case_id, instance_id, control, "
            "model, backend, length_target, prompt_tokens, haystack_tokens, depth, spans, trial, seed, "
            "prompt_digest, question, expected, created_at, status, outcome) "
            "VALUES ('a', 'a', 'r', 0, 'niah', 'c', 'c', 0, 'm', 'fake', 10, 10, 5, 0.5, '[]', 0, 0, 'd', "
            "'q', 'x', 'now', 'ok', 'correct')"
        )
    store = RunStore(path)
    try:
        (row,) = store.rows()
    finally:
        store.close()
    assert row["outcome"] == "correct"
    for name in ("answer_logprob", "answer_tokens", "first_token_prob", "absent_logprob"):
        assert row[name] is None
