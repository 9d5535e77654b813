"""A run folder: its one writer, its identity, the planned rows stored before the first call, and
the metadata that lets any command read the run back.

A run's store is created whole or not at all: it is made, migrated and filled (planned rows and
metadata) under a temporary name, ``.run.db.creating``, with the folder's ``config.yaml`` written
beside it, and renamed to ``run.db`` in one step. A kill at any byte before the rename leaves no
store, and the run starts again (a rerun, or ``--resume`` once its config.yaml was written); a
``run.db`` that a cut creation left (by an older rotscope, or emptied by hand: an empty file, one
without tables, or tables with nothing planned and nothing answered) counts as no store too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from rotscope._util.inside import open_own
from rotscope._util.resume_hint import resume_command
from rotscope._version import __version__
from rotscope.config.experiment import ExperimentConfig
from rotscope.errors import BadInput, OutputFailed, write_failure
from rotscope.execution.calls.execute import row_id
from rotscope.execution.state.identity import RUNTIME_FIELDS, config_digest
from rotscope.execution.state.lock import LOCK_FILE, STORE_FILE, RunLock, held
from rotscope.plan.rejections import REJECTIONS_FILE, detail_records
from rotscope.plan.workitems import Plan
from rotscope.prompt.separation import asked_tokens, fact_ids, measured_separation
from rotscope.rows import PlannedRow
from rotscope.store import RunStore
from rotscope.types import Rejection, WorkItem

__all__ = [
    "CONFIG_FILE",
    "CREATING",
    "PAIR_FILE",
    "RUNTIME_FIELDS",
    "SESSION_DIR",
    "SESSION_FILE",
    "STORE_FILE",
    "check_run_dir",
    "config_digest",
    "create_store",
    "creation_cut",
    "has_store",
    "only_leftovers",
    "store_plan",
    "write_config",
    "writing",
]

CONFIG_FILE = "config.yaml"
CREATING = ".run.db.creating"
"""The name a new store is made and filled under before it is renamed to ``run.db``."""
_SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database, by suffix."""
SQLITE_READONLY_ROLLBACK = 776
SESSION_DIR = "session"
"""Where a session the model writes itself is stored (``execution.workflows.self_session``); written before
``run.db``, so a folder holding only it is a run whose session was still being written."""
PAIR_FILE = "pair.json"
"""A paired session's record as written before a pair was a two-subject session (read, never written)."""
SESSION_FILE = "session.json"
"""A session's record (``--models``, ``--pair``), in the session folder above its subjects' run folders."""


@contextmanager
def writing(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir`` as its one writer for the body: create the folder if need be and take its
    lock (``RunFolderLocked`` when another run holds it) before any store is opened or migrated.

    A write that fails for a reason outside rotscope (disk full, read-only file system, permission
    denied) becomes ``OutputFailed``, one line; rows committed before it stay. When the body ends
    before a store was written (bad input in planning, a folder holding other files), the lock
    file and a folder this call created are removed again: a refused run leaves nothing behind.
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise BadInput(f"out: {run_dir} is a file, not a folder")
    created = not run_dir.exists()
    lock = RunLock(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        lock_created = not lock.path.exists()
        lock.acquire()
    except OSError as error:
        reason = write_failure(error)
        if reason is None:
            raise
        raise OutputFailed(f"out: cannot write {error.filename or run_dir} ({reason})") from None
    try:
        _settle(run_dir)
        yield
    except (sqlite3.OperationalError, OSError) as error:
        reason = write_failure(error)
        if reason is None:
            raise
        raise OutputFailed(_failure_line(run_dir, error, reason)) from None
    finally:
        unused = not (run_dir / STORE_FILE).exists()
        lock.release(remove=unused and lock_created)
        if unused and created:
            _remove_if_empty(run_dir)


def has_store(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a store (whole, or anything else at ``run.db`` that is not what a
    cut creation leaves: the readers say what is wrong with it)."""
    path = run_dir / STORE_FILE
    return path.exists() and not _unstarted(path)


def creation_cut(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds what a store creation cut short leaves: a store under its
    temporary name, or a ``run.db`` nothing was planned or answered in."""
    path = run_dir / STORE_FILE
    return (run_dir / CREATING).exists() or (path.exists() and _unstarted(path))


def _unstarted(path: Path) -> bool:
    """Whether the database at ``path`` is one whose creation never finished: empty, without
    tables, or rotscope's tables without the run's metadata and without an answered row. A hot
    rollback journal (a write that never finished, before the store was ever in WAL mode) counts
    too; ``writing`` rolls it back under the lock before anything is decided."""
    if path.stat().st_size == 0:
        return True
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not tables:
                return True
            if not {"items", "meta"} <= tables:
                return False
            planned = db.execute("SELECT 1 FROM meta WHERE key = 'config_digest'").fetchone()
            answered = db.execute("SELECT 1 FROM items WHERE status != 'pending' LIMIT 1").fetchone()
            return planned is None and answered is None
    except sqlite3.DatabaseError as error:
        return error.sqlite_errorcode == SQLITE_READONLY_ROLLBACK


def _settle(run_dir: Path) -> None:
    """Roll back an unfinished write of ``run.db`` left in a hot rollback journal, as SQLite's
    next writer would, so the store is judged as it is (called under the lock)."""
    path = run_dir / STORE_FILE
    if not path.with_name(STORE_FILE + "-journal").exists():
        return
    with suppress(sqlite3.DatabaseError), closing(sqlite3.connect(path)) as db:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()


def _remove_database(path: Path) -> None:
    for name in (path.name, *(path.name + suffix for suffix in _SIDE_FILES)):
        path.with_name(name).unlink(missing_ok=True)


def write_config(run_dir: Path, text: str) -> None:
    """Write ``config.yaml`` whole or not at all (a temporary file renamed into place)."""
    temporary = run_dir / f".{CONFIG_FILE}.writing"
    temporary.unlink(missing_ok=True)  # a leftover, or a link planted there: never written through
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, run_dir / CONFIG_FILE)


def write_rejections(run_dir: Path, rejections: list[Rejection]) -> None:
    """``rejections.jsonl``: every prompt the verifier rejected, one JSON line each with its cause
    and layout in words, the case ids and the verifier's full reason (every placement retry); a
    plan without rejections leaves none (and removes one a previous plan of the folder wrote)."""
    path = run_dir / REJECTIONS_FILE
    if not rejections:
        path.unlink(missing_ok=True)
        return
    temporary = run_dir / f".{REJECTIONS_FILE}.writing"
    with os.fdopen(open_own(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w", encoding="utf-8") as out:
        for record in detail_records(rejections):
            out.write(json.dumps(record, sort_keys=True) + "\n")
    os.replace(temporary, path)


def create_store(run_dir: Path, fill: Callable[[RunStore], None], config_text: str) -> RunStore:
    """A new ``run.db`` for ``run_dir`` (called under its lock), made whole before it appears:
    created, migrated and ``fill``-ed under ``CREATING``, with ``config_text`` written as the
    folder's config.yaml, then synced and renamed into place. What a creation cut short left is
    discarded first; a failure here removes what this call wrote. Returns the store, open."""
    temporary = run_dir / CREATING
    if creation_cut(run_dir) or temporary.is_symlink():  # a link there would carry the store elsewhere
        _remove_database(temporary)
        _remove_database(run_dir / STORE_FILE)
    had_config = (run_dir / CONFIG_FILE).exists()
    try:
        with RunStore(temporary) as store:
            fill(store)
        # closing the only connection folded the write-ahead log into the file: it is whole alone
        if any(temporary.with_name(CREATING + suffix).exists() for suffix in ("-wal", "-journal")):
            raise OSError(f"{temporary}: SQLite kept a log beside the new store")
        write_config(run_dir, config_text)
        _sync(temporary)
        lock = held(run_dir)
        if lock is not None:
            lock.hold_store(temporary)  # the same inode once renamed: never a moment unlocked
        os.replace(temporary, run_dir / STORE_FILE)
        _sync(run_dir)
    except BaseException:
        _remove_database(temporary)
        if not had_config:
            (run_dir / CONFIG_FILE).unlink(missing_ok=True)
        raise
    return RunStore(run_dir / STORE_FILE)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _failure_line(run_dir: Path, error: BaseException, reason: str) -> str:
    target = getattr(error, "filename", None) or run_dir
    if not (run_dir / STORE_FILE).is_file():
        return f"out: cannot write {target} ({reason})"
    return (
        f"{target}: {reason} ({error}); the rows finished before it are kept in {run_dir}; "
        f"once fixed, continue with: {resume_command(run_dir)}"
    )


def _remove_if_empty(run_dir: Path) -> None:
    with suppress(OSError):  # another process put something there meanwhile: leave it
        run_dir.rmdir()


def default_run_dir(config: ExperimentConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.name}-{stamp}"


def planned_rows(item: WorkItem, order: int, run_id: str, backend: str) -> list[PlannedRow]:
    """One row per question of the call (a single question is a call of its own)."""
    prompt = item.prompt
    spans = [{**span.__dict__, **_evidence_fields(item, span.evidence_id)} for span in prompt.spans]
    separated = _separation_fields(item)
    rows: list[PlannedRow] = []
    for label, part in item.case.scored_parts():
        prefix = f"{part.case_id}/" if item.case.parts else ""
        # a question at a depth of its own is counted in that depth's cell, its prompt one cluster
        depth, position = (
            part.at_depth if part.at_depth and not part.control else (item.layout.depth, item.layout.position)
        )
        rows.append(
            {
                "item_id": row_id(item, label),
                "call_id": item.item_id,
                "run_id": run_id,
                "plan_order": order,
                "task": part.task,
                "case_id": part.case_id,
                "instance_id": item.instance_id,
                "haystack_variant": item.haystack_variant,
                "control": int(part.control),
                "model": item.model,
                "backend": backend,
                "length_target": item.layout.length_tokens,
                "prompt_tokens": prompt.prompt_tokens,
                "haystack_tokens": prompt.haystack_tokens,
                "depth": depth,
                "position": position,
                "filler": item.layout.filler,
                "spans": json.dumps([span for span in spans if span["evidence_id"].startswith(prefix)]),
                "trial": item.trial,
                "seed": item.params.seed,
                "prompt_digest": prompt_digest(item),
                "question": part.question,
                "expected": "not in the context" if part.oracle.abstain else part.oracle.answer,
                "slices": json.dumps(dict(part.slices), sort_keys=True),
                "fault": item.fault,
                "evidence_lost": None
                if item.fault is None
                else json.dumps([e for e in item.evidence_lost if e.startswith(prefix)]),
                **separated,
            }
        )
    return rows


class _Separated(TypedDict, total=False):
    separation: int | float | None
    separation_asked: int | None
    separation_tokens: int | None


def _separation_fields(item: WorkItem) -> _Separated:
    """The row's separation columns (``placement.separations``): none without the axis."""
    separation = item.layout.separation
    if separation is None:
        return {}
    prompt = item.prompt
    return {
        "separation": separation,
        "separation_asked": asked_tokens(separation, prompt.haystack_tokens),
        "separation_tokens": measured_separation(prompt.spans, fact_ids(item.case)),
    }


def _evidence_fields(item: WorkItem, evidence_id: str) -> dict[str, str]:
    evidence = next(e for e in item.case.evidence if e.evidence_id == evidence_id)
    fields = {"text": evidence.text, "role": evidence.role}
    if evidence.source is not None:
        fields["source"] = evidence.source  # a line already in this corpus document, not inserted
    return fields


def prompt_digest(item: WorkItem) -> str:
    return hashlib.sha256(item.prompt.text.encode("utf-8")).hexdigest()[:24]


def check_run_dir(run_dir: Path, digest: str, resume: bool) -> None:
    """A fresh run goes into a new or empty folder (its lock file aside, and what a store creation
    cut short left, which the run replaces); called under the lock."""
    if resume:
        return
    if has_store(run_dir):
        with RunStore.read(run_dir) as store:
            stored = store.meta().get("config_digest")
        if stored != digest:
            raise BadInput(f"out: {run_dir} holds a different run; choose another --out")
        raise BadInput(f"out: {run_dir} holds this run already; continue it with {resume_command(run_dir)}")
    if not only_leftovers(run_dir, also=(SESSION_DIR,)):
        raise BadInput(f"out: {run_dir} is not empty and holds no rotscope run")


def only_leftovers(run_dir: Path, *, also: tuple[str, ...] = ()) -> bool:
    """Whether ``run_dir`` is absent or holds nothing but its lock, what a store creation cut short
    left (which ``create_store`` replaces) and the names in ``also``: a folder a new store may go
    into, as a kill at any moment of a creation leaves it."""
    ours = {LOCK_FILE, f".{CONFIG_FILE}.writing", *_family(CREATING), *also}
    if creation_cut(run_dir):
        ours |= {CONFIG_FILE, *_family(STORE_FILE)}
    return not run_dir.exists() or all(path.name in ours for path in run_dir.iterdir())


def _family(name: str) -> tuple[str, ...]:
    return (name, *(name + suffix for suffix in _SIDE_FILES))


def store_plan(
    store: RunStore,
    plan: Plan,
    ordered: list[WorkItem],
    config: ExperimentConfig,
    run_dir: Path,
    digest: str,
    order: str,
) -> None:
    backend_name = plan.backend.get("backend", "")
    store.add_planned(
        (
            row
            for order, item in enumerate(ordered)
            for row in planned_rows(item, order, run_dir.name, backend_name)
        ),
        {prompt_digest(item): json.dumps(item.prompt.messages) for item in plan.items},
    )
    store.set_meta(
        {
            "run_id": run_dir.name,
            "rotscope_version": __version__,
            "config": config.model_dump(mode="json"),
            "config_digest": digest,
            "model": plan.items[0].model if plan.items else config.model,
            "backend": plan.backend,
            "corpus": plan.corpus,
            "rejected": plan.rejected,
            "rejections": [dataclasses.asdict(rejection) for rejection in plan.rejections],
            "tokens": {"naive_prefill": plan.naive_prefill, "lower_bound": plan.lower_bound},
            "order": order,
        }
    )
