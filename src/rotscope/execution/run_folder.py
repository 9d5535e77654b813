"""A run folder: its one writer, its identity, the planned rows stored before the first call, and
the metadata that lets any command read the run back."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rotscope._version import __version__
from rotscope.config import ExperimentConfig
from rotscope.errors import BadInput, OutputFailed, write_failure
from rotscope.execution.execute import row_id
from rotscope.execution.identity import RUNTIME_FIELDS, config_digest
from rotscope.execution.lock import LOCK_FILE, RunLock
from rotscope.plan.workitems import Plan
from rotscope.store import RunStore
from rotscope.types import WorkItem

__all__ = [
    "CONFIG_FILE",
    "PAIR_FILE",
    "RUNTIME_FIELDS",
    "SESSION_DIR",
    "STORE_FILE",
    "check_run_dir",
    "config_digest",
    "store_plan",
    "writing",
]

CONFIG_FILE = "config.yaml"
STORE_FILE = "run.db"
SESSION_DIR = "session"
"""Where a session the model writes itself is stored (``execution.self_session``); written before
``run.db``, so a folder holding only it is a run whose session was still being written."""
PAIR_FILE = "pair.json"
"""A paired session's record, in the session folder above its two subjects' run folders."""


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


def _failure_line(run_dir: Path, error: BaseException, reason: str) -> str:
    target = getattr(error, "filename", None) or run_dir
    if not (run_dir / STORE_FILE).is_file():
        return f"out: cannot write {target} ({reason})"
    return (
        f"{target}: {reason} ({error}); the rows finished before it are kept in {run_dir}; "
        f"once fixed, continue with: rotscope run --resume {run_dir}"
    )


def _remove_if_empty(run_dir: Path) -> None:
    with suppress(OSError):  # another process put something there meanwhile: leave it
        run_dir.rmdir()


def default_run_dir(config: ExperimentConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.name}-{stamp}"


def planned_rows(item: WorkItem, order: int, run_id: str, backend: str) -> list[dict[str, Any]]:
    """One row per question of the call (a single question is a call of its own)."""
    prompt = item.prompt
    spans = [{**span.__dict__, **_evidence_fields(item, span.evidence_id)} for span in prompt.spans]
    rows = []
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
            }
        )
    return rows


def _evidence_fields(item: WorkItem, evidence_id: str) -> dict[str, str]:
    evidence = next(e for e in item.case.evidence if e.evidence_id == evidence_id)
    fields = {"text": evidence.text, "role": evidence.role}
    if evidence.source is not None:
        fields["source"] = evidence.source  # a line already in this corpus document, not inserted
    return fields


def prompt_digest(item: WorkItem) -> str:
    return hashlib.sha256(item.prompt.text.encode("utf-8")).hexdigest()[:24]


def check_run_dir(run_dir: Path, digest: str, resume: bool) -> None:
    """A fresh run goes into a new or empty folder (its lock file aside); called under the lock."""
    database = run_dir / STORE_FILE
    if resume:
        return
    if database.exists():
        with RunStore.read(run_dir) as store:
            stored = store.meta().get("config_digest")
        if stored != digest:
            raise BadInput(f"out: {run_dir} holds a different run; choose another --out")
        raise BadInput(
            f"out: {run_dir} holds this run already; continue it with rotscope run --resume {run_dir}"
        )
    if run_dir.exists() and any(path.name not in (LOCK_FILE, SESSION_DIR) for path in run_dir.iterdir()):
        raise BadInput(f"out: {run_dir} is not empty and holds no rotscope run")


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
