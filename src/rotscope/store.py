"""The run store: one SQLite file per run folder, one row per work item, committed as each finishes.

The schema is versioned (``PRAGMA user_version``) with named migrations, so old run folders stay
readable as rotscope grows. A run is migrated only when it is written (a run or ``--resume``); the
read commands open it read-only and read an older schema as it is.
"""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Iterable, Mapping
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

from rotscope._util.safe_text import storable, storable_values
from rotscope.errors import BadInput
from rotscope.rows import Row, absent_case_id
from rotscope.run_meta import RunMeta
from rotscope.types.case import ABSENT_SUFFIX

PLANNED_COLUMNS = (
    "item_id", "call_id", "run_id", "plan_order", "task", "case_id", "instance_id", "control", "model",
    "backend", "length_target", "prompt_tokens", "haystack_tokens", "depth", "position", "spans", "trial",
    "seed", "prompt_digest", "question", "expected", "slices", "filler", "haystack_variant", "fault",
    "evidence_lost", "separation", "separation_asked", "separation_tokens",
)  # fmt: skip
RESULT_COLUMNS = (
    "status", "response", "outcome", "category", "usage_prompt_tokens", "usage_completion_tokens",
    "cached_tokens", "latency_s", "cost", "error", "attempts", "created_at", "finished_at", "claim_report",
    "cached_response", "judge_verdict", "judge_model", "judge_prompt_sha256", "judge_response",
    "request_attempts", "engine_mode", "cached_source", "answer_logprob", "answer_tokens",
    "first_token_prob", "absent_logprob",
)  # fmt: skip
ITEM_COLUMNS = PLANNED_COLUMNS + RESULT_COLUMNS

MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "initial",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE prompts (prompt_digest TEXT PRIMARY KEY, messages BLOB NOT NULL);
        CREATE TABLE items (
            item_id TEXT PRIMARY KEY, call_id TEXT NOT NULL, run_id TEXT NOT NULL,
            plan_order INTEGER NOT NULL,
            task TEXT NOT NULL, case_id TEXT NOT NULL, instance_id TEXT NOT NULL,
            control INTEGER NOT NULL, model TEXT NOT NULL, backend TEXT NOT NULL,
            length_target INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL,
            haystack_tokens INTEGER NOT NULL, depth REAL NOT NULL, position TEXT, spans TEXT NOT NULL,
            trial INTEGER NOT NULL, seed INTEGER NOT NULL, prompt_digest TEXT NOT NULL,
            question TEXT NOT NULL, expected TEXT NOT NULL, status TEXT NOT NULL DEFAULT 'pending',
            response TEXT, outcome TEXT, category TEXT, usage_prompt_tokens INTEGER,
            usage_completion_tokens INTEGER, cached_tokens INTEGER, latency_s REAL, cost REAL,
            error TEXT, attempts INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, finished_at TEXT
        );
        CREATE INDEX items_status ON items (status);
        CREATE INDEX items_call ON items (call_id);
        """,
    ),
    (
        "case_contract",
        """
        ALTER TABLE items ADD COLUMN slices TEXT NOT NULL DEFAULT '{}';
        ALTER TABLE items ADD COLUMN claim_report TEXT;
        """,
    ),
    (
        "response_cache",
        "ALTER TABLE items ADD COLUMN cached_response INTEGER NOT NULL DEFAULT 0;",
    ),
    (
        "judge",
        """
        ALTER TABLE items ADD COLUMN judge_verdict TEXT;
        ALTER TABLE items ADD COLUMN judge_model TEXT;
        ALTER TABLE items ADD COLUMN judge_prompt_sha256 TEXT;
        ALTER TABLE items ADD COLUMN judge_response TEXT;
        """,
    ),
    # The filler type of a family that varies it (reasoning: with_solutions, questions_only, neutral).
    ("item_filler", "ALTER TABLE items ADD COLUMN filler TEXT;"),
    # Requests sent for the row's last completion, retries included (``attempts`` counts runs).
    ("request_attempts", "ALTER TABLE items ADD COLUMN request_attempts INTEGER"),
    (
        "cache_checks",
        """
        CREATE TABLE cache_checks (
            call_id TEXT PRIMARY KEY, warm_response TEXT, cold_response TEXT,
            warm_cached_tokens INTEGER, cold_cached_tokens INTEGER, warm_correct REAL, cold_correct REAL,
            error TEXT, finished_at TEXT NOT NULL
        );
        """,
    ),
    # The local engine's mode that produced the row (``extra_buffers=off``), so a run stays in one.
    ("engine_mode", "ALTER TABLE items ADD COLUMN engine_mode TEXT"),
    # Where a row's cached tokens came from (``reported``, ``server_log``); NULL when unknown.
    ("cached_source", "ALTER TABLE items ADD COLUMN cached_source TEXT"),
    # The haystack variant of the row's prompt (case i in variant i mod variants), so intervals can
    # cluster on the cases that share one; NULL for rows stored before it (see ``rows``).
    ("haystack_variant", "ALTER TABLE items ADD COLUMN haystack_variant INTEGER"),
    # The gold answer's likelihood (issue 49; docs/records.md, "Rows"): NULL where it was not read,
    # and in every row of a run stored before (its likelihood unknown).
    (
        "answer_likelihood",
        """
        ALTER TABLE items ADD COLUMN answer_logprob REAL;
        ALTER TABLE items ADD COLUMN answer_tokens INTEGER;
        ALTER TABLE items ADD COLUMN first_token_prob REAL;
        ALTER TABLE items ADD COLUMN absent_logprob REAL;
        CREATE INDEX items_case_length ON items (task, case_id, length_target);
        """,
    ),
    # The assembly faults injected into the row's prompt (``run --inject``) and the evidence they
    # removed (a JSON list of ids): NULL in a row of a clean prompt, and in every row stored before.
    (
        "injected_faults",
        """
        ALTER TABLE items ADD COLUMN fault TEXT;
        ALTER TABLE items ADD COLUMN evidence_lost TEXT;
        """,
    ),
    # The distance between the facts a case combines (``placement.separations``, issue 50): the
    # axis value as given (tokens or a share), the filler tokens it asked for and those measured on
    # the rendered prompt; NULL in a run without the axis and in every row of a run stored before.
    (
        "separation",
        """
        ALTER TABLE items ADD COLUMN separation NUMERIC;
        ALTER TABLE items ADD COLUMN separation_asked INTEGER;
        ALTER TABLE items ADD COLUMN separation_tokens INTEGER;
        """,
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def session_usd(meta: Mapping[str, Any]) -> float:
    """USD the model-written session of a run cost (0 without one, or before sessions were priced)."""
    generation = meta.get("session_generation") or {}
    return float(generation.get("usd") or 0.0)


IMPORTED_KEY: Final = "imported"
"""The metadata key of a run folder made by ``rotscope import``: the file it came from."""


def imported_note(meta: Mapping[str, Any]) -> str | None:
    """What every view says of a run folder made by ``rotscope import`` (``None`` for a run rotscope
    ran): where its rows came from and what it lacks."""
    imported = meta.get(IMPORTED_KEY)
    if not imported:
        return None
    notes = ["no prompts, spans or verification"]
    if imported.get("unit") not in (None, "tokens"):
        notes.append(f"lengths in {imported['unit']}")
    if imported.get("binned_lengths"):
        notes.append("lengths binned to " + ", ".join(f"{edge:,}" for edge in imported["binned_lengths"]))
    return f"imported from {imported['source']} ({'; '.join(notes)})"


def recovered_variant(meta: Mapping[str, Any]) -> int | None:
    """The haystack variant of a row stored without one, from the run's stored config: 0 where the
    run had one haystack (a config from before ``filler.variants`` existed, or one variant asked or
    used), else ``None`` (unknown: intervals then cluster on the instance alone, as in an imported
    run, whose file says nothing of haystacks)."""
    if meta.get(IMPORTED_KEY):
        return None
    config = meta.get("config") or {}
    filler = config.get("filler") or {}
    corpus = meta.get("corpus") or {}
    if "variants" not in filler or filler.get("variants") == 1 or corpus.get("variants") == 1:
        return 0
    return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _column_defaults() -> dict[str, str]:
    """Each items column's SQL default as the migrations declare it (``NULL`` where none): what a
    read-only open of an older run gives for the columns that later migrations add."""
    with closing(sqlite3.connect(":memory:")) as db:
        for _name, script in MIGRATIONS:
            db.executescript(script)
        return {row[1]: row[4] or "NULL" for row in db.execute("PRAGMA table_info(items)")}


_COLUMN_DEFAULTS = _column_defaults()


class StoreMoved(BadInput):
    """The run store was removed or replaced while a run was writing it (exit 2)."""


def _inode(path: Path) -> tuple[int, int] | None:
    """The device and inode ``path`` leads to now; ``None`` when nothing is there."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """``path`` opened read-only (``mode=ro``): nothing is migrated or written. A WAL database in a
    folder nobody may write (a read-only mount) cannot get its shared-memory file, so it is opened
    as immutable, which is safe there: no writer can change it either."""
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as error:
        db.close()
        if error.sqlite_errorcode != sqlite3.SQLITE_CANTOPEN:
            raise
        if path.with_name(path.name + "-wal").exists():
            # Rows of a run killed before its log was folded in live in the -wal file, which an
            # immutable open ignores: refuse rather than show a run without its last rows.
            raise BadInput(
                f"{path}: on a read-only mount with an unmerged write-ahead log ({path.name}-wal); "
                "copy the folder somewhere writable to read it"
            ) from None
        db = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
    return db


class RunStore:
    """Read and write one run's ``run.db``; ``read_only`` opens it for the read commands (``show``,
    ``report``, ``export``, ``gate``): no migration, no journal-mode change, no write of any kind,
    and an older schema read as it is.

    A store opened for writing checks before each write that ``path`` still leads to the file it
    opened: a store removed or replaced meanwhile stops the run (``StoreMoved``) rather than let
    it write its results to a file no folder holds."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        if read_only:
            self._db = _connect_read_only(path)
        else:
            self._db = sqlite3.connect(path)
        self._opened = _inode(path)
        self._db.row_factory = sqlite3.Row
        try:
            if read_only:
                self._check_run_store()
            else:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
            self._tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master")}
            self._columns = {row[1] for row in self._db.execute("PRAGMA table_info(items)")}
        except BaseException:
            self._db.close()
            raise

    @classmethod
    def read(cls, run_dir: Path) -> RunStore:
        """The run store of ``run_dir``, read-only; ``BadInput`` naming the file when it is missing,
        empty, not SQLite, not a rotscope run store or from a newer rotscope. The file is left
        byte for byte as it was."""
        path = run_dir / "run.db"
        if not path.is_file():
            raise BadInput(f"{run_dir}: not a run folder (no run.db)")
        if path.stat().st_size == 0:
            raise BadInput(f"{path}: not a rotscope run store (an empty file)")
        try:
            return cls(path, read_only=True)
        except sqlite3.DatabaseError as error:
            raise BadInput(f"{path}: not a readable run store ({error})") from None

    @classmethod
    def open_existing(cls, run_dir: Path) -> RunStore:
        """The run store of ``run_dir`` for writing, migrated to this schema; checked read-only
        first, so a file that is no rotscope run store is refused untouched. Readers use ``read``."""
        cls.read(run_dir).close()
        try:
            return cls(run_dir / "run.db")
        except sqlite3.DatabaseError as error:
            raise BadInput(f"{run_dir / 'run.db'}: not a writable run store ({error})") from None

    def _check_run_store(self) -> None:
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = sorted({"items", "meta"} - tables)
        if missing:
            raise BadInput(f"{self.path}: not a rotscope run store (no {' or '.join(missing)} table)")
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise BadInput(f"{self.path}: written by a newer rotscope (schema {version} > {SCHEMA_VERSION})")

    def _migrate(self) -> None:
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise BadInput(f"{self.path}: written by a newer rotscope (schema {version} > {SCHEMA_VERSION})")
        for number, (_name, script) in enumerate(MIGRATIONS[version:], start=version + 1):
            # One transaction per migration (executescript commits before it runs, so the
            # statements and the new version go in one BEGIN...COMMIT): a kill or a full disk
            # midway leaves the previous schema, never half of the next.
            try:
                self._db.executescript(f"BEGIN;\n{script};\nPRAGMA user_version = {number};\nCOMMIT;")
            except sqlite3.Error:
                if self._db.in_transaction:
                    self._db.rollback()
                raise

    def close(self) -> None:
        self._db.close()

    def _check_in_place(self) -> None:
        if _inode(self.path) != self._opened:
            raise StoreMoved(
                f"{self.path}: removed or replaced while this run was writing it; the run stopped, so "
                "that no result goes to a file the folder no longer holds (the rows written before are "
                "in the file that was there)"
            )

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_meta(self, values: Mapping[str, Any]) -> None:
        self._check_in_place()
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(key, json.dumps(value)) for key, value in values.items()],
            )

    def meta(self) -> RunMeta:
        return cast(
            RunMeta,
            {row["key"]: json.loads(row["value"]) for row in self._db.execute("SELECT key, value FROM meta")},
        )

    def add_planned(self, rows: Iterable[Mapping[str, Any]], prompts: Mapping[str, str]) -> int:
        """Insert planned items (pending) that are not stored yet; returns how many were new."""
        self._check_in_place()
        created = _now()
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO prompts (prompt_digest, messages) VALUES (?, ?)",
                [(digest, zlib.compress(storable(text).encode("utf-8"))) for digest, text in prompts.items()],
            )
            before = self._db.total_changes
            self._db.executemany(
                f"INSERT OR IGNORE INTO items ({', '.join(PLANNED_COLUMNS)}, created_at) "
                f"VALUES ({', '.join('?' for _ in PLANNED_COLUMNS)}, ?)",
                [
                    (*(safe.get(key) for key in PLANNED_COLUMNS), created)
                    for safe in (storable_values(row) for row in rows)
                ],
            )
            return self._db.total_changes - before

    def unfinished(self) -> set[str]:
        """Model calls still to make: those with a pending or error row (errors are retried).
        A call is one prompt; its questions are rows that share its ``call_id``."""
        return {row[0] for row in self._db.execute("SELECT DISTINCT call_id FROM items WHERE status != 'ok'")}

    def calls_in_other_mode(self, mode: str | None) -> set[str]:
        """Finished calls whose engine ran in another mode than ``mode`` (none when ``None``)."""
        if mode is None:
            return set()
        cursor = self._db.execute(
            "SELECT DISTINCT call_id FROM items WHERE status = 'ok' AND engine_mode IS NOT NULL "
            "AND engine_mode != ?",
            (mode,),
        )
        return {row[0] for row in cursor}

    def calls(self) -> set[str]:
        """Every planned call (a prompt; its questions are rows sharing the ``call_id``)."""
        return {row[0] for row in self._db.execute("SELECT DISTINCT call_id FROM items")}

    def spent(self) -> float:
        """USD recorded so far (calls without a price count nothing): the rows' calls and the
        session the model wrote for the run (``session_generation`` in the metadata), if it did."""
        stored = self._db.execute("SELECT value FROM meta WHERE key = 'session_generation'").fetchone()
        return self.rows_spent() + (
            session_usd({"session_generation": json.loads(stored[0])}) if stored else 0.0
        )

    def rows_spent(self) -> float:
        """USD the rows' calls cost (calls without a price count nothing)."""
        return float(self._db.execute("SELECT COALESCE(SUM(cost), 0) FROM items").fetchone()[0])

    def record(self, results: Mapping[str, Mapping[str, Any]]) -> None:
        """Write the rows of one finished call (item id -> values) and commit at once, so a crash
        loses nothing that finished and never leaves half a call written. Text is stored whatever
        its code points (``storable``): a reply with a lone surrogate is a row, not a crash."""
        self._check_in_place()
        finished = _now()
        with self._db:
            for item_id, values in results.items():
                # ``cost`` adds up over attempts: a billed call that failed and was retried on
                # resume still counts against the run's budget.
                assignments = ", ".join(
                    "cost = CASE WHEN :cost IS NULL THEN cost ELSE COALESCE(cost, 0) + :cost END"
                    if key == "cost"
                    else f"{key} = :{key}"
                    for key in values
                )
                self._db.execute(
                    f"UPDATE items SET {assignments}, attempts = attempts + 1, finished_at = :finished_now "
                    "WHERE item_id = :row_item_id",
                    {**storable_values(values), "finished_now": finished, "row_item_id": item_id},
                )
                if values.get("answer_logprob") is not None:
                    self._fill_absent(item_id)

    def _fill_absent(self, item_id: str) -> None:
        """``absent_logprob``: the evidence-absent control's reading of the case's answer at the
        same length (the same trial where it has one), written into the case's rows when either
        of the two finishes second."""
        found = self._db.execute(
            "SELECT task, case_id, length_target, trial, answer_logprob FROM items WHERE item_id = ?",
            (item_id,),
        ).fetchone()
        if found is None:
            return
        task, case_id, length, trial, logprob = found
        if case_id.endswith(ABSENT_SUFFIX):
            base = case_id.removesuffix(ABSENT_SUFFIX)
            self._db.execute(
                "UPDATE items SET absent_logprob = ? WHERE task = ? AND case_id = ? AND length_target = ? "
                "AND (trial = ? OR absent_logprob IS NULL)",
                (logprob, task, base, length, trial),
            )
            return
        control = self._db.execute(
            "SELECT answer_logprob FROM items WHERE task = ? AND case_id = ? AND length_target = ? "
            "AND answer_logprob IS NOT NULL ORDER BY trial = ? DESC, trial LIMIT 1",
            (task, absent_case_id(case_id), length, trial),
        ).fetchone()
        if control is not None:
            self._db.execute("UPDATE items SET absent_logprob = ? WHERE item_id = ?", (control[0], item_id))

    def rows(self) -> list[Row]:
        """Every item row in plan order; a column this store's schema lacks (an older run opened
        read-only) has the value its migration would give: its default, else ``None``."""
        selected = ", ".join(
            name if name in self._columns else f"{_COLUMN_DEFAULTS[name]} AS {name}" for name in ITEM_COLUMNS
        )
        cursor = self._db.execute(f"SELECT {selected} FROM items ORDER BY plan_order")
        rows = [cast(Row, dict(row)) for row in cursor]
        if any(row["haystack_variant"] is None for row in rows):
            recovered = recovered_variant(self.meta())
            if recovered is not None:
                for row in rows:
                    if row["haystack_variant"] is None:
                        row["haystack_variant"] = recovered
        return rows

    def record_cache_check(self, check: Mapping[str, Any]) -> None:
        """Store one warm/cold comparison (see ``rotscope.execution.calls.cachecheck``)."""
        self._check_in_place()
        values = {**storable_values(check), "finished_at": _now()}
        with self._db:
            self._db.execute(
                f"INSERT OR REPLACE INTO cache_checks ({', '.join(values)}) "
                f"VALUES ({', '.join('?' for _ in values)})",
                tuple(values.values()),
            )

    def cache_checks(self) -> list[dict[str, Any]]:
        if "cache_checks" not in self._tables:  # an older run opened read-only
            return []
        return [
            dict(row) for row in self._db.execute("SELECT * FROM cache_checks ORDER BY finished_at, call_id")
        ]

    def prompt_messages(self, prompt_digest: str) -> list[dict[str, str]]:
        row = self._db.execute(
            "SELECT messages FROM prompts WHERE prompt_digest = ?", (prompt_digest,)
        ).fetchone()
        if row is None:
            raise KeyError(prompt_digest)
        loaded: list[dict[str, str]] = json.loads(zlib.decompress(row[0]).decode("utf-8"))
        return loaded
