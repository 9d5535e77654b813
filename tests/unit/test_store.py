"""The SQLite run store: versioned schema, immediate commits, resume bookkeeping."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from rotscope import store as store_module
from rotscope.errors import BadInput
from rotscope.store import PLANNED_COLUMNS, SCHEMA_VERSION, RunStore


def _planned(item_id: str, order: int = 0, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "item_id": item_id,
        "call_id": item_id,
        "run_id": "run-a",
        "plan_order": order,
        "task": "niah",
        "case_id": "niah-01",
        "instance_id": "niah-01",
        "control": 0,
        "model": "fake/lexical",
        "backend": "fake",
        "length_target": 256,
        "prompt_tokens": 251,
        "haystack_tokens": 180,
        "depth": 0.5,
        "position": "midpoint",
        "spans": json.dumps([{"evidence_id": "needle", "token_start": 100, "token_end": 112}]),
        "trial": 0,
        "seed": 0,
        "prompt_digest": f"digest-{item_id}",
        "expected": "4817",
    }
    row.update(changes)
    # Columns added to the schema later (text such as the question) get a placeholder, so these
    # tests exercise the store's bookkeeping whatever the exact column list is.
    return {column: row.get(column, f"{column} of {item_id}") for column in PLANNED_COLUMNS}


def _user_version(path: Path) -> int:
    other = sqlite3.connect(path)
    try:
        return int(other.execute("PRAGMA user_version").fetchone()[0])
    finally:
        other.close()


def _prompts(*item_ids: str) -> dict[str, str]:
    return {f"digest-{i}": json.dumps([{"role": "user", "content": f"prompt {i}"}]) for i in item_ids}


def _result(outcome: str = "correct") -> dict[str, Any]:
    return {
        "status": "error" if outcome == "error" else "ok",
        "response": "4817",
        "outcome": outcome,
        "category": None,
        "usage_prompt_tokens": 251,
        "usage_completion_tokens": 3,
        "cached_tokens": 40,
        "latency_s": 0.01,
        "error": "boom" if outcome == "error" else None,
    }


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "run.db"


def test_new_store_sets_schema_version(db_path: Path) -> None:
    RunStore(db_path).close()
    assert _user_version(db_path) == SCHEMA_VERSION
    assert SCHEMA_VERSION == len(store_module.MIGRATIONS) >= 1


def test_reopening_keeps_rows_and_migrates_nothing(db_path: Path) -> None:
    first = RunStore(db_path)
    first.add_planned([_planned("a"), _planned("b", 1)], _prompts("a", "b"))
    first.record({"a": _result()})
    first.set_meta({"model": "fake/lexical"})
    first.close()

    second = RunStore(db_path)
    try:
        rows = second.rows()
        assert [row["item_id"] for row in rows] == ["a", "b"]
        assert rows[0]["status"] == "ok" and rows[0]["attempts"] == 1
        assert rows[1]["status"] == "pending" and rows[1]["attempts"] == 0
        assert second.meta() == {"model": "fake/lexical"}
    finally:
        second.close()
    assert _user_version(db_path) == SCHEMA_VERSION


def test_newer_schema_is_refused(db_path: Path) -> None:
    RunStore(db_path).close()
    other = sqlite3.connect(db_path)
    try:
        other.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        other.commit()
    finally:
        other.close()
    with pytest.raises(BadInput, match="newer rotscope"):
        RunStore(db_path)


def test_record_commits_immediately(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        store.add_planned([_planned("a")], _prompts("a"))
        store.record({"a": _result()})
        # Read with an independent connection while the writer is still open.
        other = sqlite3.connect(db_path)
        try:
            status, outcome, response, attempts, finished = other.execute(
                "SELECT status, outcome, response, attempts, finished_at FROM items WHERE item_id = 'a'"
            ).fetchone()
        finally:
            other.close()
        assert (status, outcome, response, attempts) == ("ok", "correct", "4817", 1)
        assert finished is not None
    finally:
        store.close()


def test_planned_rows_are_visible_to_another_connection(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        store.add_planned([_planned("a"), _planned("b", 1)], _prompts("a", "b"))
        other = sqlite3.connect(db_path)
        try:
            count = other.execute("SELECT COUNT(*) FROM items WHERE status = 'pending'").fetchone()[0]
        finally:
            other.close()
        assert count == 2
    finally:
        store.close()


def test_unfinished_holds_pending_and_errors_not_ok(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        store.add_planned([_planned(i, n) for n, i in enumerate("abc")], _prompts(*"abc"))
        assert store.unfinished() == {"a", "b", "c"}
        store.record({"a": _result("correct")})
        store.record({"b": _result("error")})
        assert store.unfinished() == {"b", "c"}
        store.record({"b": _result("incorrect")})
        assert store.unfinished() == {"c"}
        assert {row["item_id"]: row["attempts"] for row in store.rows()} == {"a": 1, "b": 2, "c": 0}
    finally:
        store.close()


def test_add_planned_twice_inserts_once(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        rows = [_planned("a"), _planned("b", 1)]
        assert store.add_planned(rows, _prompts("a", "b")) == 2
        store.record({"a": _result()})
        assert store.add_planned(rows, _prompts("a", "b")) == 0
        stored = store.rows()
        assert len(stored) == 2
        # Re-planning must not reset a finished item to pending.
        assert stored[0]["status"] == "ok"
        assert store.add_planned([*rows, _planned("c", 2)], _prompts("c")) == 1
        assert len(store.rows()) == 3
    finally:
        store.close()


def test_rows_come_in_plan_order(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        store.add_planned([_planned("z", 2), _planned("x", 0), _planned("y", 1)], _prompts(*"xyz"))
        assert [row["item_id"] for row in store.rows()] == ["x", "y", "z"]
    finally:
        store.close()


def test_prompt_messages_round_trip(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        store.add_planned([_planned("a")], _prompts("a"))
        assert store.prompt_messages("digest-a") == [{"role": "user", "content": "prompt a"}]
        with pytest.raises(KeyError):
            store.prompt_messages("no-such-digest")
    finally:
        store.close()


def test_meta_values_are_json(db_path: Path) -> None:
    store = RunStore(db_path)
    try:
        store.set_meta({"tokens": {"naive_prefill": 10, "lower_bound": 4}, "rejected": []})
        store.set_meta({"rejected": ["case x: too long"]})
        assert store.meta() == {
            "tokens": {"naive_prefill": 10, "lower_bound": 4},
            "rejected": ["case x: too long"],
        }
    finally:
        store.close()


def test_open_existing_without_run_db(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"no run\.db"):
        RunStore.open_existing(tmp_path)


def test_open_existing_on_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    (tmp_path / "run.db").write_text("this is not a database\n" * 20, encoding="utf-8")
    with pytest.raises(BadInput, match="not a readable run store"):
        RunStore.open_existing(tmp_path)


def test_cost_adds_up_over_attempts_and_stays_null_when_unpriced(db_path: Path) -> None:
    """A billed call that failed and was retried still counts against the budget."""
    store = RunStore(db_path)
    try:
        store.add_planned([_planned("a"), _planned("b")], {**_prompts("a"), **_prompts("b")})
        store.record({"a": {**_result(), "status": "error", "outcome": "error", "cost": 0.5}})
        store.record({"a": {**_result(), "cost": 0.25}, "b": {**_result(), "cost": None}})
        rows = {row["item_id"]: row for row in store.rows()}
        assert rows["a"]["cost"] == 0.75 and rows["a"]["attempts"] == 2 and rows["a"]["status"] == "ok"
        assert rows["b"]["cost"] is None
        assert store.spent() == 0.75
    finally:
        store.close()


def test_a_migration_that_fails_midway_leaves_the_previous_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.db"
    RunStore(path).close()
    broken = (
        *store_module.MIGRATIONS,
        ("broken", "ALTER TABLE items ADD COLUMN half TEXT; ALTER TABLE nope ADD y"),
    )
    monkeypatch.setattr(store_module, "MIGRATIONS", broken)
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", len(broken))
    with pytest.raises(sqlite3.Error):
        RunStore(path)
    with sqlite3.connect(path) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(items)")}
        version = db.execute("PRAGMA user_version").fetchone()[0]
    assert "half" not in columns
    assert version == len(broken) - 1
